"""Publishing: parquet configs load back with `datasets`, image bytes stay identical, the card has the stats."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import pytest
import yaml
from huggingface_hub import CommitOperationAdd, CommitOperationDelete
from PIL import Image as PILImage

from synth.images import ImageStore
from synth.publish import EmptyDataset, PublishConfig, build_operations, iter_rows, publish_dataset
from synth.schema import (
    CliAction,
    Control,
    GuiAction,
    KeyOp,
    MouseOp,
    Outcome,
    Provenance,
    Rejected,
    Screen,
    Source,
    Step,
    ToolCall,
    Trajectory,
    TypeOp,
)

ROOT = Path(__file__).resolve().parents[2]


def _png(seed: int, size=(64, 40)) -> bytes:
    """A distinct small PNG per seed (noise, so no two seeds collide)."""
    rnd = __import__("random").Random(seed)
    img = PILImage.new("RGB", size)
    img.putdata(
        [(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)) for _ in range(size[0] * size[1])]
    )
    buf = io.BytesIO()
    # optimize=True makes the bytes differ from what a default re-encode would give, so identity is meaningful
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


@pytest.fixture
def store(tmp_path) -> ImageStore:
    return ImageStore(tmp_path / "images")


def _records(store: ImageStore) -> list[Trajectory]:
    refs = [store.put(_png(i)) for i in range(6)]
    screen = Screen(width=1280, height=720)
    hybrid = Trajectory(
        id="h1",
        source=Source(dataset="agentnet", record_id="a-1"),
        instruction="Count lines in notes.txt",
        screen=screen,
        task_id="task-7",
        mode="hybrid",
        steps=[
            Step(
                index=0,
                screenshot=refs[0],
                thought="open a terminal",
                action=GuiAction(ops=[MouseOp(op="click", x=100, y=200)]),
            ),
            Step(index=1, screenshot=refs[1], action=CliAction(command="wc -l notes.txt"), origin=[1, 2, 3]),
            Step(index=2, observation_text="3 notes.txt", action=Control(kind="answer", value="3")),
        ],
        outcome=Outcome(score=1.0, success=True, verifier="exact"),
        provenance=[Provenance(stage="rewrite_cli", version="1", params_hash="abc", parent_id="g1")],
    )
    cli = Trajectory(
        id="c1",
        source=Source(dataset="osworld-run", record_id="r-9"),
        instruction="List files",
        screen=screen,
        mode="cli",
        steps=[
            Step(index=0, screenshot=refs[2], action=CliAction(command="ls")),
            Step(index=1, screenshot=refs[3], action=CliAction(command="ls -la")),
            Step(index=2, screenshot=refs[3], action=Control(kind="terminate", value="success")),
        ],
    )
    gui = Trajectory(
        id="g2",
        source=Source(dataset="agentnet", record_id="a-2"),
        instruction="Type hello",
        screen=screen,
        mode="gui",
        steps=[
            Step(
                index=0,
                screenshot=refs[4],
                action=GuiAction(ops=[TypeOp(text="hello"), KeyOp(op="press", keys=["enter"])]),
            ),
            Step(
                index=1, screenshot=refs[5], action=ToolCall(name="save_file", arguments={"path": "/tmp/a"})
            ),
        ],
    )
    return [hybrid, cli, gui]


def _load(out: Path, config: str, tmp_path: Path) -> datasets.Dataset:
    return datasets.load_dataset(str(out), config, split="train", cache_dir=str(tmp_path / "hf-cache"))


def test_trajectories_config_loads_back_with_original_image_bytes(tmp_path, store):
    records = _records(store)
    out = tmp_path / "ds"
    report = publish_dataset(records, [], store, out, PublishConfig(renderer="json"))
    assert (report.trajectories, report.steps, report.images) == (3, 8, 6)  # c1 reuses a frame: stored once

    ds = _load(out, "trajectories", tmp_path)
    assert ds.num_rows == 3
    by_id = {row["id"]: row for row in ds}
    h1 = by_id["h1"]
    assert h1["parent_id"] == "g1" and h1["source_dataset"] == "agentnet" and h1["source_record_id"] == "a-1"
    assert (h1["screen_width"], h1["screen_height"], h1["task_id"], h1["mode"]) == (
        1280,
        720,
        "task-7",
        "hybrid",
    )
    assert (h1["num_steps"], h1["num_gui_steps"], h1["num_cli_steps"], h1["num_control_steps"]) == (
        3,
        1,
        1,
        1,
    )
    assert (
        h1["outcome_success"] is True and h1["outcome_score"] == 1.0 and by_id["c1"]["outcome_score"] is None
    )
    assert Trajectory.from_json(h1["record"]) == records[0]
    assert [s["interface"] for s in h1["steps"]] == ["gui", "cli", "control"]
    assert [s["image_index"] for s in h1["steps"]] == [0, 1, None]
    assert h1["steps"][1]["origin"] == [1, 2, 3] and h1["steps"][2]["observation_text"] == "3 notes.txt"
    assert h1["steps"][0]["rendered"] == records[0].steps[0].action.model_dump_json()
    # decoded to PIL
    assert all(isinstance(im, PILImage.Image) for im in h1["images"]) and h1["images"][0].size == (64, 40)

    # raw bytes through datasets (decode=False) and through pyarrow: identical to the store, never re-encoded
    raw = {r["id"]: r for r in ds.cast_column("images", datasets.List(datasets.Image(decode=False)))}
    for traj in records:
        # every distinct frame once, in order of first reference (screenshot, then next_screenshot)
        refs = [r for s in traj.steps for r in (s.screenshot, s.next_screenshot) if r is not None]
        shas = list(dict.fromkeys(r.sha256 for r in refs))
        got = raw[traj.id]["images"]
        assert [hashlib.sha256(im["bytes"]).hexdigest() for im in got] == shas
        assert [im["bytes"] for im in got] == [store.get(s) for s in shas]
    (shard,) = report.files["trajectories"]
    parquet_rows = list(iter_rows(out / shard))
    assert parquet_rows[1]["images"][1]["bytes"] == store.get(records[1].steps[1].screenshot)


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_steps_config_has_one_row_per_step_with_its_screenshot(tmp_path, store, compression):
    records = _records(store)
    out = tmp_path / "ds"
    publish_dataset(records, [], store, out, PublishConfig(compression=compression))
    ds = _load(out, "steps", tmp_path).cast_column("image", datasets.Image(decode=False))
    assert ds.num_rows == 8
    rows = {(r["trajectory_id"], r["step_index"]): r for r in ds}
    for traj in records:
        for step in traj.steps:
            row = rows[(traj.id, step.index)]
            assert row["interface"] == step.interface and row["instruction"] == traj.instruction
            assert row["action"] == step.action.model_dump_json()
            if step.screenshot is None:
                assert row["image"] is None
            else:
                assert row["image"]["bytes"] == store.get(step.screenshot)
    decoded = _load(out, "steps", tmp_path)
    assert isinstance(decoded[0]["image"], PILImage.Image)


def test_missing_image_rejects_the_record_and_counts_it(tmp_path, store):
    records = _records(store)
    store.path(records[1].steps[1].screenshot).unlink()
    out = tmp_path / "ds"
    upstream = [Rejected(record_id="x", stage="rewrite_cli", reason="no_terminal")] * 2
    report = publish_dataset(records, upstream, store, out, PublishConfig())
    assert report.trajectories == 2
    (rej,) = report.publish_rejects
    assert (rej.record_id, rej.reason, rej.step_index) == ("c1", "missing_image", 1)
    assert report.rejected == {"publish": {"missing_image": 1}, "rewrite_cli": {"no_terminal": 2}}
    assert sorted(_load(out, "trajectories", tmp_path)["id"]) == ["g2", "h1"]
    card = (out / "README.md").read_text()
    assert "| rewrite_cli | `no_terminal` | 2 |" in card and "| publish | `missing_image` | 1 |" in card


def test_corrupted_store_bytes_are_rejected_when_verifying(tmp_path, store):
    records = _records(store)
    path = store.path(records[2].steps[0].screenshot)
    path.write_bytes(_png(99))
    report = publish_dataset(records, [], store, tmp_path / "ds", PublishConfig())
    assert [(r.record_id, r.reason) for r in report.publish_rejects] == [("g2", "image_hash_mismatch")]


def test_card_front_matter_and_statistics(tmp_path, store):
    out = tmp_path / "ds"
    cfg = PublishConfig(repo_id="someone/switchyard-test", license="cc-by-4.0")
    publish_dataset(_records(store), [], store, out, cfg)
    text = (out / "README.md").read_text()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["license"] == "cc-by-4.0" and "computer-use" in front["tags"]
    assert front["task_categories"] == ["image-text-to-text"]
    configs = {c["config_name"]: c for c in front["configs"]}
    assert configs["trajectories"]["data_files"] == [
        {"split": "train", "path": "data/trajectories/train-*.parquet"}
    ]
    assert configs["trajectories"].get("default") is True and "steps" in configs
    # cli steps: h1 1 + c1 2 = 3; non-control steps: 8 - 2 control = 6 -> 50.0%
    assert "CLI step share (control steps excluded): **50.0%**" in text
    assert "mean 2.67, median 3, max 3" in text
    assert "| hybrid | 1 | 33.3% |" in text
    assert 'load_dataset("someone/switchyard-test", "trajectories"' in text
    assert '"license": "cc-by-4.0"' in text  # the publish config is in the card


def test_renderer_hook_and_failures(tmp_path, store):
    records = _records(store)

    def shouty(step: Step, screen: Screen) -> str:
        if isinstance(step.action, ToolCall):
            raise NotImplementedError("no tools here")
        return f"{step.interface.upper()}@{screen.width}"

    out = tmp_path / "ds"
    report = publish_dataset(records, [], store, out, PublishConfig(), renderer=shouty)
    assert [(r.record_id, r.reason, r.step_index) for r in report.publish_rejects] == [
        ("g2", "render_failed", 1)
    ]
    ds = _load(out, "steps", tmp_path)
    assert sorted(set(ds["rendered"])) == ["CLI@1280", "CONTROL@1280", "GUI@1280"]
    with pytest.raises(ValueError, match="renderer"):
        publish_dataset(records, [], store, out, PublishConfig(renderer="nope"))


def test_default_renderer_is_the_hybridcua_unified_bash_action(tmp_path, store):
    records = _records(store)
    publish_dataset(records, [], store, tmp_path / "ds", PublishConfig())
    rendered = _load(tmp_path / "ds", "steps", tmp_path)["rendered"]
    gui = next(r for r in rendered if "pyautogui" in r)
    assert gui.startswith("<tool_call>") and "python3 <<'PY'" in gui
    assert any("<parameter=command>" in r and "pyautogui" not in r for r in rendered)


def test_small_shards_split_files_and_republish_removes_stale_ones(tmp_path, store):
    records = _records(store)
    out = tmp_path / "ds"
    tiny = PublishConfig(max_shard_mb=1e-6, trajectory_row_group=1, step_row_group=2)
    report = publish_dataset(records, [], store, out, tiny)
    assert report.files["trajectories"] == [
        f"data/trajectories/train-{i:05d}-of-00003.parquet" for i in range(3)
    ]
    assert len(report.files["steps"]) == 4
    assert sorted(_load(out, "trajectories", tmp_path)["id"]) == ["c1", "g2", "h1"]

    again = publish_dataset(records[:1], [], store, out, PublishConfig(include_steps=False))
    assert again.files == {"trajectories": ["data/trajectories/train-00000-of-00001.parquet"]}
    assert sorted(p.name for p in (out / "data").rglob("*.parquet")) == ["train-00000-of-00001.parquet"]
    assert not (out / "data" / "steps").exists()
    assert _load(out, "trajectories", tmp_path / "c2")["id"] == ["h1"]


def test_empty_publish_raises_with_reject_counts(tmp_path, store):
    records = _records(store)
    for traj in records:
        for step in traj.steps:
            if step.screenshot is not None and step.screenshot in store:
                store.path(step.screenshot).unlink()
    with pytest.raises(EmptyDataset, match="missing_image"):
        publish_dataset(records, [], store, tmp_path / "ds", PublishConfig())
    assert not (tmp_path / "ds" / "README.md").exists()
    assert not list((tmp_path / "ds").rglob("*.parquet"))


def test_build_operations_adds_all_files_and_deletes_stale_remote_shards(tmp_path, store):
    out = tmp_path / "ds"
    publish_dataset(_records(store), [], store, out, PublishConfig())
    (out / ".cache").mkdir()
    (out / ".cache" / "lock").write_text("x")
    remote = [
        ".gitattributes",
        "README.md",
        "data/trajectories/train-00000-of-00001.parquet",
        "data/trajectories/train-00001-of-00002.parquet",
        "data/old_config/train-00000-of-00001.parquet",
    ]
    ops = build_operations(out, remote)
    adds = {op.path_in_repo: op for op in ops if isinstance(op, CommitOperationAdd)}
    deletes = [op.path_in_repo for op in ops if isinstance(op, CommitOperationDelete)]
    assert set(adds) == {
        "README.md",
        "data/trajectories/train-00000-of-00001.parquet",
        "data/steps/train-00000-of-00001.parquet",
    }
    assert Path(adds["README.md"].path_or_fileobj) == out / "README.md"
    assert deletes == [
        "data/old_config/train-00000-of-00001.parquet",
        "data/trajectories/train-00001-of-00002.parquet",
    ]
    with pytest.raises(FileNotFoundError):
        build_operations(tmp_path / "images")


def test_local_publish_and_load_work_with_hub_offline(tmp_path, store):
    records = _records(store)
    script = textwrap.dedent(
        f"""
        import datasets
        from synth.images import ImageStore
        from synth.publish import EmptyDataset, PublishConfig, publish_dataset
        from synth.schema import Trajectory
        records = [Trajectory.from_json(line) for line in open({str(tmp_path / "in.jsonl")!r})]
        publish_dataset(records, [], ImageStore({str(store.root)!r}), {str(tmp_path / "ds")!r}, PublishConfig())
        ds = datasets.load_dataset({str(tmp_path / "ds")!r}, "steps", split="train", cache_dir={str(tmp_path / "c")!r})
        print(ds.num_rows)
        """
    )
    (tmp_path / "in.jsonl").write_text("".join(r.to_json() + "\n" for r in records))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "8"
