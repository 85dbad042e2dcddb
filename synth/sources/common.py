"""Source configs and the one ingest entry point, `read_source(cfg, images)`.

Every reader turns an external dataset into canonical `Trajectory` records (absolute screen pixels, screenshots
in the `ImageStore`) or `Rejected` records with a snake_case reason — one result per input record, so that
`kept + rejected == records read` for every source. Reasons used by the readers:

    malformed_record         the record (or JSON line) does not have the expected shape
    empty_trajectory         a record with no steps
    missing_image            a referenced screenshot file / store entry does not exist
    corrupt_image            the screenshot bytes do not decode as an image
    unparsable_action        an action code string the parser does not understand
    coordinate_out_of_range  a coordinate outside its coordinate space (e.g. x=1.7 in [0, 1])
    inconsistent_screen_size screenshots of one record have different sizes (coordinates would be ambiguous)
    missing_instruction      no task instruction could be found (OSWorld runs)
    run_error                the run aborted with an error line in its log (OSWorld runs)

Usage:

    from synth.images import ImageStore
    from synth.sources.common import SourceConfig, read_source
    from pydantic import TypeAdapter

    cfg = TypeAdapter(SourceConfig).validate_python({"kind": "agentnet", "path": "agentnet_ubuntu_5k.jsonl"})
    for result in read_source(cfg, ImageStore("runs/x/images")):
        ...
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from synth import __version__ as synth_version
from synth.actions import ActionParseError, parse_code
from synth.coords import CoordinateOutOfRange, CoordSpace
from synth.images import CorruptImage, ImageStore
from synth.schema import Action, ImageRef, Provenance, Rejected, Screen, Trajectory, config_hash

STAGE = "ingest"


# ---------------------------------------------------------------- configs


class _SourceBase(BaseModel):
    # forbid: a misspelt option in a run config must fail loudly, not be ignored
    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        description="Where the data is: a file, a folder or a glob (see each kind). Relative paths are resolved "
        "against the working directory."
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description="Read at most this many input records (kept or rejected); None reads everything. Use it for "
        "smoke runs: cost is linear in the number of records.",
    )
    dataset: str | None = Field(
        default=None,
        description="Name stored in `Trajectory.source.dataset`; None uses the kind's default name.",
    )


class _ScreenOverrides(BaseModel):
    screen: Screen | None = Field(
        default=None,
        description="Screen size the record's coordinates refer to. None takes it from the first screenshot of "
        "each record (and then requires all screenshots of a record to have that size).",
    )
    coord_space: CoordSpace | None = Field(
        default=None,
        description="Coordinate space of the source's action code; None uses the kind's native space "
        "(AgentNet: normalized [0,1]; OSWorld: absolute pixels). Converted to absolute pixels at ingest.",
    )


class AgentNetSourceConfig(_SourceBase, _ScreenOverrides):
    """AgentNet / OpenCUA trajectories (`agentnet_ubuntu_5k.jsonl`, `agentnet_win_mac_18k.jsonl`) or AgentNetBench
    task files (`{task_id, high_level_task_description, steps[...]}`)."""

    kind: Literal["agentnet"] = "agentnet"
    image_dir: str | None = Field(
        default=None,
        description="Folder holding the screenshots named in each step's `image`. None: an `images/` folder next "
        "to the data file.",
    )
    instruction_field: Literal["instruction", "natural_language_task", "actual_task"] = Field(
        default="instruction",
        description="Which task text becomes `Trajectory.instruction` (falls back to `instruction` when the "
        "chosen field is absent). The others are kept in `metadata`. AgentNetBench files always use "
        "`high_level_task_description`.",
    )
    platform: str = Field(
        default="linux",
        description="Value of `Trajectory.platform`; AgentNet files are per OS (ubuntu vs win_mac), records do "
        "not say it.",
    )


class OSWorldSourceConfig(_SourceBase, _ScreenOverrides):
    """OSWorld result folders: `<...>/<domain>/<example_id>/{traj.jsonl, step_*.png, result.txt}`."""

    kind: Literal["osworld"] = "osworld"
    examples_dir: str | None = Field(
        default=None,
        description="OSWorld `evaluation_examples/examples` folder; the instruction is read from "
        "`<examples_dir>/<domain>/<example_id>.json`. None: use `instruction.txt` or an `[Instruction]: ...` line "
        "of `runtime.log` in the run folder.",
    )
    success_threshold: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="A run counts as a success when its result.txt score is at least this (OSWorld scores lie in "
        "[0, 1]; most tasks are binary).",
    )
    platform: str = Field(default="linux", description="Value of `Trajectory.platform`.")


class NativeSourceConfig(_SourceBase):
    """switchyard's own JSONL (`Trajectory.to_json()` per line), e.g. a previous run's stage shards."""

    kind: Literal["native"] = "native"
    image_dir: str | None = Field(
        default=None,
        description="An image store folder (`<sha[:2]>/<sha>.png`, or flat `<sha>.png`) to import referenced "
        "screenshots from when they are not yet in the run's store. None: they must already be there.",
    )


class HFSourceConfig(_SourceBase, _ScreenOverrides):
    """A Hugging Face dataset (Hub id or local folder), read with `datasets.load_dataset`."""

    kind: Literal["hf"] = "hf"
    name: str | None = Field(
        default=None, description="Dataset configuration name (`load_dataset(name=...)`)."
    )
    split: str = Field(default="train", description="Split to read.")
    revision: str | None = Field(
        default=None,
        description="Git revision (branch, tag or commit sha) on the Hub; pin it for reproducibility.",
    )
    streaming: bool = Field(
        default=False,
        description="Stream rows instead of downloading/preparing the whole split first; use for large Hub "
        "datasets when you only need `limit` rows.",
    )
    cache_dir: str | None = Field(
        default=None,
        description="`datasets` cache folder (downloads and prepared Arrow files); None uses HF_DATASETS_CACHE / "
        "~/.cache/huggingface/datasets. Preparing costs about one copy of the split on disk.",
    )
    shape: Literal["auto", "switchyard", "agentnet"] = Field(
        default="auto",
        description="Column layout: 'switchyard' (a `record` JSON column + `images` list), 'agentnet' (AgentNet "
        "fields as columns, images as Image features or file names), or 'auto' to detect it from the columns.",
    )
    image_dir: str | None = Field(
        default=None,
        description="AgentNet shape only: folder for screenshots given as file names instead of image bytes.",
    )
    instruction_field: Literal["instruction", "natural_language_task", "actual_task"] = Field(
        default="instruction", description="AgentNet shape only: see the agentnet source."
    )
    platform: str = Field(default="linux", description="AgentNet shape only: value of `Trajectory.platform`.")


SourceConfig = Annotated[
    AgentNetSourceConfig | OSWorldSourceConfig | NativeSourceConfig | HFSourceConfig,
    Field(discriminator="kind"),
]


def read_source(cfg: SourceConfig, images: ImageStore) -> Iterator[Trajectory | Rejected]:
    """Read one configured source into canonical trajectories and rejects (stage 'ingest')."""
    # imported here: the reader modules import the config classes above
    from synth.sources.agentnet import read_agentnet
    from synth.sources.hf import read_hf
    from synth.sources.native import read_native
    from synth.sources.osworld import read_osworld

    readers: dict[str, Callable[..., Iterator[Trajectory | Rejected]]] = {
        "agentnet": read_agentnet,
        "osworld": read_osworld,
        "native": read_native,
        "hf": read_hf,
    }
    return readers[cfg.kind](cfg.path, images, cfg)


# ---------------------------------------------------------------- helpers shared by the readers


class RecordError(Exception):
    """Raised while converting one record; the reader's loop turns it into a `Rejected`."""

    def __init__(self, reason: str, detail: str, step_index: int | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.step_index = step_index


def rejected(record_id: str, reason: str, detail: str, step_index: int | None = None) -> Rejected:
    return Rejected(record_id=record_id, stage=STAGE, reason=reason, detail=detail, step_index=step_index)


def guarded(record_id: str, where: str, convert: Callable[[], Trajectory]) -> Trajectory | Rejected:
    """Run one record's conversion; a `RecordError` or a schema violation becomes a `Rejected`.

    `where` (file and line, run folder, dataset row) prefixes the reject's detail so a human can find the record.
    """
    try:
        return convert()
    except RecordError as exc:
        return rejected(record_id, exc.reason, f"{where}: {exc.detail}", exc.step_index)
    except ValidationError as exc:
        # the source produced something the canonical schema cannot hold (e.g. a wrong type in a field)
        return rejected(record_id, "malformed_record", f"{where}: {_short(str(exc))}")
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # odd values deep in third-party records (a list where a string was expected, ...) must not stop a
        # 20k-record ingest; the exception type in the detail keeps a real bug visible in the reject counts
        return rejected(record_id, "malformed_record", f"{where}: {type(exc).__name__}: {_short(str(exc))}")


def expand_paths(path_or_glob: str | Path, suffixes: tuple[str, ...] = (".jsonl", ".json")) -> list[Path]:
    """Files named by a path, a folder (its files with `suffixes`, recursively) or a glob, sorted."""
    path = Path(path_or_glob)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in suffixes)
    if path.exists():
        return [path]
    matches = sorted(Path(p) for p in glob.glob(str(path_or_glob), recursive=True))
    if not matches:
        raise FileNotFoundError(f"no input matches {str(path_or_glob)!r}")
    return matches


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) per non-blank line; a line that is not JSON yields its `JSONDecodeError`."""
    with path.open("rb") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield lineno, exc


def store_image(images: ImageStore, path: Path, *, step_index: int, what: str = "screenshot") -> ImageRef:
    """Put one screenshot file into the store, raising `RecordError` if it is missing or corrupt."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise RecordError(
            "missing_image", f"step {step_index}: {what} {str(path)!r} does not exist", step_index
        ) from exc
    except OSError as exc:
        raise RecordError(
            "missing_image", f"step {step_index}: cannot read {what} {str(path)!r}: {exc}", step_index
        ) from exc
    return store_bytes(images, data, step_index=step_index, what=f"{what} {str(path)!r}")


