"""Read OSWorld result folders into canonical records (stage 'ingest').

OSWorld's `lib_run_single.run_single_example` writes one folder per task,
`<result_dir>/<action_space>/<observation_type>/<model>/<domain>/<example_id>/`, holding:

- `traj.jsonl`: one line per executed action: `{step_num, action_timestamp, action, response?, reward, done,
  info, screenshot_file}` (`response` and `natural_language_action` only in newer versions). `action` is a
  pyautogui code string in absolute screen pixels or one of WAIT / DONE / FAIL. One model response may yield
  several actions, which then share a `step_num`; each action is one canonical step and the response becomes
  the `thought` of the first of them.
- `step_<n>_<timestamp>.png` (or `step_<n>.png`): the screen AFTER action n, named by `screenshot_file`. Newer
  versions also save the initial screen as `step_0.png`. So step i's `screenshot` is the previous action's
  frame (step 0: `step_0.png` if present, else none) and its `next_screenshot` is its own `screenshot_file`.
  When `screenshot_file` is absent but `step_<n>.png` exists (OSWorld's OpenCUA runner writes the latter and
  logs the former) that file is used and the step is marked `metadata["screenshot_fallback"]`.
- `result.txt`: the evaluator score in [0, 1] -> `Outcome(score, success=score >= cfg.success_threshold,
  verifier="osworld")`. A run without it (killed before evaluation) gets no outcome.
- `{"Error": ...}` lines, written when a run hits a time limit or exception -> `Rejected(reason="run_error")`.

The task instruction is not in the folder. It is taken, in this order, from
`<cfg.examples_dir>/<domain>/<example_id>.json` (OSWorld `evaluation_examples/examples`), from `instruction.txt`
in the run folder (written by several OSWorld runners), or from an `[Instruction]: ...` line of the run
folder's `runtime.log`; none of them -> `Rejected(reason="missing_instruction")`.

The screen size is the first screenshot's (OSWorld's VM default is 1920x1080), or `cfg.screen`.
`Trajectory.task_id` is the example id, so verification can find the task spec.

Usage:

    for result in read_osworld("results/pyautogui/screenshot/gpt-4o", ImageStore("runs/x/images"),
                               OSWorldSourceConfig(path="...", examples_dir="evaluation_examples/examples")):
        ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from synth.coords import CoordSpace
from synth.images import ImageStore
from synth.schema import ImageRef, Outcome, Rejected, Source, Step, Trajectory
from synth.sources.common import (
    OSWorldSourceConfig,
    RecordError,
    check_screen,
    guarded,
    ingest_provenance,
    iter_json_lines,
    limited,
    parse_action,
    screen_of,
    store_image,
    trajectory_id,
)

DATASET = "osworld-run"
TRAJ_FILE = "traj.jsonl"
_INSTRUCTION_LINE = re.compile(r"\[Instruction\]:\s*(.+)")


def read_osworld(
    path_or_spec: str | Path | OSWorldSourceConfig,
    images: ImageStore,
    cfg: OSWorldSourceConfig | None = None,
) -> Iterator[Trajectory | Rejected]:
    """Read every run folder (a folder with `traj.jsonl`) at or below the given path, sorted by path."""
    if isinstance(path_or_spec, OSWorldSourceConfig):
        cfg = path_or_spec
    elif cfg is None:
        cfg = OSWorldSourceConfig(path=str(path_or_spec))
    else:
        cfg = cfg.model_copy(update={"path": str(path_or_spec)})
    root = Path(cfg.path)
    if (root / TRAJ_FILE).is_file():
        runs = [root]
        base = root.parent.parent
    elif root.is_dir():
        runs = sorted(p.parent for p in root.rglob(TRAJ_FILE))
        base = root
    else:
        raise FileNotFoundError(f"no OSWorld run folder at {str(root)!r}")
    for run_dir in limited(runs, cfg.limit):
        record_id = run_dir.relative_to(base).as_posix()
        yield guarded(
            record_id,
            record_id,
            lambda run_dir=run_dir, record_id=record_id: _convert(run_dir, record_id, images, cfg),
        )


def _convert(run_dir: Path, record_id: str, images: ImageStore, cfg: OSWorldSourceConfig) -> Trajectory:
    domain, example_id = run_dir.parent.name, run_dir.name
    lines: list[tuple[int, dict[str, Any]]] = []
    initial_file: str | None = "step_0.png" if (run_dir / "step_0.png").is_file() else None
    human_instruction: str | None = None
    ignored: list[dict[str, Any]] = []
    for lineno, value in iter_json_lines(run_dir / TRAJ_FILE):
        if isinstance(value, Exception):
            raise RecordError("malformed_record", f"{TRAJ_FILE} line {lineno}: not valid JSON: {value}")
        if not isinstance(value, dict):
            raise RecordError("malformed_record", f"{TRAJ_FILE} line {lineno}: not an object")
        if "Error" in value:
            raise RecordError("run_error", f"{TRAJ_FILE} line {lineno}: {value['Error']}")
        if "initial_state" in value and "action" not in value:
            # the human-run variant logs the instruction and the first frame instead of actions
            initial_file = value.get("initial_state") or initial_file
            human_instruction = value.get("instruction")
            continue
        if value.get("action") is None:
            # a runner that got no action from the model logs an action-less line before stopping
            ignored.append({"line": lineno, "reason": "no action", "info": value.get("info")})
            continue
        lines.append((lineno, value))
    if not lines:
        raise RecordError("empty_trajectory", f"{TRAJ_FILE} has no actions")

    instruction, task = _instruction(run_dir, domain, example_id, cfg, human_instruction)

    # frames: index 0 = initial screen (may be absent), index k = screen after action k
    frames: list[ImageRef | None] = [
        store_image(images, run_dir / initial_file, step_index=0) if initial_file else None
    ]
    fallbacks: set[int] = set()
    for i, (lineno, line) in enumerate(lines):
        name = line.get("screenshot_file")
        path = run_dir / name if isinstance(name, str) and name else None
        if path is None or not path.is_file():
            alternative = run_dir / f"step_{line.get('step_num')}.png"
            if alternative.is_file():
                path = alternative
                fallbacks.add(i)
            elif path is None:
                raise RecordError(
                    "missing_image", f"step {i} ({TRAJ_FILE} line {lineno}): no screenshot_file", i
                )
        frames.append(store_image(images, path, step_index=i, what="screenshot after the action"))

    screen = cfg.screen
    if screen is None:
        first = next((f for f in frames if f is not None), None)
        if first is None:
            raise RecordError("missing_image", "no screenshot to take the screen size from (set `screen`)")
        screen = screen_of(first)
        for k, frame in enumerate(frames):
            if frame is not None:
                check_screen(frame, screen, step_index=max(k - 1, 0))
    space = cfg.coord_space or CoordSpace.absolute()

    steps: list[Step] = []
    previous_step_num: Any = object()
    for i, (lineno, line) in enumerate(lines):
        action = line["action"]
        if not isinstance(action, str):
            raise RecordError(
                "unparsable_action",
                f"step {i} ({TRAJ_FILE} line {lineno}): action is a {type(action).__name__} "
                f"(only the pyautogui action space is supported): {str(action)[:200]!r}",
                i,
            )
        step_num = line.get("step_num")
        response = line.get("response")
        first_of_response = step_num != previous_step_num
        previous_step_num = step_num
        metadata: dict[str, Any] = {
            "step_num": step_num,
            "action_timestamp": line.get("action_timestamp"),
            "reward": line.get("reward"),
            "done": line.get("done"),
            "info": line.get("info"),
        }
        if isinstance(line.get("natural_language_action"), str):
            metadata["action_description"] = line["natural_language_action"]
        if response is not None and not isinstance(response, str) and first_of_response:
            metadata["response"] = response
        if i in fallbacks:
            metadata["screenshot_fallback"] = True
        steps.append(
            Step(
                index=i,
                screenshot=frames[i],
                thought=response if isinstance(response, str) and response and first_of_response else None,
                action=parse_action(action, screen=screen, space=space, step_index=i),
                next_screenshot=frames[i + 1],
                metadata=metadata,
            )
        )

    metadata = {
        "domain": domain,
        "example_id": example_id,
        "run_dir": str(run_dir),
        "coord_space": space.describe(),
        "screen_from": "config" if cfg.screen is not None else "first_screenshot",
    }
    for key in ("snapshot", "related_apps", "source"):
        if key in task:
            metadata[f"task_{key}"] = task[key]
    if ignored:
        metadata["ignored_lines"] = ignored
    dataset = cfg.dataset or DATASET
    return Trajectory(
        id=trajectory_id(dataset, record_id),
        source=Source(dataset=dataset, record_id=record_id),
        instruction=instruction,
        platform=cfg.platform,
        screen=screen,
        task_id=example_id,
        steps=steps,
        outcome=_outcome(run_dir, cfg),
        provenance=ingest_provenance(cfg),
        metadata=metadata,
    )


def _instruction(
    run_dir: Path, domain: str, example_id: str, cfg: OSWorldSourceConfig, human_instruction: str | None
) -> tuple[str, dict[str, Any]]:
    """(instruction, task JSON or {}) from the examples folder, instruction.txt, runtime.log or the log line."""
    tried = []
    if cfg.examples_dir:
        task_file = Path(cfg.examples_dir) / domain / f"{example_id}.json"
        tried.append(str(task_file))
        if task_file.is_file():
            try:
                task = json.loads(task_file.read_bytes())
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise RecordError(
                    "malformed_record", f"task file {str(task_file)!r} is not JSON: {exc}"
                ) from exc
            if (
                isinstance(task, dict)
                and isinstance(task.get("instruction"), str)
                and task["instruction"].strip()
            ):
                return task["instruction"], task
            raise RecordError("missing_instruction", f"task file {str(task_file)!r} has no instruction")
    text_file = run_dir / "instruction.txt"
    tried.append(text_file.name)
    if text_file.is_file() and text_file.read_text(encoding="utf-8", errors="replace").strip():
        return text_file.read_text(encoding="utf-8", errors="replace").strip(), {}
    log_file = run_dir / "runtime.log"
    tried.append(log_file.name)
    if log_file.is_file():
        with log_file.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = _INSTRUCTION_LINE.search(line)
                if match:
                    return match.group(1).strip(), {}
    if human_instruction:
        return human_instruction, {}
    raise RecordError("missing_instruction", f"no instruction found (looked in {', '.join(tried)})")


def _outcome(run_dir: Path, cfg: OSWorldSourceConfig) -> Outcome | None:
    result_file = run_dir / "result.txt"
    if not result_file.is_file():
        return None
    text = result_file.read_text(encoding="utf-8", errors="replace").strip()
    try:
        score = float(text.splitlines()[0]) if text else float("nan")
    except ValueError:
        score = float("nan")
    if not 0 <= score <= 1:  # also catches nan
        raise RecordError("malformed_record", f"result.txt holds {text[:100]!r}, not a score in [0, 1]")
    return Outcome(score=score, success=score >= cfg.success_threshold, verifier="osworld")
