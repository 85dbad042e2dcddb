"""Read a Hugging Face dataset (Hub id or local folder) into canonical records (stage 'ingest').

The dataset is opened with `datasets.load_dataset(path, name, split=..., revision=...)`, so it works with a Hub
id, a local folder of parquet/JSON files, and offline (`HF_HUB_OFFLINE=1`) for local folders and cached Hub
datasets. Rows are read in Arrow format, so `Image` columns arrive as their stored `{"bytes", "path"}` and the
original PNG bytes go into the `ImageStore` untouched (never decoded to PIL and re-encoded).

Two row shapes (`cfg.shape`, or detected per row with 'auto'):

- switchyard (what `synth.publish` writes, config 'trajectories'): a `record` column with a `Trajectory` JSON and
  an `images` column (`List(Image)`) with the steps' screenshots in step order. Images are matched to the
  record's `ImageRef`s by content hash; a screenshot the record references that is neither in the row nor in
  the store -> `missing_image`. `publish` does not ship `next_screenshot` frames that are not also some step's
  screenshot (typically the last frame), so such a ref is cleared and its hash kept in the step's
  `metadata["unpublished_next_screenshot"]`. Records are otherwise passed through unchanged (ids, provenance).
- agentnet: AgentNet fields as columns (`task_id`, `instruction`, `traj` or AgentNetBench `steps`, ...), converted
  by `synth.sources.agentnet.convert_record`. A step's `image` may be an `Image` value (bytes), a file name
  under `cfg.image_dir`, or be given by a row-level `images` list aligned with the steps.

Usage:

    cfg = HFSourceConfig(path="me/switchyard-demo", name="trajectories", revision="<sha>")
    for result in read_hf(cfg, ImageStore("runs/x/images")):
        ...
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from synth.images import ImageStore
from synth.schema import ImageRef, Rejected, Trajectory
from synth.sources.agentnet import convert_record
from synth.sources.common import (
    HFSourceConfig,
    RecordError,
    guarded,
    limited,
    rejected,
    store_bytes,
    store_image,
)

_BATCH = 64


def read_hf(
    spec: HFSourceConfig | str,
    images: ImageStore,
    cfg: HFSourceConfig | None = None,
) -> Iterator[Trajectory | Rejected]:
    """Read one split of a Hugging Face dataset; `spec` is the config, or a Hub id / folder with `cfg` options."""
    import datasets  # heavy import, only paid by runs that read from the Hub

    if isinstance(spec, HFSourceConfig):
        cfg = spec
    elif cfg is None:
        cfg = HFSourceConfig(path=str(spec))
    else:
        cfg = cfg.model_copy(update={"path": str(spec)})
    ds = datasets.load_dataset(
        cfg.path,
        cfg.name,
        split=cfg.split,
        revision=cfg.revision,
        streaming=cfg.streaming,
        cache_dir=cfg.cache_dir,
    )
    # arrow format: Image columns stay as stored {"bytes", "path"} instead of being decoded to PIL
    batches = ds.with_format("arrow").iter(batch_size=_BATCH)
    rows = (row for batch in batches for row in batch.to_pylist())
    label = f"{cfg.path}{':' + cfg.name if cfg.name else ''}[{cfg.split}]"
    for rowno, row in limited(enumerate(rows), cfg.limit):
        where = f"{label} row {rowno}"
        shape = cfg.shape if cfg.shape != "auto" else _detect(row)
        if shape == "switchyard":
            yield _read_switchyard(row, where, images)
        elif shape == "agentnet":
            yield convert_record(row, where=where, cfg=cfg, load_image=_agentnet_loader(row, images, cfg))
        else:
            yield rejected(
                where, "malformed_record", f"{where}: unknown row shape, columns {sorted(row)} (set `shape`)"
            )


def _detect(row: dict[str, Any]) -> str | None:
    if "record" in row:
        return "switchyard"
    if "traj" in row or "steps" in row:
        return "agentnet"
    return None


# ---------------------------------------------------------------- switchyard shape


def _read_switchyard(row: dict[str, Any], where: str, images: ImageStore) -> Trajectory | Rejected:
    text = row.get("record")
    if not isinstance(text, str | bytes):
        return rejected(
            where, "malformed_record", f"{where}: `record` is {type(text).__name__}, not JSON text"
        )
    try:
        traj = Trajectory.model_validate_json(text)
    except ValidationError as exc:
        return rejected(
            where, "malformed_record", f"{where}: record is not a Trajectory: {exc.errors()[0]['msg']}"
        )
    return guarded(traj.id, where, lambda: _attach_images(traj, row.get("images"), images))


def _attach_images(traj: Trajectory, shots: Any, images: ImageStore) -> Trajectory:
    if shots is None:
        shots = []
    if not isinstance(shots, list):
        raise RecordError("malformed_record", f"`images` is {type(shots).__name__}, not a list")
    # published images follow the steps that have a screenshot, in order: position k -> that step's index
    shot_steps = [step.index for step in traj.steps if step.screenshot is not None]
    available: set[str] = set()
    for k, shot in enumerate(shots):
        step_index = shot_steps[k] if k < len(shot_steps) else k
        available.add(_store_feature(shot, images, step_index=step_index, what=f"images[{k}]").sha256)

    steps = []
    for step in traj.steps:
        shot = step.screenshot
        if shot is not None and shot.sha256 not in available and shot not in images:
            raise RecordError(
                "missing_image",
                f"step {step.index}: screenshot {shot.sha256} is not in the row's images",
                step.index,
            )
        nxt = step.next_screenshot
        if nxt is not None and nxt.sha256 not in available and nxt not in images:
            step = step.model_copy(
                update={
                    "next_screenshot": None,
                    "metadata": {**step.metadata, "unpublished_next_screenshot": nxt.sha256},
                }
            )
        steps.append(step)
    return traj.model_copy(update={"steps": steps})


# ---------------------------------------------------------------- agentnet shape


def _agentnet_loader(row: dict[str, Any], images: ImageStore, cfg: HFSourceConfig):
    row_images = row.get("images") if isinstance(row.get("images"), list) else None
    image_dir = Path(cfg.image_dir) if cfg.image_dir else None

    def load(image: Any, step_index: int) -> ImageRef:
        # precedence: bytes in the step itself, then the row's aligned images list, then a file name on disk
        if isinstance(image, dict):
            return _store_feature(image, images, step_index=step_index, what="step image")
        if row_images is not None and step_index < len(row_images) and row_images[step_index] is not None:
            return _store_feature(
                row_images[step_index], images, step_index=step_index, what=f"images[{step_index}]"
            )
        if isinstance(image, str) and image and image_dir is not None:
            return store_image(images, image_dir / image, step_index=step_index)
        raise RecordError(
            "missing_image",
            f"step {step_index}: image {image!r} has no bytes and no image_dir/aligned `images` to find it in",
            step_index,
        )

    return load


def _store_feature(value: Any, images: ImageStore, *, step_index: int, what: str) -> ImageRef:
    """Store an `Image` feature value ({"bytes", "path"}) byte for byte."""
    if not isinstance(value, dict):
        raise RecordError(
            "malformed_record",
            f"step {step_index}: {what} is {type(value).__name__}, not an Image",
            step_index,
        )
    data = value.get("bytes")
    if data:
        return store_bytes(images, data, step_index=step_index, what=what)
    path = value.get("path")
    if isinstance(path, str) and path:
        # Image features built from local files may hold only the path
        return store_image(images, Path(path), step_index=step_index, what=what)
    raise RecordError("missing_image", f"step {step_index}: {what} has neither bytes nor a path", step_index)