def store_bytes(images: ImageStore, data: bytes, *, step_index: int, what: str) -> ImageRef:
    try:
        return images.put(data)
    except CorruptImage as exc:
        raise RecordError("corrupt_image", f"step {step_index}: {what}: {exc}", step_index) from exc


def screen_of(ref: ImageRef) -> Screen:
    if not ref.width or not ref.height:
        raise RecordError("corrupt_image", f"screenshot {ref.sha256} has no size")
    return Screen(width=ref.width, height=ref.height)


def check_screen(ref: ImageRef, screen: Screen, *, step_index: int) -> None:
    """Screenshots of a record must share one size when that size defines the coordinate frame."""
    if (ref.width, ref.height) != (screen.width, screen.height):
        raise RecordError(
            "inconsistent_screen_size",
            f"step {step_index}: screenshot is {ref.width}x{ref.height}, first screenshot was "
            f"{screen.width}x{screen.height}",
            step_index,
        )


def parse_action(code: Any, *, screen: Screen, space: CoordSpace, step_index: int) -> Action:
    """Parse a pyautogui / `computer.*` code string into an `Action` in absolute pixels of `screen`."""
    if not isinstance(code, str) or not code.strip():
        raise RecordError("unparsable_action", f"step {step_index}: action code is {code!r}", step_index)
    try:
        return parse_code(code, screen=screen, space=space)
    except CoordinateOutOfRange as exc:
        raise RecordError(
            "coordinate_out_of_range", f"step {step_index}: {exc} in {_short(code, 200)!r}", step_index
        ) from exc
    except ActionParseError as exc:
        if isinstance(exc.__cause__, CoordinateOutOfRange):
            raise RecordError(
                "coordinate_out_of_range", f"step {step_index}: {exc} in {_short(code, 200)!r}", step_index
            ) from exc
        raise RecordError(
            "unparsable_action", f"step {step_index}: {exc} in {_short(code, 200)!r}", step_index
        ) from exc


def ingest_provenance(cfg: BaseModel) -> list[Provenance]:
    return [Provenance(stage=STAGE, version=synth_version, params_hash=config_hash(cfg))]


def trajectory_id(dataset: str, record_id: str) -> str:
    """Stable id of an ingested record: the same source record always gets the same id."""
    return f"{dataset}-{hashlib.sha256(record_id.encode()).hexdigest()[:16]}"


def limited(items: Iterable[Any], limit: int | None) -> Iterator[Any]:
    for count, item in enumerate(items):
        if limit is not None and count >= limit:
            return
        yield item


def _short(text: str, size: int = 500) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def source_fingerprint(cfg: SourceConfig) -> str:
    """A cheap content key of a source's input: the config plus (path, size, mtime) of every local input file.

    Hashing file metadata instead of bytes keeps resume checks instant on large inputs; an edited file changes
    its size or mtime and so invalidates the runs that read it. Hub datasets are keyed by id and revision.
    """
    digest = hashlib.sha256(cfg.model_dump_json().encode())
    paths = sorted(map(Path, glob.glob(cfg.path))) if glob.has_magic(cfg.path) else [Path(cfg.path)]
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file.exists():
                stat = file.stat()
                digest.update(f"{file}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()
