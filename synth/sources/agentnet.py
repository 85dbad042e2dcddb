"""Read AgentNet / OpenCUA trajectories into canonical records (stage 'ingest').

Two published shapes are accepted, detected per record:

- AgentNet (HF `xlangai/AgentNet`, `agentnet_ubuntu_5k.jsonl` / `agentnet_win_mac_18k.jsonl`, and the raw input
  of OpenCUA's CoT generator), one JSON object per line:
  `{task_id, instruction, natural_language_task?, actual_task?, task_completed?, alignment_score?,
  efficiency_score?, task_difficulty?, reason?, traj: [{index, image, value: {code, observation?, thought?,
  action?, last_step_correct?, last_step_redundant?, reflection?}}]}`.
- AgentNetBench task files (OpenCUA `evaluation/agentnetbench`): `{task_id, user_task_description,
  high_level_task_description, steps: [{step_num, image, action, milestone, inner_monologue: {observation,
  thought, low_level_instruction}, ground_truth_actions}]}`. Benchmark files hold a *subset* of a trajectory's
  steps (step_num has gaps); `next_screenshot` is only linked across consecutive step numbers.

Mapping:
- `code` (pyautogui / `computer.*` with coordinates in [0, 1]) is parsed by `synth.actions.parse_code` into
  absolute pixels of the record's screen.
- Screen size: AgentNet images carry their own size (they are the recorded screens, not a fixed resolution), so
  the screen is the first screenshot's size, and every screenshot of the record must match it
  (`inconsistent_screen_size` otherwise). `cfg.screen` overrides this and skips the check.
- `thought` -> `Step.thought`; the natural-language `observation` and `action`/`low_level_instruction` go to
  `Step.metadata["observation_description"]` / `["action_description"]` (kept as evidence for the CLI
  rewrite), `reflection`, `last_step_correct`, `last_step_redundant`, `milestone` under their own names, and
  the step's original index under `source_index`.
- `next_screenshot` of step i is the screenshot of step i+1.
- `task_completed` (an LLM summarizer's verdict) -> `Outcome(success=..., verifier="agentnet_summarizer")`;
  the other record-level fields are kept in `Trajectory.metadata`.

Images are looked up by file name in `cfg.image_dir` (default: `images/` next to the data file).

Usage:

    from synth.images import ImageStore
    from synth.sources.agentnet import read_agentnet
    for result in read_agentnet("AgentNet/agentnet_ubuntu_5k.jsonl", ImageStore("runs/x/images"),
                                AgentNetSourceConfig(path="...", image_dir="AgentNet/ubuntu_images")):
        ...
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.coords import CoordSpace
from synth.images import ImageStore
from synth.schema import ImageRef, Outcome, Rejected, Screen, Source, Step, Trajectory
from synth.sources.common import (
    AgentNetSourceConfig,
    HFSourceConfig,
    RecordError,
    check_screen,
    expand_paths,
    guarded,
    ingest_provenance,
    iter_json_lines,
    limited,
    parse_action,
    rejected,
    screen_of,
    store_image,
    trajectory_id,
)

DATASET = "agentnet"

# step `value` keys renamed on the way into Step.metadata: `observation` / `action` are natural-language
# descriptions here, not the observation_text (stdout) or the Action of the canonical record
_VALUE_RENAMES = {"observation": "observation_description", "action": "action_description"}
_MONOLOGUE_RENAMES = {"observation": "observation_description", "low_level_instruction": "action_description"}
_RECORD_SKIP = {"traj", "steps", "task_id", "images"}

# Resolves a step's `image` field (file name, or image bytes in HF rows) to a stored ImageRef.
ImageLoader = Callable[[Any, int], ImageRef]


def read_agentnet(
    path_or_spec: str | Path | AgentNetSourceConfig,
    images: ImageStore,
    cfg: AgentNetSourceConfig | None = None,
) -> Iterator[Trajectory | Rejected]:
    """Read AgentNet JSONL files (or AgentNetBench JSON files): a file, a folder or a glob."""
    if isinstance(path_or_spec, AgentNetSourceConfig):
        cfg = path_or_spec
    elif cfg is None:
        cfg = AgentNetSourceConfig(path=str(path_or_spec))
    else:
        cfg = cfg.model_copy(update={"path": str(path_or_spec)})
    for where, value, image_dir in limited(_raw_records(cfg), cfg.limit):
        if isinstance(value, Exception):
            yield rejected(where, "malformed_record", f"{where}: not valid JSON: {value}")
            continue

        def load(image: Any, step_index: int, image_dir: Path = image_dir) -> ImageRef:
            if not isinstance(image, str) or not image:
                raise RecordError("missing_image", f"step {step_index}: image field is {image!r}", step_index)
            return store_image(images, image_dir / image, step_index=step_index)

        yield convert_record(value, where=where, cfg=cfg, load_image=load)


def _raw_records(cfg: AgentNetSourceConfig) -> Iterator[tuple[str, Any, Path]]:
    """(where, parsed record or JSON error, image folder) for every record of every input file."""
    for file in expand_paths(cfg.path):
        image_dir = Path(cfg.image_dir) if cfg.image_dir else file.parent / "images"
        if file.suffix == ".jsonl":
            for lineno, value in iter_json_lines(file):
                yield f"{file.name}:{lineno}", value, image_dir
            continue
        # a .json file holds one record (AgentNetBench) or a list of records
        try:
            value = json.loads(file.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            yield file.name, exc, image_dir
            continue
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield f"{file.name}[{i}]", item, image_dir
        else:
            yield file.name, value, image_dir


def convert_record(
    raw: Any, *, where: str, cfg: AgentNetSourceConfig | HFSourceConfig, load_image: ImageLoader
) -> Trajectory | Rejected:
    """One AgentNet / AgentNetBench record -> Trajectory, or Rejected naming `where` and the step."""
    record_id = str(raw.get("task_id") or where) if isinstance(raw, dict) else where
    return guarded(record_id, where, lambda: _convert(raw, cfg=cfg, load_image=load_image))


@dataclass
class _RawStep:
    source_index: int
    image: Any
    code: Any
    thought: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


def _convert(raw: Any, *, cfg: AgentNetSourceConfig | HFSourceConfig, load_image: ImageLoader) -> Trajectory:
    if not isinstance(raw, dict):
        raise RecordError("malformed_record", f"record is a {type(raw).__name__}, not an object")
    task_id = raw.get("task_id")
    if not isinstance(task_id, str | int) or task_id == "":
        raise RecordError("malformed_record", f"task_id is {task_id!r}")
    if "steps" in raw and "traj" not in raw:
        instruction_key = "high_level_task_description"
        steps = _bench_steps(raw["steps"])
    else:
        instruction_key = cfg.instruction_field if raw.get(cfg.instruction_field) else "instruction"
        steps = _traj_steps(raw.get("traj"))
    instruction = raw.get(instruction_key)
    if not isinstance(instruction, str) or not instruction.strip():
        raise RecordError("malformed_record", f"{instruction_key} is {instruction!r}")
    if not steps:
        raise RecordError("empty_trajectory", "the record has no steps")

    shots = [load_image(step.image, i) for i, step in enumerate(steps)]
    screen = cfg.screen
    if screen is None:
        screen = screen_of(shots[0])
        for i, ref in enumerate(shots):
            check_screen(ref, screen, step_index=i)
    space = cfg.coord_space or CoordSpace.normalized()

    out: list[Step] = []
    for i, step in enumerate(steps):
        consecutive = i + 1 < len(steps) and steps[i + 1].source_index == step.source_index + 1
        out.append(
            Step(
                index=i,
                screenshot=shots[i],
                thought=step.thought,
                action=parse_action(step.code, screen=screen, space=space, step_index=i),
                next_screenshot=shots[i + 1] if consecutive else None,
                metadata={"source_index": step.source_index, **step.metadata},
            )
        )

    metadata = {k: v for k, v in raw.items() if k not in _RECORD_SKIP and k != instruction_key}
    completed = raw.get("task_completed")
    dataset = cfg.dataset or DATASET
    return Trajectory(
        id=trajectory_id(dataset, str(task_id)),
        source=Source(dataset=dataset, record_id=str(task_id)),
        instruction=instruction,
        platform=cfg.platform,
        screen=screen,
        steps=out,
        outcome=Outcome(success=completed, verifier="agentnet_summarizer")
        if isinstance(completed, bool)
        else None,
        provenance=ingest_provenance(cfg),
        metadata={**metadata, "coord_space": space.describe(), "screen_from": _screen_from(cfg.screen)},
    )


def _screen_from(override: Screen | None) -> str:
    return "config" if override is not None else "first_screenshot"


def _traj_steps(traj: Any) -> list[_RawStep]:
    if traj is None:
        return []
    if not isinstance(traj, list):
        raise RecordError("malformed_record", f"traj is a {type(traj).__name__}, not a list")
    steps = []
    for pos, item in enumerate(traj):
        if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
            raise RecordError(
                "malformed_record", f"step {pos}: expected {{image, value: {{code, ...}}}}", pos
            )
        value = item["value"]
        index = item.get("index", pos)
        steps.append(
            _RawStep(
                source_index=index if isinstance(index, int) else pos,
                image=item.get("image"),
                code=value.get("code"),
                thought=_text(value.get("thought")),
                metadata={
                    _VALUE_RENAMES.get(k, k): v
                    for k, v in value.items()
                    if k not in ("code", "thought") and v is not None
                },
            )
        )
    return steps


def _bench_steps(items: Any) -> list[_RawStep]:
    if not isinstance(items, list):
        raise RecordError("malformed_record", f"steps is a {type(items).__name__}, not a list")
    steps = []
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordError("malformed_record", f"step {pos}: expected an object", pos)
        monologue = item.get("inner_monologue") or {}
        if not isinstance(monologue, dict):
            raise RecordError("malformed_record", f"step {pos}: inner_monologue is not an object", pos)
        step_num = item.get("step_num", pos)
        metadata = {
            _MONOLOGUE_RENAMES.get(k, k): v for k, v in monologue.items() if k != "thought" and v is not None
        }
        if "milestone" in item:
            metadata["milestone"] = item["milestone"]
        steps.append(
            _RawStep(
                source_index=step_num if isinstance(step_num, int) else pos,
                image=item.get("image"),
                code=item.get("action"),
                thought=_text(monologue.get("thought")),
                metadata=metadata,
            )
        )
    return steps


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
