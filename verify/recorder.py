"""Record a task's demonstration on a real desktop as a canonical `Trajectory` (real frames, focus, results).

`record_demonstration(env, task, mode, images=store)` resets the environment to the task, executes each step of
the task's `mode` demonstration (one action per demo entry), and records for every step the frame before and
after it (PNG bytes stored once in the `ImageStore`, records hold hashes), the focused window when the action ran
(`Step.focus`: the evidence the GUI→CLI rewrite uses to know typing went into a terminal), the step result and
the text shown after the previous action. The task's verifier scores the end state (`env.evaluate()`); the record
ends with a `Control(terminate, success|failure)` step that says what the verifier found, and `outcome` holds the
score. A GUI demonstration must be GUI-only: recording a "gui" demo that contains a shell step is refused.

As a script it (re)builds the bundled sample trajectories, which the project's demo runs on:

    python -m verify.recorder --tasks data/tasks --out data/samples            # the default subset
    python -m verify.recorder --tasks data/tasks --out /tmp/s --task calc-sum-column --task os-count-lines
    python -m verify.recorder --tasks data/tasks --out /tmp/s --all           # every task with a GUI demo

It writes `<out>/trajectories.jsonl` (switchyard native JSONL: one Trajectory JSON per line) and
`<out>/images/<sha[:2]>/<sha>.png` (exact frames, never re-encoded), removes images no record references, and
prints one line per task. Needs the local desktop (Xvfb, openbox, xterm, LibreOffice; see install.sh).
Exit status 1 when any chosen task failed to record or its verifier did not accept the end state.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import synth
from synth.actions import parse_code
from synth.coords import CoordSpace
from synth.images import ImageStore
from synth.schema import (
    Action,
    CliAction,
    Control,
    GuiAction,
    Outcome,
    Provenance,
    Source,
    Step,
    Trajectory,
    config_hash,
)
from synth.sources.native import write_native
from verify.env.base import Env

if TYPE_CHECKING:
    from verify.tasks import TaskSpec

DATASET = "switchyard-recordings"
STAGE = "record"
DemoMode = Literal["gui", "cli", "hybrid"]

# Interfaces a demonstration of each mode may use (control steps are allowed everywhere).
ALLOWED: dict[str, tuple[type, ...]] = {
    "gui": (GuiAction, Control),
    "cli": (CliAction, Control),
    "hybrid": (GuiAction, CliAction, Control),
}

# The bundled samples (data/samples): a dozen tasks across the suite's domains. Eight GUI demos type commands into
# the xterm the task opened (one of them then switches to Impress with alt+tab, a partial rewrite), so the samples
# show real GUI→CLI rewrites; four stay GUI, among them typing into the Mousepad text editor, which focus evidence
# keeps from being mistaken for terminal typing.
DEFAULT_TASKS: tuple[str, ...] = (
    "sy-terminal-count-log-lines",
    "sy-terminal-filter-csv-city",
    "sy-terminal-list-python-files",
    "sy-terminal-hello-script",
    "sy-terminal-write-settings-ini",
    "sy-os-archive-logs",
    "sy-os-backup-report",
    "sy-multi_apps-title-from-notes",
    "sy-os-edit-todo",
    "sy-calc-sum-total",
    "sy-writer-bold-title",
    "sy-impress-bold-title",
)


class DemonstrationError(ValueError):
    """A task's demonstration cannot be recorded in the requested mode (missing, or uses another interface)."""


def demo_for(task: TaskSpec, mode: DemoMode) -> list[Action]:
    """The task's `mode` demonstration, one action per demo entry, checked to use only that mode's interfaces."""
    from verify.tasks import DEMO_SCREEN, CliStep, ControlStep

    if task.switchyard is None or not getattr(task.switchyard.demonstrations, mode):
        raise DemonstrationError(f"task {task.id} has no {mode!r} demonstration")
    actions: list[Action] = []
    for index, entry in enumerate(getattr(task.switchyard.demonstrations, mode)):
        action: Action
        if isinstance(entry, CliStep):
            action = CliAction(command=entry.cli, timeout=entry.timeout)
        elif isinstance(entry, ControlStep):
            action = Control(kind=entry.control, value=entry.value)
        else:
            try:
                action = parse_code(entry, screen=DEMO_SCREEN, space=CoordSpace.absolute())
            except ValueError as exc:
                raise DemonstrationError(f"task {task.id}: {mode} demo step {index}: {exc}") from exc
        if not isinstance(action, ALLOWED[mode]):
            raise DemonstrationError(
                f"task {task.id}: the {mode!r} demonstration has a {action.type} step at {index}; "
                f"a {mode} demo may use only {', '.join(t.__name__ for t in ALLOWED[mode])}"
            )
        actions.append(action)
    terminates = [i for i, a in enumerate(actions) if isinstance(a, Control) and a.kind == "terminate"]
    if terminates and terminates != [len(actions) - 1]:
        raise DemonstrationError(f"task {task.id}: terminate must be the last step (found at {terminates})")
    # the recorder writes its own terminate from the verifier's verdict; the demo's own claim is not evidence
    return actions[:-1] if terminates else actions


