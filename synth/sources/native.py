"""Read and write switchyard's own JSONL: one `Trajectory.to_json()` per line (stage 'ingest').

`read_native` validates each line against the canonical schema (a line that is not JSON or not a valid
Trajectory -> `Rejected(record_id="<file>:<line>", reason="malformed_record")`) and checks that every screenshot
it references is in the run's `ImageStore`, importing it from `cfg.image_dir` (another store, or a flat folder
of `<sha256>.png`) when it is not (absent -> `missing_image`; bytes that do not decode or do not hash to the
referenced sha256 -> `corrupt_image`). Records are passed through unchanged — reading our own format is not a
transformation, so no provenance entry is added and ids are kept.

Speed: lines are validated straight from bytes by pydantic-core, and each image hash is checked on disk once per
reader, so 10k trajectories of 10 steps ingest in a few seconds (tests/synth/sources/test_native.py measures it).

Usage:

    n = write_native(records, "out/trajectories.jsonl")
    for result in read_native("out/*.jsonl", ImageStore("runs/x/images")):
        ...
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from synth.images import CorruptImage, ImageStore
from synth.schema import ImageRef, Rejected, Trajectory
from synth.sources.common import NativeSourceConfig, RecordError, expand_paths, limited, rejected


def read_native(
    path_or_glob: str | Path | NativeSourceConfig,
    images: ImageStore,
    cfg: NativeSourceConfig | None = None,
) -> Iterator[Trajectory | Rejected]:
    """Read switchyard JSONL files (a file, a folder of `*.jsonl`, or a glob) in sorted order."""
    if isinstance(path_or_glob, NativeSourceConfig):
        cfg = path_or_glob
    elif cfg is None:
        cfg = NativeSourceConfig(path=str(path_or_glob))
    else:
        cfg = cfg.model_copy(update={"path": str(path_or_glob)})
    checker = _ImageChecker(images, Path(cfg.image_dir) if cfg.image_dir else None)
    for where, line in limited(_lines(cfg.path), cfg.limit):
        try:
            traj = Trajectory.model_validate_json(line)
        except ValidationError as exc:
            yield rejected(where, "malformed_record", f"{where}: {_first_error(exc)}")
            continue
        try:
            checker.check(traj)
        except RecordError as exc:
            yield rejected(traj.id, exc.reason, f"{where}: {exc.detail}", exc.step_index)
            continue
        yield traj


def write_native(records: Iterable[Trajectory], path: str | os.PathLike[str]) -> int:
    """Write trajectories as JSON lines (through a temporary file and a rename); returns how many."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    count = 0
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for record in records:
                if not isinstance(record, Trajectory):
                    raise TypeError(f"write_native takes Trajectory records, got {type(record).__name__}")
                handle.write(record.to_json())
                handle.write("\n")
                count += 1
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return count


def _lines(path: str) -> Iterator[tuple[str, bytes]]:
    for file in expand_paths(path, suffixes=(".jsonl",)):
        with file.open("rb") as handle:
            for lineno, line in enumerate(handle, start=1):
                if line.strip():
                    yield f"{file.name}:{lineno}", line


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    location = ".".join(str(part) for part in first["loc"]) or "record"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{location}: {first['msg']}{more}"


class _ImageChecker:
    """Checks that referenced screenshots are in the store, importing them from a second folder if given."""

    def __init__(self, images: ImageStore, import_from: Path | None):
        self.images = images
        self.import_from = import_from
        self.present: set[str] = set()  # hashes already confirmed in `images`: one stat per image per reader

    def check(self, traj: Trajectory) -> None:
        for step in traj.steps:
            for what, ref in (("screenshot", step.screenshot), ("next_screenshot", step.next_screenshot)):
                if ref is not None and ref.sha256 not in self.present:
                    self._ensure(ref, f"step {step.index} {what}", step.index)

    def _ensure(self, ref: ImageRef, what: str, step_index: int) -> None:
        if ref in self.images:
            self.present.add(ref.sha256)
            return
        source = self._source_file(ref.sha256)
        if source is None:
            raise RecordError("missing_image", f"{what} {ref.sha256} is not in the image store", step_index)
        try:
            stored = self.images.put(source.read_bytes())
        except CorruptImage as exc:
            raise RecordError("corrupt_image", f"{what} {str(source)!r}: {exc}", step_index) from exc
        if stored.sha256 != ref.sha256:
            raise RecordError(
                "corrupt_image",
                f"{what} {str(source)!r} hashes to {stored.sha256}, not {ref.sha256}",
                step_index,
            )
        self.present.add(ref.sha256)

    def _source_file(self, sha: str) -> Path | None:
        if self.import_from is None:
            return None
        for candidate in (self.import_from / sha[:2] / f"{sha}.png", self.import_from / f"{sha}.png"):
            if candidate.is_file():
                return candidate
        return None
