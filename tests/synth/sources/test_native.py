"""switchyard JSONL reader/writer: round trip, image import, bad lines, and throughput on 10k records."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sources_helpers import FIXTURES, png_bytes, split

from synth.images import ImageStore
from synth.schema import Trajectory
from synth.sources.agentnet import read_agentnet
from synth.sources.common import NativeSourceConfig
from synth.sources.native import read_native, write_native


@pytest.fixture
def ingested(store) -> list[Trajectory]:
    kept, _ = split(list(read_agentnet(FIXTURES / "agentnet" / "agentnet_sample.jsonl", store)))
    kept += split(list(read_agentnet(FIXTURES / "agentnet" / "bench", store)))[0]
    assert len(kept) == 3
    return kept


def test_round_trip(tmp_path: Path, store, ingested):
    path = tmp_path / "out" / "records.jsonl"
    assert write_native(ingested, path) == 3
    back = list(read_native(path, store))
    assert back == ingested
    assert not list(tmp_path.joinpath("out").glob(".*tmp*")), "the temporary file must be renamed away"


def test_write_native_refuses_rejects(tmp_path: Path, ingested):
    from synth.sources.common import rejected

    with pytest.raises(TypeError):
        write_native([ingested[0], rejected("x", "malformed_record", "")], tmp_path / "r.jsonl")
    assert not (tmp_path / "r.jsonl").exists()


def test_images_are_checked_and_imported_from_image_dir(tmp_path: Path, store, ingested):
    path = tmp_path / "records.jsonl"
    write_native(ingested, path)
    fresh = ImageStore(tmp_path / "fresh")
    # not in the fresh store and nowhere to import from: every record is rejected for its first screenshot
    kept, rejected = split(list(read_native(path, fresh)))
    assert kept == [] and {(r.reason, r.step_index) for r in rejected} == {("missing_image", 0)}
    assert {r.record_id for r in rejected} == {t.id for t in ingested}
    # importing from the first store copies the exact bytes
    kept, rejected = split(
        list(read_native(NativeSourceConfig(path=str(path), image_dir=str(store.root)), fresh))
    )
    assert kept == ingested and rejected == []
    ref = ingested[0].steps[0].screenshot
    assert fresh.get(ref) == store.get(ref)


def test_bad_lines_each_end_as_one_reject(tmp_path: Path, store, ingested):
    good, other, third = ingested
    missing = good.model_copy(deep=True, update={"id": "missing-image"})
    missing.steps[2].screenshot = missing.steps[2].screenshot.model_copy(update={"sha256": "ab" * 32})
    lines = [
        good.to_json(),
        "{not json",
        '{"id": "only-an-id"}',
        missing.to_json(),
        "",
        other.to_json().replace('"mode":"gui"', '"mode":"telepathy"'),
        third.to_json(),
    ]
    path = tmp_path / "shard.jsonl"
    path.write_text("\n".join(lines) + "\n")
    results = list(read_native(path, store))
    kept, rejected = split(results)
    assert len(results) == 6
    assert [t.id for t in kept] == [good.id, third.id]
    assert [(r.record_id, r.reason, r.step_index) for r in rejected] == [
        ("shard.jsonl:2", "malformed_record", None),
        ("shard.jsonl:3", "malformed_record", None),
        ("missing-image", "missing_image", 2),
        ("shard.jsonl:6", "malformed_record", None),
    ]
    assert "mode" in rejected[3].detail
    assert rejected[2].detail.startswith("shard.jsonl:4: step 2 screenshot")


def test_corrupt_image_in_import_folder(tmp_path: Path, store, ingested):
    path = tmp_path / "records.jsonl"
    write_native(ingested[:1], path)
    flat = tmp_path / "flat"
    flat.mkdir()
    for step in ingested[0].steps:
        (flat / f"{step.screenshot.sha256}.png").write_bytes(store.get(step.screenshot))
    sha1 = ingested[0].steps[1].screenshot.sha256
    (flat / f"{sha1}.png").write_bytes(b"\x89PNG\r\n\x1a\nbroken")
    cfg = NativeSourceConfig(path=str(path), image_dir=str(flat))
    (result,) = read_native(cfg, ImageStore(tmp_path / "a"))
    # first met as step 0's next_screenshot (the frame after step 0 is step 1's screenshot)
    assert (result.reason, result.step_index) == ("corrupt_image", 0)
    assert "step 0 next_screenshot" in result.detail
    # a decodable image under the wrong name is corrupt too: it is not the referenced screenshot
    (flat / f"{sha1}.png").write_bytes(png_bytes(shade=200))
    (result,) = read_native(cfg, ImageStore(tmp_path / "b"))
    assert (result.reason, result.step_index) == ("corrupt_image", 0) and "hashes to" in result.detail


def test_ten_thousand_trajectories_ingest_in_seconds(tmp_path: Path, store, ingested):
    template = ingested[0]
    steps = [s.model_copy(update={"index": i}) for i, s in enumerate(template.steps * 3)]  # 12 steps
    base = template.model_copy(update={"steps": steps})
    records = (base.model_copy(update={"id": f"traj-{i:05d}"}) for i in range(10_000))
    path = tmp_path / "big.jsonl"

    started = time.perf_counter()
    assert write_native(records, path) == 10_000
    wrote = time.perf_counter() - started
    started = time.perf_counter()
    kept = sum(1 for r in read_native(path, store) if isinstance(r, Trajectory))
    read = time.perf_counter() - started

    assert kept == 10_000
    print(
        f"\nnative: 10k trajectories x 12 steps, {path.stat().st_size / 1e6:.1f} MB: "
        f"write {wrote:.2f} s, read+validate+image check {read:.2f} s"
    )
    # generous bound for a shared 2-core machine; measured ~1-2 s
    assert read < 20