def record_demonstration(
    env: Env,
    task: TaskSpec,
    mode: DemoMode = "gui",
    *,
    images: ImageStore,
    success_threshold: float = 1.0,
) -> Trajectory:
    """Execute `task`'s `mode` demonstration on `env` and return the recorded trajectory (see module docstring).

    Raises `DemonstrationError` before touching the environment when the demo is missing or mixes interfaces;
    environment failures (`EnvError`) propagate: a recording with a broken desktop is not data.
    """
    from verify.tasks import DEMO_SCREEN

    actions = demo_for(task, mode)
    if any(isinstance(a, GuiAction) for a in actions) and env.screen != DEMO_SCREEN:
        # demo coordinates are absolute pixels of the demo screen: on another size every click lands elsewhere
        raise DemonstrationError(
            f"task {task.id}: GUI demos are written for {DEMO_SCREEN.width}x{DEMO_SCREEN.height}, "
            f"the environment is {env.screen.width}x{env.screen.height}"
        )
    started = time.monotonic()
    obs = env.reset(task)
    steps: list[Step] = []
    for index, action in enumerate(actions):
        before = images.put(obs.screenshot_png)
        after_obs, result = env.step(action)
        after = images.put(after_obs.screenshot_png)
        steps.append(
            Step(
                index=index,
                screenshot=before,
                observation_text=obs.text,
                action=action,
                result=result,
                next_screenshot=after,
                # the window that had the keyboard when the action started is where its typing went
                focus=obs.focus,
            )
        )
        obs = after_obs
    score = float(env.evaluate())
    success = score >= success_threshold
    steps.append(
        Step(
            index=len(actions),
            screenshot=images.put(obs.screenshot_png),
            observation_text=obs.text,
            action=Control(kind="terminate", value="success" if success else "failure"),
            focus=obs.focus,
        )
    )
    params = {"mode": mode, "success_threshold": success_threshold, "env": type(env).__name__}
    record_id = f"{task.id}-{mode}"
    return Trajectory(
        id=record_id,
        source=Source(dataset=DATASET, record_id=record_id),
        instruction=task.instruction,
        platform="linux",
        screen=env.screen,
        task_id=task.id,
        mode=mode,
        steps=steps,
        outcome=Outcome(score=score, success=success, verifier=f"{type(env).__name__}:{task.id}"),
        provenance=[Provenance(stage=STAGE, version=synth.__version__, params_hash=config_hash(params))],
        metadata={
            "domain": task.domain,
            "favours": task.switchyard.favours if task.switchyard else None,
            "recorder": {
                "env": type(env).__name__,
                "seconds": round(time.monotonic() - started, 3),
                "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            },
        },
    )


# ---------------------------------------------------------------- writing a sample set


def read_jsonl(path: Path) -> list[Trajectory]:
    with path.open(encoding="utf-8") as f:
        return [Trajectory.from_json(line) for line in f if line.strip()]


def referenced_images(records: Iterable[Trajectory]) -> set[str]:
    refs: set[str] = set()
    for record in records:
        for step in record.steps:
            for ref in (step.screenshot, step.next_screenshot):
                if ref is not None:
                    refs.add(ref.sha256)
    return refs


def prune_images(images: ImageStore, keep: set[str]) -> int:
    """Delete stored images no record references (frames of earlier runs); returns how many were removed."""
    removed = 0
    if not images.root.exists():
        return 0
    for png in images.root.glob("*/*.png"):
        if png.stem not in keep:
            png.unlink()
            removed += 1
    for folder in images.root.iterdir():
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return removed


def choose_tasks(tasks: Sequence[TaskSpec], wanted: Sequence[str], take_all: bool) -> list[TaskSpec]:
    """The tasks to record: `wanted` ids in that order, every task with a GUI demo, or the default subset."""
    by_id = {t.id: t for t in tasks}
    if take_all:
        return [t for t in tasks if t.switchyard is not None and t.switchyard.demonstrations.gui]
    ids = list(wanted) or list(DEFAULT_TASKS)
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise SystemExit(f"unknown task ids: {', '.join(missing)}")
    return [by_id[i] for i in ids]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.recorder", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=Path("data/tasks"), help="Task suite directory.")
    parser.add_argument("--out", type=Path, default=Path("data/samples"), help="Output directory.")
    parser.add_argument("--task", action="append", default=[], help="Task id to record (repeatable).")
    parser.add_argument("--all", action="store_true", help="Record every task that has a GUI demonstration.")
    parser.add_argument(
        "--mode", default="gui", choices=["gui", "cli", "hybrid"], help="Which demonstration."
    )
    args = parser.parse_args(argv)

    from verify.env.local import LocalDesktop
    from verify.tasks import load_suite

    tasks, unsupported = load_suite(args.tasks)
    for path, reason in unsupported:
        print(f"skip {path}: {reason}", file=sys.stderr)
    chosen = choose_tasks(tasks, args.task, args.all)
    if not chosen:
        print("no tasks chosen", file=sys.stderr)
        return 1
    images = ImageStore(args.out / "images")
    records: list[Trajectory] = []
    failures = 0
    env = LocalDesktop()
    try:
        for task in chosen:
            t0 = time.monotonic()
            try:
                record = record_demonstration(env, task, args.mode, images=images)
            # report every task and keep going: one broken demo must not lose the others
            except Exception as exc:
                failures += 1
                print(f"FAIL   {task.id}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            ok = bool(record.outcome and record.outcome.success)
            failures += not ok
            if ok:
                records.append(record)
            focus = {s.focus.wm_class for s in record.steps if s.focus and s.focus.wm_class}
            print(
                f"{'ok' if ok else 'REJECT':<6} {task.id}: {len(record.steps)} steps, "
                f"score {record.outcome.score if record.outcome else None}, "
                f"{time.monotonic() - t0:.1f}s, focus {sorted(focus)}"
            )
    finally:
        env.close()
    n = write_native(records, args.out / "trajectories.jsonl")
    removed = prune_images(images, referenced_images(records))
    size = sum(p.stat().st_size for p in (args.out / "images").glob("*/*.png"))
    print(
        f"wrote {n} trajectories to {args.out / 'trajectories.jsonl'}; "
        f"{len(referenced_images(records))} images, {size / 1e6:.2f} MB ({removed} stale removed); "
        f"python {platform.python_version()}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
