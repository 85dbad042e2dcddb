"""Run directories: stage shards, rejects, manifests written last, resume after a kill, reports."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import BaseModel, Field

from synth.runs import RunDir, StageNotFinished, content_key, stage_key, write_report
from synth.schema import CliAction, Control, Rejected, Screen, Source, Step, Trajectory


class _Cfg(BaseModel):
    threshold: float = Field(default=0.5, description="test knob")


def _traj(i: int) -> Trajectory:
    return Trajectory(
        id=f"t{i}",
        source=Source(dataset="test", record_id=str(i)),
        instruction=f"task {i}",
        screen=Screen(width=1920, height=1080),
        mode="cli",
        steps=[
            Step(index=0, action=CliAction(command=f"echo {i}")),
            Step(index=1, action=Control(kind="terminate", value="success")),
        ],
    )


def _results(n: int, reject_every: int = 4):
    """n inputs; every `reject_every`-th is rejected (alternating reasons), the rest pass."""
    for i in range(n):
        if i % reject_every == 0:
            yield Rejected(record_id=f"t{i}", stage="s", reason="bad_a" if i % 8 == 0 else "bad_b")
        else:
            yield _traj(i)


class _Killed(Exception):
    pass


def _killed_after(results, n: int):
    for k, r in enumerate(results):
        if k == n:
            raise _Killed
        yield r


def test_write_and_read_back_with_shards_and_counts(tmp_path):
    run = RunDir(tmp_path / "run")
    m = run.write_stage("ingest", _results(20), key="k1", shard_size=4)

    expected = [r for r in _results(20) if isinstance(r, Trajectory)]
    assert [t.id for t in run.read_stage("ingest")] == [t.id for t in expected]
    assert list(run.read_stage("ingest")) == expected
    assert m.records_out == 15 and m.records_in == 20 and m.records_rejected == 5
    assert m.rejected_by_reason == {"bad_a": 3, "bad_b": 2}
    assert [s.records for s in m.shards] == [4, 4, 4, 3]
    files = sorted(p.name for p in (tmp_path / "run" / "ingest").iterdir())
    assert files == [
        "manifest.json",
        "rejects.jsonl",
        "shard-00000.jsonl",
        "shard-00001.jsonl",
        "shard-00002.jsonl",
        "shard-00003.jsonl",
    ]
    for s in m.shards:
        data = (tmp_path / "run" / "ingest" / s.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == s.sha256 and len(data) == s.bytes
    assert [r.record_id for r in run.read_rejects("ingest")] == ["t0", "t4", "t8", "t12", "t16"]
    assert run.manifest("ingest") == m
    assert m.started_at <= m.finished_at


def test_is_finished_requires_manifest_with_same_key(tmp_path):
    run = RunDir(tmp_path)
    assert not run.is_finished("s", "k1")
    run.write_stage("s", _results(3), key="k1")
    assert run.is_finished("s", "k1")
    assert not run.is_finished("s", "k2")


def test_killed_run_leaves_no_manifest_and_rerun_does_not_duplicate(tmp_path):
    run = RunDir(tmp_path)
    with pytest.raises(_Killed):
        run.write_stage("s", _killed_after(_results(30), 17), key="k", shard_size=5)
    assert not run.is_finished("s", "k")
    with pytest.raises(StageNotFinished):
        list(run.read_stage("s"))
    # committed shards from the killed attempt are on disk, but no temp files are left behind
    assert not [p for p in (tmp_path / "s").iterdir() if ".tmp" in p.name]

    m = run.write_stage("s", _results(30), key="k", shard_size=5)
    ids = [t.id for t in run.read_stage("s")]
    assert len(ids) == len(set(ids)) == m.records_out == 22
    assert sum(1 for _ in run.read_rejects("s")) == 8
    # raw files agree with the manifest: no stray shard survived from the killed attempt
    lines = sum(
        len((tmp_path / "s" / p.name).read_text().splitlines()) for p in (tmp_path / "s").glob("shard-*")
    )
    assert lines == 22


def test_finished_stage_is_skipped_without_consuming_input(tmp_path):
    run = RunDir(tmp_path)
    first = run.write_stage("s", _results(6), key="k")
    consumed = []

    def spy():
        for r in _results(6):
            consumed.append(r)
            yield r

    again = run.write_stage("s", spy(), key="k")
    assert consumed == [] and again == first
    redone = run.write_stage("s", spy(), key="k2")
    assert len(consumed) == 6 and redone.key == "k2"


def test_new_key_replaces_old_output(tmp_path):
    run = RunDir(tmp_path)
    run.write_stage("s", _results(40), key="old", shard_size=3)
    run.write_stage("s", _results(5), key="new", shard_size=3)
    assert [t.id for t in run.read_stage("s")] == ["t1", "t2", "t3"]
    assert sorted(p.name for p in (tmp_path / "s").glob("shard-*")) == ["shard-00000.jsonl"]


def test_fsspec_memory_url_roundtrip():
    run = RunDir("memory://switchyard-test-run")
    m = run.write_stage("ingest", _results(9), key="k", shard_size=2)
    assert run.is_finished("ingest", "k")
    assert [t.id for t in run.read_stage("ingest")] == [f"t{i}" for i in range(9) if i % 4]
    assert m.records_out == 6
    with pytest.raises(ValueError, match="images_root"):
        _ = run.images
    run.fs.rm(run.root, recursive=True)


def test_local_run_has_image_store_under_root(tmp_path):
    run = RunDir(tmp_path)
    assert run.images.root == tmp_path / "images"


def test_stage_key_changes_with_each_part():
    base = stage_key("in", _Cfg(), "1")
    assert base == stage_key("in", _Cfg(), "1")
    assert (
        len(
            {
                base,
                stage_key("in2", _Cfg(), "1"),
                stage_key("in", _Cfg(threshold=0.7), "1"),
                stage_key("in", _Cfg(), "2"),
            }
        )
        == 4
    )
    assert content_key("ab", "c") != content_key("a", "bc")


def test_output_key_tracks_shard_content(tmp_path):
    run = RunDir(tmp_path)
    a = run.write_stage("a", _results(6), key="k").output_key
    b = run.write_stage("b", _results(6), key="k").output_key
    c = run.write_stage("c", _results(7), key="k").output_key
    assert a == b != c


def test_report_lists_counts_reasons_and_unfinished_stages(tmp_path):
    run = RunDir(tmp_path)
    run.write_stage("ingest", _results(16), key="k")
    run.write_stage("verify", (r for r in _results(3) if isinstance(r, Trajectory)), key="k")
    text = write_report(run, ["ingest", "verify", "publish"])
    assert text == (tmp_path / "report.md").read_text()
    stage_table = text.split("## Reject reasons")[0]
    rows = {line.split("|")[1].strip(): line for line in stage_table.splitlines() if line.startswith("| ")}
    assert "| 16 | 12 | 4 |" in rows["ingest"]
    assert "| 2 | 2 | 0 |" in rows["verify"]
    assert "not finished" in rows["publish"]
    assert "| ingest | `bad_a` | 2 |" in text and "| ingest | `bad_b` | 2 |" in text


def test_manifest_is_json_with_expected_fields(tmp_path):
    run = RunDir(tmp_path)
    run.write_stage("s", _results(5), key="abc", metadata={"note": "x"})
    data = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert data["key"] == "abc" and data["metadata"] == {"note": "x"}
    assert {
        "records_in",
        "records_out",
        "rejected_by_reason",
        "records_rejected",
        "shards",
        "started_at",
        "finished_at",
    } <= set(data)
