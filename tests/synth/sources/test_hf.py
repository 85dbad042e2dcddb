"""Hugging Face reader on local folder datasets: switchyard shape (incl. synth.publish output), AgentNet shape,
bad rows, and a run under HF_HUB_OFFLINE=1 in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from sources_helpers import FIXTURES, png_bytes, split

from synth.images import ImageStore
from synth.schema import Trajectory
from synth.sources.agentnet import read_agentnet
from synth.sources.common import HFSourceConfig, OSWorldSourceConfig
from synth.sources.hf import read_hf
from synth.sources.osworld import read_osworld

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def ingested(store) -> list[Trajectory]:
    kept, _ = split(list(read_agentnet(FIXTURES / "agentnet" / "agentnet_sample.jsonl", store)))
    cfg = OSWorldSourceConfig(
        path=str(FIXTURES / "osworld" / "results"), examples_dir=str(FIXTURES / "osworld" / "examples")
    )
    kept += split(list(read_osworld(cfg, store)))[0]
    assert len(kept) == 4
    return kept


def _switchyard_row(traj: Trajectory, store: ImageStore) -> dict:
    shots = [{"bytes": store.get(s.screenshot), "path": None} for s in traj.steps if s.screenshot is not None]
    return {"record": traj.to_json(), "images": shots}


SWITCHYARD_FEATURES = datasets.Features(
    {"record": datasets.Value("string"), "images": datasets.List(datasets.Image())}
)


def _to_folder(rows: list[dict], folder: Path, features: datasets.Features | None = None) -> Path:
    (folder / "data").mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(
        str(folder / "data" / "train-00000.parquet")
    )
    return folder


def _check_round_trip(
    back: list[Trajectory], original: list[Trajectory], fresh: ImageStore, *, exact: bool = False
) -> None:
    assert [t.id for t in back] == [t.id for t in original]
    for got, want in zip(back, original, strict=True):
        last = want.steps[-1].next_screenshot
        if exact or last is None or any(s.screenshot == last for s in want.steps):
            assert got == want
        else:
            # the final frame is not among the published screenshots: cleared, hash kept
            assert got.steps[-1].next_screenshot is None
            assert got.steps[-1].metadata["unpublished_next_screenshot"] == last.sha256
            assert got.steps[:-1] == want.steps[:-1]
        for step in got.steps:
            for ref in (step.screenshot, step.next_screenshot):
                assert ref is None or ref in fresh


def test_switchyard_shape_from_a_local_parquet_folder(tmp_path: Path, store, ingested):
    folder = _to_folder([_switchyard_row(t, store) for t in ingested], tmp_path / "ds", SWITCHYARD_FEATURES)
    fresh = ImageStore(tmp_path / "fresh")
    results = list(read_hf(HFSourceConfig(path=str(folder), cache_dir=str(tmp_path / "cache")), fresh))
    back, rejected = split(results)
    assert rejected == []
    _check_round_trip(back, ingested, fresh)
    ref = ingested[0].steps[0].screenshot
    assert fresh.get(ref) == store.get(ref), "image bytes must arrive unchanged"


def test_reads_what_synth_publish_writes(tmp_path: Path, store, ingested):
    publish = pytest.importorskip("synth.publish")
    publish.publish_dataset(ingested, [], store, tmp_path / "published", publish.PublishConfig())
    fresh = ImageStore(tmp_path / "fresh")
    cfg = HFSourceConfig(
        path=str(tmp_path / "published"), name="trajectories", cache_dir=str(tmp_path / "cache")
    )
    back, rejected = split(list(read_hf(cfg, fresh)))
    assert rejected == []
    # synth.publish ships every frame, next screenshots included: the records come back identical
    _check_round_trip(back, ingested, fresh, exact=True)


def test_agentnet_shape_with_file_names_and_with_image_columns(tmp_path: Path, store):
    raw = [
        json.loads(line)
        for line in (FIXTURES / "agentnet" / "agentnet_sample.jsonl").read_text().splitlines()
    ]
    expected, _ = split(list(read_agentnet(FIXTURES / "agentnet" / "agentnet_sample.jsonl", store)))

    by_name = _to_folder(raw, tmp_path / "by_name")
    cfg = HFSourceConfig(
        path=str(by_name), image_dir=str(FIXTURES / "agentnet" / "images"), cache_dir=str(tmp_path / "cache")
    )
    got, rejected = split(list(read_hf(cfg, ImageStore(tmp_path / "a"))))
    assert rejected == []
    assert [t.steps for t in got] == [t.steps for t in expected]
    assert [t.id for t in got] == [t.id for t in expected]

    # the same records with the screenshots as an `images` Image list aligned with `traj`
    rows = []
    for record in raw:
        shots = [
            {"bytes": (FIXTURES / "agentnet" / "images" / s["image"]).read_bytes(), "path": None}
            for s in record["traj"]
        ]
        rows.append({**record, "images": shots})
    features = datasets.Dataset.from_list(raw).features.copy()
    features["images"] = datasets.List(datasets.Image())
    with_bytes = _to_folder(rows, tmp_path / "with_bytes", features)
    got, rejected = split(
        list(
            read_hf(
                HFSourceConfig(path=str(with_bytes), cache_dir=str(tmp_path / "cache")),
                ImageStore(tmp_path / "b"),
            )
        )
    )
    assert rejected == []
    assert [t.steps for t in got] == [t.steps for t in expected]


def test_bad_rows_each_end_as_one_reject(tmp_path: Path, store, ingested):
    good = _switchyard_row(ingested[0], store)
    corrupt = _switchyard_row(ingested[1], store)
    corrupt["images"][1] = {"bytes": b"\x89PNG\r\n\x1a\nbroken", "path": None}
    missing = _switchyard_row(ingested[2], store)
    missing["images"] = missing["images"][:1]  # OSWorld run: steps 1 and 2 have screenshots, step 0 none
    not_json = {"record": "{truncated", "images": []}
    bad_action = json.loads(ingested[3].to_json())
    bad_action["steps"][0]["action"] = {"type": "gui", "ops": [{"op": "frobnicate"}]}
    invalid = {"record": json.dumps(bad_action), "images": []}
    folder = _to_folder([good, corrupt, missing, not_json, invalid], tmp_path / "bad", SWITCHYARD_FEATURES)

    results = list(
        read_hf(
            HFSourceConfig(path=str(folder), cache_dir=str(tmp_path / "cache")), ImageStore(tmp_path / "f")
        )
    )
    kept, rejected = split(results)
    assert len(results) == 5
    assert [t.id for t in kept] == [ingested[0].id]
    assert [(r.reason, r.step_index) for r in rejected] == [
        ("corrupt_image", 1),
        ("missing_image", 2),
        ("malformed_record", None),
        ("malformed_record", None),
    ]
    assert rejected[0].record_id == ingested[1].id
    assert rejected[2].record_id.endswith("row 3") and "row 3" in rejected[2].detail

    # AgentNet-shaped rows go through the AgentNet conversion and its reasons
    rows = [
        {
            "task_id": "ok",
            "instruction": "x",
            "traj": [{"index": 0, "image": "a.png", "value": {"code": "pyautogui.click(x=0.1, y=0.2)"}}],
        },
        {
            "task_id": "frob",
            "instruction": "x",
            "traj": [{"index": 0, "image": "a.png", "value": {"code": "pyautogui.frobnicate(1)"}}],
        },
        {
            "task_id": "far",
            "instruction": "x",
            "traj": [{"index": 0, "image": "a.png", "value": {"code": "pyautogui.click(x=1.7, y=0.2)"}}],
        },
        {
            "task_id": "gone",
            "instruction": "x",
            "traj": [{"index": 0, "image": "gone.png", "value": {"code": "pyautogui.click(x=0.1, y=0.2)"}}],
        },
        {"task_id": "empty", "instruction": "x", "traj": []},
    ]
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(png_bytes())
    folder = _to_folder(rows, tmp_path / "agentnet_bad")
    cfg = HFSourceConfig(
        path=str(folder), image_dir=str(tmp_path / "imgs"), cache_dir=str(tmp_path / "cache")
    )
    kept, rejected = split(list(read_hf(cfg, ImageStore(tmp_path / "g"))))
    assert [t.source.record_id for t in kept] == ["ok"]
    assert {r.record_id: r.reason for r in rejected} == {
        "frob": "unparsable_action",
        "far": "coordinate_out_of_range",
        "gone": "missing_image",
        "empty": "empty_trajectory",
    }


def test_offline_in_a_fresh_interpreter(tmp_path: Path, store, ingested):
    folder = _to_folder([_switchyard_row(t, store) for t in ingested], tmp_path / "ds", SWITCHYARD_FEATURES)
    script = (
        "import sys\n"
        "from synth.images import ImageStore\n"
        "from synth.sources.common import HFSourceConfig\n"
        "from synth.sources.hf import read_hf\n"
        "import huggingface_hub.constants as c\n"
        "assert c.HF_HUB_OFFLINE\n"
        "cfg = HFSourceConfig(path=sys.argv[1], cache_dir=sys.argv[2], limit=3)\n"
        "print(sum(1 for r in read_hf(cfg, ImageStore(sys.argv[3])) if type(r).__name__ == 'Trajectory'))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", script, str(folder), str(tmp_path / "cache"), str(tmp_path / "fresh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "3"
