"""Run directories (DESIGN §5): one folder per stage with JSONL shards, rejects and a manifest written last.

Layout under a run root (a local path or any fsspec URL such as `s3://bucket/run-1` or `memory://run`):

    <stage>/shard-00000.jsonl   Trajectory JSON lines, `shard_size` records per file
    <stage>/rejects.jsonl       Rejected JSON lines (one per rejected record or step)
    <stage>/manifest.json       counts, shard hashes, content key, timestamps; written LAST
    images/                     content-addressed screenshots (`synth.images.ImageStore`)
    report.md                   stage counts and reject reasons (`write_report`)

A stage is finished iff its manifest exists and carries the expected content key (`stage_key`: input key +
stage config hash + code version). `write_stage` skips a finished stage without consuming its input; anything
else (no manifest, or a manifest for another key) is wiped and redone from scratch, so a killed run resumes
and never duplicates records. Every file goes through a temporary name and a rename, so a reader never sees
a half-written shard under its final name.

Images are local only: the `ImageStore` needs a filesystem path, so a remote run root must be given a local
`images_root` (e.g. a node-local cache that is synced separately).

Usage:

    run = RunDir("runs/2024-06-01")
    key = stage_key(input_key, cfg, code_version="1")
    if not run.is_finished("rewrite_cli", key):
        run.write_stage("rewrite_cli", rewrite_cli(run.read_stage("ingest"), cfg), key=key)
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem
from pydantic import BaseModel, Field

from synth.images import ImageStore
from synth.schema import Rejected, Trajectory, config_hash

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"
REPORT = "report.md"


class StageNotFinished(FileNotFoundError):
    """The stage has no manifest: it never ran, or it was killed before finishing."""


class ShardInfo(BaseModel):
    path: str = Field(description="Shard file name relative to the stage folder, e.g. 'shard-00000.jsonl'.")
    records: int = Field(ge=0, description="Trajectories in the shard.")
    sha256: str = Field(description="SHA-256 of the shard file bytes.")
    bytes: int = Field(ge=0, description="Size of the shard file.")


class StageManifest(BaseModel):
    """What a finished stage wrote. Its presence on disk is the 'stage finished' marker."""

    stage: str = Field(description="Stage name (the folder name under the run root).")
    key: str = Field(description="Content key the stage was computed for (see `stage_key`).")
    records_in: int = Field(ge=0, description="Input records the stage consumed.")
    records_out: int = Field(ge=0, description="Trajectories written to the shards.")
    rejected_by_reason: dict[str, int] = Field(
        default_factory=dict, description="Rejected entries per reason code (a record may have several)."
    )
    records_rejected: int = Field(
        default=0, ge=0, description="Distinct record ids with at least one reject."
    )
    shards: list[ShardInfo] = Field(default_factory=list, description="Output shards in order.")
    rejects_sha256: str = Field(description="SHA-256 of rejects.jsonl (always written, possibly empty).")
    started_at: datetime
    finished_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form extras from the caller.")

    @property
    def output_key(self) -> str:
        """A content key of this stage's output, to feed the next stage's `stage_key` as its input key."""
        return content_key(*(s.sha256 for s in self.shards))


def content_key(*parts: str) -> str:
    """SHA-256 over an ordered list of strings (length-prefixed, so ('ab','c') != ('a','bc'))."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def stage_key(input_key: str, cfg: BaseModel, code_version: str) -> str:
    """The content key of a stage run: same input, same config and same code mean the same output."""
    return content_key("stage-key-v1", input_key, config_hash(cfg), code_version)


class _HashingWriter:
    """Writes text lines to a temp file on `fs` and hashes the bytes on the way (no second read)."""

    def __init__(self, fs: fsspec.AbstractFileSystem, final_path: str):
        self.fs = fs
        self.final_path = final_path
        self.tmp_path = f"{final_path}.tmp-{uuid.uuid4().hex[:8]}"
        self.handle = fs.open(self.tmp_path, "wb")
        self.sha = hashlib.sha256()
        self.size = 0
        self.records = 0

    def write_line(self, text: str) -> None:
        data = (text + "\n").encode()
        self.handle.write(data)
        self.sha.update(data)
        self.size += len(data)
        self.records += 1

    def commit(self) -> None:
        self.handle.close()
        self.fs.mv(self.tmp_path, self.final_path)

    def abort(self) -> None:
        self.handle.close()
        if self.fs.exists(self.tmp_path):
            self.fs.rm(self.tmp_path)


