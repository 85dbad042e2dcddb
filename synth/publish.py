"""Publish trajectories as a Hugging Face dataset folder (parquet + dataset card) and push it in one commit.

Output layout (`out_dir`):

    README.md                                       dataset card: YAML `configs:` + statistics
    data/trajectories/train-00000-of-00001.parquet  one row per trajectory, every distinct frame in `images`
    data/steps/train-00000-of-00001.parquet         one row per step with its screenshot, for step-level SFT

Screenshots are copied byte for byte from the `ImageStore` into `Image()` columns (`{"bytes", "path": None}`),
never decoded or re-encoded; parquet is written with pyarrow using the `datasets` feature schema, so
`datasets.load_dataset(out_dir, "trajectories")` decodes them to PIL images. A trajectory whose screenshot is
missing from the store (or whose bytes no longer match their hash) becomes `Rejected(stage="publish")` and is
counted in the card.

Local publishing never touches the network (it works with `HF_HUB_OFFLINE=1`); `push_to_hub` uploads the
folder as a single commit and returns the commit sha.

Usage:

    report = publish_dataset(run.read_stage("verify"), run.read_rejects("verify"), run.images, "out/ds",
                             PublishConfig(repo_id="me/switchyard-demo"))
    sha = push_to_hub("out/ds", "me/switchyard-demo", token=None, private=True)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features, Image, List, Value
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, DatasetCard, DatasetCardData, HfApi
from pydantic import BaseModel, ConfigDict, Field

from synth.actions import HYBRIDCUA_SPACE, render_hybridcua_tool_call, render_qwen_tool_call
from synth.images import ImageStore
from synth.schema import ImageRef, Rejected, Screen, Step, Trajectory

STAGE = "publish"
CONFIGS = ("trajectories", "steps")
INTERFACES = ("gui", "cli", "tool", "control")

Renderer = Callable[[Step, Screen], str]


def render_json(step: Step, screen: Screen) -> str:
    """Placeholder model-facing text: the canonical action as JSON (absolute pixels)."""
    return step.action.model_dump_json()


def render_hybridcua(step: Step, screen: Screen) -> str:
    """HybridCUA's unified action: one `<tool_call>` whose `bash` command is a shell command or a pyautogui
    heredoc on the 0–999 grid. Tool calls have no HybridCUA form and fall back to JSON."""
    if step.action.type == "tool":
        return render_json(step, screen)
    return render_hybridcua_tool_call(step.action, screen=screen)


def render_qwen(step: Step, screen: Screen) -> str:
    """Qwen2.5-VL/Qwen3-VL `computer_use` JSON tool calls on the 0–999 grid (Qwen3-VL's convention)."""
    if step.action.type == "tool":
        return render_json(step, screen)
    return render_qwen_tool_call(step.action, screen=screen, space=HYBRIDCUA_SPACE)


# Name -> renderer; `publish_dataset(renderer=...)` also takes any callable directly.
RENDERERS: dict[str, Renderer] = {"json": render_json, "hybridcua": render_hybridcua, "qwen": render_qwen}


def register_renderer(name: str, renderer: Renderer) -> None:
    RENDERERS[name] = renderer


class EmptyDataset(ValueError):
    """No trajectory survived to be published."""


class PublishConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repo_id: str | None = Field(
        default=None,
        description="Hub dataset repo ('user/name') used by push_to_hub and in the card's loading example.",
    )
    private: bool = Field(
        default=True, description="Create the Hub repo as private (only when it does not exist)."
    )
    push: bool = Field(
        default=False,
        description="After writing the folder, upload it to `repo_id` in one commit (network; needs a write token "
        "from HF_TOKEN or the local login). The folder is always written first.",
    )
    pretty_name: str = Field(
        default="switchyard GUI+CLI trajectories", description="Title of the dataset card."
    )
    license: str = Field(default="apache-2.0", description="Hub license identifier written into the card.")
    tags: list[str] = Field(
        default_factory=lambda: [
            "computer-use",
            "gui-agent",
            "cli",
            "agent-trajectories",
            "synthetic",
            "switchyard",
        ],
        description="Hub tags written into the card.",
    )
    task_categories: list[str] = Field(
        default_factory=lambda: ["image-text-to-text"],
        description="Hub task categories written into the card.",
    )
    renderer: Literal["hybridcua", "qwen", "json"] = Field(
        default="hybridcua",
        description="Model-facing text in the `rendered` columns: 'hybridcua' (unified bash action, pyautogui "
        "heredocs on the 0–999 grid), 'qwen' (computer_use JSON tool calls), 'json' (the canonical action).",
    )
    split: str = Field(default="train", description="Split name of every config.")
    include_steps: bool = Field(
        default=True, description="Also write the `steps` config; it stores every screenshot a second time."
    )
    max_shard_mb: float = Field(
        default=500.0, gt=0, description="Start a new parquet file after this many MB of in-memory row data."
    )
    trajectory_row_group: int = Field(
        default=16,
        ge=1,
        description="Rows per parquet row group in `trajectories` (memory per group ~ rows×steps×image).",
    )
    step_row_group: int = Field(default=100, ge=1, description="Rows per parquet row group in `steps`.")
    compression: Literal["zstd", "snappy", "none"] = Field(
        default="zstd",
        description="Parquet codec. zstd: ~13% smaller than none on noisy PNGs at ~1.3× the write time "
        "(bench/bench_synth.py); none is fastest; PNG bytes themselves barely compress.",
    )
    verify_image_hashes: bool = Field(
        default=True, description="Re-hash every screenshot read from the store (sha256, ~1 GB/s of CPU)."
    )


class PublishReport(BaseModel):
    out_dir: str
    trajectories: int = Field(description="Trajectory rows written.")
    steps: int = Field(description="Step rows written (all steps of the published trajectories).")
    images: int = Field(description="Screenshots written into the trajectories config.")
    image_bytes: int = Field(description="Bytes of those screenshots (original files).")
    parquet_bytes: int = Field(description="Total size of all parquet files.")
    files: dict[str, list[str]] = Field(description="Parquet files per config, relative to out_dir.")
    rejected: dict[str, dict[str, int]] = Field(
        description="Reject counts per stage and reason (input + publish)."
    )
    publish_rejects: list[Rejected] = Field(default_factory=list, description="Records this stage rejected.")
    seconds: float
    revision: str | None = Field(default=None, description="Hub commit sha, set by the caller after a push.")

    def summary(self) -> str:
        return (
            f"{self.trajectories} trajectories, {self.steps} steps, {self.images} screenshots, "
            f"{self.parquet_bytes / 1e6:.1f} MB parquet, {len(self.publish_rejects)} rejected at publish"
        )


# ---------------------------------------------------------------- schemas

_STEP_STRUCT = {
    "index": Value("int32"),
    "interface": Value("string"),
    "action": Value("string"),
    "rendered": Value("string"),
    "thought": Value("string"),
    "observation_text": Value("string"),
    "origin": List(Value("int32")),
    "image_index": Value("int32"),
    "next_image_index": Value("int32"),
}

TRAJECTORY_FEATURES = Features(
    {
        "id": Value("string"),
        "parent_id": Value("string"),
        "source_dataset": Value("string"),
        "source_record_id": Value("string"),
        "instruction": Value("string"),
        "platform": Value("string"),
        "screen_width": Value("int32"),
        "screen_height": Value("int32"),
        "task_id": Value("string"),
        "mode": Value("string"),
        "num_steps": Value("int32"),
        **{f"num_{i}_steps": Value("int32") for i in INTERFACES},
        "outcome_score": Value("float64"),
        "outcome_success": Value("bool"),
        "outcome_verifier": Value("string"),
        "outcome_judge": Value("string"),
        "steps": List(_STEP_STRUCT),
        "images": List(Image()),
        "record": Value("string"),
    }
)

STEP_FEATURES = Features(
    {
        "trajectory_id": Value("string"),
        "step_index": Value("int32"),
        "num_steps": Value("int32"),
        "mode": Value("string"),
        "interface": Value("string"),
        "instruction": Value("string"),
        "screen_width": Value("int32"),
        "screen_height": Value("int32"),
        "action": Value("string"),
        "rendered": Value("string"),
        "thought": Value("string"),
        "observation_text": Value("string"),
        "image": Image(),
    }
)

FIELD_DOCS = {
    "trajectories": {
        "id / parent_id": "record id; id of the record it was derived from (last provenance entry)",
        "source_dataset / source_record_id": "where the original GUI trajectory came from",
        "screen_width / screen_height": "pixel space of all GUI coordinates in `record` and `steps.action`",
        "mode": "gui | cli | tool | hybrid",
        "num_*_steps": "steps per interface class (derived from the action type)",
        "steps": "list of {index, interface, action (canonical JSON), rendered (model-facing text), thought, "
        "observation_text, origin (replaced source step indices), image_index / next_image_index (frames before/after the step, into `images`, null if none)}",
        "images": "original PNG bytes of every distinct frame (screenshots and next screenshots), once each, "
        "in order of first reference; `steps.image_index`/`next_image_index` point into it",
        "record": "the full canonical `synth.schema.Trajectory` JSON (round-trips with `Trajectory.from_json`)",
    },
    "steps": {
        "trajectory_id / step_index": "which trajectory and step this row is",
        "action / rendered": "canonical action JSON / model-facing text",
        "image": "the screenshot the agent saw before acting (original bytes), null if none",
    },
}


# ---------------------------------------------------------------- parquet writing


class _ShardedParquetWriter:
    """Streams rows into `<dir>/<split>-NNNNN.parquet` files of at most ~max_bytes, renamed `-of-N` on close."""

    def __init__(
        self,
        directory: Path,
        split: str,
        features: Features,
        row_group: int,
        max_bytes: int,
        compression: str,
    ):
        self.directory = directory
        self.split = split
        # the schema carries the `huggingface` metadata, which is how `datasets` knows a struct is an Image
        self.schema = features.arrow_schema
        self.row_group = row_group
        self.max_bytes = max_bytes
        self.compression = compression
        self.rows: list[dict[str, Any]] = []
        self.paths: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.shard_bytes = 0

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.row_group:
            self._flush()

    def _flush(self) -> None:
        if not self.rows:
            return
        table = pa.Table.from_pylist(self.rows, schema=self.schema)
        self.rows = []
        if self.writer is None:
            path = self.directory / f"{self.split}-{len(self.paths):05d}.parquet"
            self.paths.append(path)
            # dictionary encoding of mostly-unique blobs and long JSON strings only costs time
            self.writer = pq.ParquetWriter(
                path, self.schema, compression=self.compression, use_dictionary=False
            )
            self.shard_bytes = 0
        self.writer.write_table(table, row_group_size=len(table))
        self.shard_bytes += table.nbytes
        if self.shard_bytes >= self.max_bytes:
            self.writer.close()
            self.writer = None

    def close(self) -> list[Path]:
        self._flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        total = len(self.paths)
        final = []
        for i, path in enumerate(self.paths):
            target = path.with_name(f"{self.split}-{i:05d}-of-{total:05d}.parquet")
            path.replace(target)
            final.append(target)
        return final


# ---------------------------------------------------------------- rows


class _BadImage(Exception):
    def __init__(self, step_index: int, reason: str, detail: str):
        super().__init__(detail)
        self.step_index, self.reason, self.detail = step_index, reason, detail


def _frame_bytes(traj: Trajectory, images: ImageStore, verify: bool) -> dict[str, bytes]:
    """Bytes of every frame the trajectory references (screenshots and next screenshots), by sha256."""
    out: dict[str, bytes] = {}
    for step in traj.steps:
        for ref in (step.screenshot, step.next_screenshot):
            if ref is None or ref.sha256 in out:
                continue
            try:
                data = images.get(ref)
            except FileNotFoundError:
                raise _BadImage(
                    step.index, "missing_image", f"frame {ref.sha256} is not in the store"
                ) from None
            if verify and hashlib.sha256(data).hexdigest() != ref.sha256:
                raise _BadImage(
                    step.index, "image_hash_mismatch", f"stored bytes for {ref.sha256} hash differently"
                )
            out[ref.sha256] = data
    return out


def _rows(
    traj: Trajectory, frames: dict[str, bytes], rendered: list[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    counts = Counter(step.interface for step in traj.steps)
    outcome = traj.outcome
    # `images` holds each distinct frame once, in order of first reference, so that consecutive steps
    # sharing a frame (next_screenshot of i == screenshot of i+1) do not store it twice
    position: dict[str, int] = {}
    images: list[dict[str, Any]] = []

    def image_index(ref: ImageRef | None) -> int | None:
        if ref is None:
            return None
        if ref.sha256 not in position:
            position[ref.sha256] = len(images)
            images.append({"bytes": frames[ref.sha256], "path": None})
        return position[ref.sha256]

    step_structs, step_rows = [], []
    for step, text in zip(traj.steps, rendered, strict=True):
        index = image_index(step.screenshot)
        next_index = image_index(step.next_screenshot)
        action = step.action.model_dump_json()
        step_structs.append(
            {
                "index": step.index,
                "interface": step.interface,
                "action": action,
                "rendered": text,
                "thought": step.thought,
                "observation_text": step.observation_text,
                "origin": step.origin,
                "image_index": index,
                "next_image_index": next_index,
            }
        )
        step_rows.append(
            {
                "trajectory_id": traj.id,
                "step_index": step.index,
                "num_steps": len(traj.steps),
                "mode": traj.mode,
                "interface": step.interface,
                "instruction": traj.instruction,
                "screen_width": traj.screen.width,
                "screen_height": traj.screen.height,
                "action": action,
                "rendered": text,
                "thought": step.thought,
                "observation_text": step.observation_text,
                "image": None if index is None else images[index],
            }
        )
    row = {
        "id": traj.id,
        "parent_id": traj.provenance[-1].parent_id if traj.provenance else None,
        "source_dataset": traj.source.dataset,
        "source_record_id": traj.source.record_id,
        "instruction": traj.instruction,
        "platform": traj.platform,
        "screen_width": traj.screen.width,
        "screen_height": traj.screen.height,
        "task_id": traj.task_id,
        "mode": traj.mode,
        "num_steps": len(traj.steps),
        **{f"num_{i}_steps": counts.get(i, 0) for i in INTERFACES},
        "outcome_score": outcome.score if outcome else None,
        "outcome_success": outcome.success if outcome else None,
        "outcome_verifier": outcome.verifier if outcome else None,
        "outcome_judge": outcome.judge if outcome else None,
        "steps": step_structs,
        "images": images,
        "record": traj.to_json(),
    }
    return row, step_rows


# ---------------------------------------------------------------- publishing


class _Stats:
    def __init__(self) -> None:
        self.modes: Counter[str] = Counter()
        self.interfaces: Counter[str] = Counter()
        self.steps_per_traj: list[int] = []
        self.images = 0
        self.image_bytes = 0

    def add(self, traj: Trajectory, frames: dict[str, bytes]) -> None:
        self.modes[traj.mode] += 1
        self.interfaces.update(step.interface for step in traj.steps)
        self.steps_per_traj.append(len(traj.steps))
        present = list(frames.values())
        self.images += len(present)
        self.image_bytes += sum(len(s) for s in present)


def publish_dataset(
    records: Iterable[Trajectory],
    rejects: Iterable[Rejected],
    images: ImageStore,
    out_dir: str | os.PathLike[str],
    cfg: PublishConfig,
    *,
    renderer: Renderer | None = None,
) -> PublishReport:
    """Write the dataset folder. `renderer` overrides `cfg.renderer` (e.g. an unregistered callable).

    Streams `records` (memory is bounded by one row group per config). Existing `data/<config>/` folders in
    `out_dir` are replaced so stale shards from an earlier publish cannot leak into the globs.
    """
    started = time.perf_counter()
    if renderer is None:
        if cfg.renderer not in RENDERERS:
            raise ValueError(f"unknown renderer {cfg.renderer!r}; registered: {sorted(RENDERERS)}")
        renderer = RENDERERS[cfg.renderer]
    out = Path(out_dir)
    max_bytes = int(cfg.max_shard_mb * 1e6)
    configs = [c for c in CONFIGS if c == "trajectories" or cfg.include_steps]
    writers: dict[str, _ShardedParquetWriter] = {}
    for name in CONFIGS:
        folder = out / "data" / name
        if folder.exists():
            shutil.rmtree(folder)
    for name in configs:
        folder = out / "data" / name
        folder.mkdir(parents=True)
        features, group = (
            (TRAJECTORY_FEATURES, cfg.trajectory_row_group)
            if name == "trajectories"
            else (STEP_FEATURES, cfg.step_row_group)
        )
        writers[name] = _ShardedParquetWriter(folder, cfg.split, features, group, max_bytes, cfg.compression)

    stats = _Stats()
    publish_rejects: list[Rejected] = []
    for traj in records:
        try:
            frames = _frame_bytes(traj, images, cfg.verify_image_hashes)
        except _BadImage as exc:
            publish_rejects.append(
                Rejected(
                    record_id=traj.id,
                    stage=STAGE,
                    reason=exc.reason,
                    detail=exc.detail,
                    step_index=exc.step_index,
                )
            )
            continue
        rendered = []
        for step in traj.steps:
            try:
                rendered.append(renderer(step, traj.screen))
            except (
                Exception
            ) as exc:  # a renderer that cannot express an action rejects the record, not the run
                publish_rejects.append(
                    Rejected(
                        record_id=traj.id,
                        stage=STAGE,
                        reason="render_failed",
                        detail=f"{type(exc).__name__}: {exc}",
                        step_index=step.index,
                    )
                )
                break
        else:
            row, step_rows = _rows(traj, frames, rendered)
            writers["trajectories"].add(row)
            if "steps" in writers:
                for step_row in step_rows:
                    writers["steps"].add(step_row)
            stats.add(traj, frames)

    files = {name: [p.relative_to(out).as_posix() for p in w.close()] for name, w in writers.items()}
    rejected: dict[str, Counter[str]] = {}
    for r in [*rejects, *publish_rejects]:
        rejected.setdefault(r.stage, Counter())[r.reason] += 1
    rejected_counts = {stage: dict(sorted(c.items())) for stage, c in sorted(rejected.items())}
    if not stats.steps_per_traj:
        # `datasets` cannot load a config without rows, and an empty push is a pipeline failure anyway
        for name in configs:
            shutil.rmtree(out / "data" / name)
        raise EmptyDataset(f"nothing to publish; rejects per stage and reason: {rejected_counts}")

    card = build_card(cfg, stats, rejected_counts, files)
    (out / "README.md").write_text(card, encoding="utf-8")
    return PublishReport(
        out_dir=str(out),
        trajectories=len(stats.steps_per_traj),
        steps=sum(stats.steps_per_traj),
        images=stats.images,
        image_bytes=stats.image_bytes,
        parquet_bytes=sum((out / f).stat().st_size for fs in files.values() for f in fs),
        files=files,
        rejected=rejected_counts,
        publish_rejects=publish_rejects,
        seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------- dataset card


def _size_category(n: int) -> str:
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < limit:
            return label
    return "1M<n<10M"


def _table(header: list[str], rows: Iterable[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def build_card(
    cfg: PublishConfig, stats: _Stats, rejected: dict[str, dict[str, int]], files: dict[str, list[str]]
) -> str:
    """The README.md text: YAML front matter the Hub and `load_dataset` read, then human-facing statistics."""
    data = DatasetCardData(
        license=cfg.license,
        pretty_name=cfg.pretty_name,
        task_categories=cfg.task_categories,
        tags=cfg.tags,
        size_categories=[_size_category(len(stats.steps_per_traj))],
        configs=[
            {
                "config_name": name,
                "data_files": [{"split": cfg.split, "path": f"data/{name}/{cfg.split}-*.parquet"}],
                **({"default": True} if name == "trajectories" else {}),
            }
            for name in files
        ],
    )
    n_traj = len(stats.steps_per_traj)
    n_steps = sum(stats.steps_per_traj)
    non_control = n_steps - stats.interfaces.get("control", 0)

    def share(count: int, total: int) -> str:
        # undefined, not zero, when nothing is counted (DESIGN §7 metrics convention)
        return f"{count / total:.1%}" if total else "n/a"

    spt = stats.steps_per_traj
    where = cfg.repo_id or "path/to/this/folder"
    body = [
        f"# {cfg.pretty_name}",
        "",
        "Computer-use agent trajectories produced by switchyard: GUI demonstrations "
        "rewritten into GUI, CLI, tool and hybrid forms. Screenshots are the original PNG files.",
        "",
        "## Statistics",
        "",
        f"- trajectories: **{n_traj}**, steps: **{n_steps}**, screenshots: **{stats.images}** "
        f"({stats.image_bytes / 1e6:.1f} MB)",
        f"- CLI step share (control steps excluded): **{share(stats.interfaces.get('cli', 0), non_control)}**",
        "- steps per trajectory: "
        + (
            f"mean {statistics.fmean(spt):.2f}, median {statistics.median(spt):g}, max {max(spt)}"
            if spt
            else "n/a (empty dataset)"
        ),
        "",
        "### Trajectories per mode",
        "",
        *_table(
            ["mode", "trajectories", "share"],
            [[m, c, share(c, n_traj)] for m, c in sorted(stats.modes.items())],
        ),
        "",
        "### Steps per interface",
        "",
        *_table(
            ["interface", "steps", "share of all steps"],
            [[i, stats.interfaces.get(i, 0), share(stats.interfaces.get(i, 0), n_steps)] for i in INTERFACES],
        ),
        "",
        "### Rejects per stage and reason",
        "",
        *(
            _table(
                ["stage", "reason", "count"],
                [
                    [stage, f"`{reason}`", count]
                    for stage, reasons in rejected.items()
                    for reason, count in reasons.items()
                ],
            )
            if rejected
            else ["No records were rejected."]
        ),
        "",
        "## Configs and fields",
        "",
    ]
    for name, paths in files.items():
        body += [f"### `{name}` ({len(paths)} parquet file{'s' if len(paths) != 1 else ''})", ""]
        body += [f"- `{field}`: {doc}" for field, doc in FIELD_DOCS[name].items()]
        body.append("")
    body += [
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'trajectories = load_dataset("{where}", "trajectories", split="{cfg.split}")',
        f'steps = load_dataset("{where}", "steps", split="{cfg.split}")',
        'first = trajectories[0]["images"][0]  # a PIL image',
        "```",
        "",
        "## Publish config",
        "",
        "```json",
        json.dumps(cfg.model_dump(mode="json"), indent=2),
        "```",
        "",
    ]
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body))
    return str(card)


# ---------------------------------------------------------------- hub


def _local_files(out_dir: Path) -> list[str]:
    # hidden files/folders (e.g. a .cache some tools create) are not part of the dataset
    return sorted(
        p.relative_to(out_dir).as_posix()
        for p in out_dir.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(out_dir).parts)
    )


def build_operations(
    out_dir: str | os.PathLike[str], remote_files: Iterable[str] = ()
) -> list[CommitOperationAdd | CommitOperationDelete]:
    """The commit: add every local file; delete remote `data/` files the new folder no longer has.

    Deleting stale shards matters because the card's globs (`data/<config>/train-*.parquet`) would otherwise
    mix an old publish into the new one. Files outside `data/` (e.g. `.gitattributes`) are left alone.
    """
    out = Path(out_dir)
    local = _local_files(out)
    if "README.md" not in local:
        raise FileNotFoundError(f"{out} has no README.md; run publish_dataset first")
    ops: list[CommitOperationAdd | CommitOperationDelete] = [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(out / rel)) for rel in local
    ]
    keep = set(local)
    ops += [
        CommitOperationDelete(path_in_repo=f)
        for f in sorted(remote_files)
        if f.startswith("data/") and f not in keep
    ]
    return ops


def push_to_hub(
    out_dir: str | os.PathLike[str],
    repo_id: str,
    token: str | None = None,
    private: bool = True,
    commit_message: str = "Publish dataset with switchyard",
    endpoint: str | None = None,
) -> str:
    """Upload the folder as one commit to a dataset repo (created if missing); returns the commit sha.

    `endpoint` overrides the Hub URL (default: `HF_ENDPOINT`, read once when huggingface_hub is imported),
    e.g. for a self-hosted mirror or a local stand-in in tests.
    """
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    remote = api.list_repo_files(repo_id, repo_type="dataset")
    info = api.create_commit(
        repo_id=repo_id,
        repo_type="dataset",
        operations=build_operations(out_dir, remote),
        commit_message=commit_message,
    )
    return info.oid


def iter_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Raw parquet rows (image structs as {'bytes', 'path'}), without `datasets` decoding; for checks."""
    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()