class RunDir:
    """A run directory on a local path or any fsspec URL."""

    def __init__(self, root: str | os.PathLike[str], *, images_root: str | os.PathLike[str] | None = None):
        self.fs, self.root = fsspec.core.url_to_fs(os.fspath(root))
        self.root = self.root.rstrip("/")
        self.url = os.fspath(root)
        self._images_root = Path(images_root) if images_root is not None else None
        self._images: ImageStore | None = None

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @property
    def images(self) -> ImageStore:
        """The screenshot store; `<root>/images` for a local run, `images_root` otherwise."""
        if self._images is None:
            if self._images_root is not None:
                self._images = ImageStore(self._images_root)
            elif self.is_local:
                self._images = ImageStore(Path(self.root) / "images")
            else:
                raise ValueError(
                    f"run root {self.url!r} is not local; the image store needs a local path: "
                    "pass RunDir(..., images_root=<local folder>)"
                )
        return self._images

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    # ------------------------------------------------------------ reading

    def manifest(self, stage: str) -> StageManifest:
        path = self.path(stage, MANIFEST)
        try:
            with self.fs.open(path, "rb") as f:
                return StageManifest.model_validate_json(f.read())
        except FileNotFoundError as exc:
            raise StageNotFinished(f"stage {stage!r} has no manifest under {self.url}") from exc

    def is_finished(self, stage: str, key: str) -> bool:
        try:
            return self.manifest(stage).key == key
        except StageNotFinished:
            return False

    def read_stage(self, stage: str) -> Iterator[Trajectory]:
        """The stage's trajectories, shard by shard as listed in its manifest (never stray files)."""
        for shard in self.manifest(stage).shards:
            with self.fs.open(self.path(stage, shard.path), "rt", encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        yield Trajectory.from_json(line)

    def read_rejects(self, stage: str) -> Iterator[Rejected]:
        self.manifest(stage)  # an unfinished stage's rejects file may be partial or stale
        with self.fs.open(self.path(stage, REJECTS), "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield Rejected.model_validate_json(line)

    # ------------------------------------------------------------ writing

    def write_stage(
        self,
        stage: str,
        results: Iterable[Trajectory | Rejected],
        *,
        key: str,
        shard_size: int = 1000,
        records_in: int | None = None,
        force: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> StageManifest:
        """Write a stage's results and, last, its manifest.

        If the stage is already finished for `key` (and not `force`), returns its manifest without consuming
        `results` — a lazy stage generator then never runs. Otherwise the stage folder is wiped first, so a
        previous killed attempt cannot leave records behind. `records_in` defaults to records out plus
        distinct rejected record ids (right for 1:1 stages; pass it explicitly for fan-out stages).
        """
        if shard_size < 1:
            raise ValueError("shard_size must be >= 1")
        if not force and self.is_finished(stage, key):
            return self.manifest(stage)

        stage_dir = self.path(stage)
        if self.fs.exists(stage_dir):
            self.fs.rm(stage_dir, recursive=True)
        self.fs.makedirs(stage_dir, exist_ok=True)
        started = datetime.now(UTC)

        shards: list[ShardInfo] = []
        reasons: Counter[str] = Counter()
        rejected_ids: set[str] = set()
        out_ids: set[str] = set()
        rejects = _HashingWriter(self.fs, self.path(stage, REJECTS))
        shard: _HashingWriter | None = None

        def close_shard() -> None:
            nonlocal shard
            if shard is not None:
                shard.commit()
                name = shard.final_path.rsplit("/", 1)[-1]
                shards.append(
                    ShardInfo(
                        path=name, records=shard.records, sha256=shard.sha.hexdigest(), bytes=shard.size
                    )
                )
                shard = None

        try:
            for result in results:
                if isinstance(result, Rejected):
                    rejects.write_line(result.model_dump_json())
                    reasons[result.reason] += 1
                    rejected_ids.add(result.record_id)
                    continue
                if shard is None:
                    shard = _HashingWriter(self.fs, self.path(stage, f"shard-{len(shards):05d}.jsonl"))
                shard.write_line(result.to_json())
                out_ids.add(result.id)
                if shard.records >= shard_size:
                    close_shard()
            close_shard()
            rejects.commit()
        except BaseException:
            # leave no temp files; the missing manifest already marks the stage unfinished
            for writer in (shard, rejects):
                if writer is not None:
                    writer.abort()
            raise

        records_out = sum(s.records for s in shards)
        manifest = StageManifest(
            stage=stage,
            key=key,
            records_in=records_in if records_in is not None else records_out + len(rejected_ids - out_ids),
            records_out=records_out,
            rejected_by_reason=dict(sorted(reasons.items())),
            records_rejected=len(rejected_ids),
            shards=shards,
            rejects_sha256=rejects.sha.hexdigest(),
            started_at=started,
            finished_at=datetime.now(UTC),
            metadata=metadata or {},
        )
        self.write_bytes_atomic(self.path(stage, MANIFEST), manifest.model_dump_json(indent=2).encode())
        return manifest

    def write_bytes_atomic(self, path: str, data: bytes) -> None:
        """Write through a temp name and a rename, so readers never see a partial file."""
        tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        with self.fs.open(tmp, "wb") as f:
            f.write(data)
        self.fs.mv(tmp, path)


def write_report(run: RunDir, stages: Sequence[str]) -> str:
    """Write `report.md` (a table of stage counts and one of reject reasons) and return its text.

    Stages without a manifest are listed as 'not finished' rather than skipped, so a partial run is visible.
    """
    lines = [
        f"# Run report: `{run.url}`",
        "",
        "| stage | status | in | out | rejected records | shards | finished at | key |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    reason_rows: list[str] = []
    for stage in stages:
        try:
            m = run.manifest(stage)
        except StageNotFinished:
            lines.append(f"| {stage} | not finished | | | | | | |")
            continue
        finished = m.finished_at.strftime("%Y-%m-%d %H:%M:%S")
        lines.append(
            f"| {stage} | finished | {m.records_in} | {m.records_out} | {m.records_rejected} "
            f"| {len(m.shards)} | {finished} | `{m.key[:12]}` |"
        )
        reason_rows += [
            f"| {stage} | `{reason}` | {count} |" for reason, count in m.rejected_by_reason.items()
        ]
    lines += ["", "## Reject reasons", ""]
    if reason_rows:
        lines += ["| stage | reason | count |", "|---|---|---:|", *reason_rows]
    else:
        lines.append("No rejects.")
    text = "\n".join(lines) + "\n"
    run.write_bytes_atomic(run.path(REPORT), text.encode())
    return text
