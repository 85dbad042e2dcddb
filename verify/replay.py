"""Replay verification: re-execute a trajectory from its task's initial state and keep it only if the verifier agrees.

`replay(trajectory, env, task, cfg)` resets the environment to the task, executes every step in order (GUI ops,
shell commands, tool calls when the environment has a tool executor, control), evaluates the task at the end and
returns a `ReplayResult` holding either

- the accepted record: the SOURCE record's steps unchanged (actions, recorded frames and results), `outcome` set
  from the verifier, one provenance entry, and per-step replay evidence in `step.metadata["replay"]` (status,
  return code, duration, perceptual-hash distance between the replayed frame and the recorded `next_screenshot`,
  and the replayed frame's ref when an `ImageStore` is given); or
- a `Rejected` with a snake_case reason (`REJECT_REASONS`) whose detail carries the formatted replay log,

plus the structured log either way. A `terminate` control step is passed to the environment and ends the replay
(later steps are logged as `skipped`), but never counts as success by itself: only the verifier score decides.

`replay_many(records, tasks, pool_or_env, cfg)` is the stage form: one result per input record, in input order.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import imagehash
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

import synth
from synth.images import ImageStore
from synth.schema import (
    Control,
    ImageRef,
    Interface,
    Outcome,
    Rejected,
    Step,
    ToolCall,
    Trajectory,
    config_hash,
)
from verify.env.base import Env

if TYPE_CHECKING:
    from verify.tasks import TaskSpec

STAGE = "replay"

REJECT_REASONS = {
    "task_failed": "the verifier score after the replay is below the threshold",
    "step_error": "a step failed while executing (only with reject_on_step_error)",
    "env_error": "the environment itself failed (reset, a step's infrastructure, or evaluation)",
    "unknown_task": "the record names no task, or a task that is not in the suite",
    "tool_executor_missing": "the record has tool calls but the environment has no tool executor",
    "screen_mismatch": "GUI coordinates are absolute pixels of another screen size than the environment's",
    "empty_trajectory": "the record has no executable step",
}


class ReplayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    success_threshold: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Verifier score at or above which the replay is accepted. 1.0 = the task fully solved.",
    )
    reject_on_step_error: bool = Field(
        default=False,
        description=(
            "Reject as 'step_error' as soon as an executed step reports status error/timeout (e.g. a CLI command "
            "with a non-zero exit). Off: failed steps are logged and only the end state counts, since agents "
            "legitimately recover from errors. On costs nothing and stops the replay early."
        ),
    )
    compare_frames: bool = Field(
        default=True,
        description=(
            "Compute the perceptual-hash distance (0-64) between each replayed frame and the recorded "
            "next_screenshot as evidence (one PNG decode + DCT per step, ~10-20 ms at 720p). Never decides "
            "acceptance: phash misses small changes such as a typed command line."
        ),
    )


StepStatus = Literal["ok", "error", "timeout", "infra_error", "not_executed", "terminate", "skipped"]


class StepLog(BaseModel):
    """What happened to one source step during the replay."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="Index of the source step.")
    interface: Interface = Field(description="Interface class of the step's action.")
    status: StepStatus = Field(
        description="Executed status, 'terminate' for the ending control, 'skipped' after it."
    )
    returncode: int | None = Field(default=None, description="Exit code of a CLI step, when it has one.")
    duration: float | None = Field(default=None, description="Seconds the environment took for the step.")
    phash_distance: int | None = Field(
        default=None,
        description="Hamming distance between replayed and recorded after-frames (None: no record).",
    )
    frame: ImageRef | None = Field(
        default=None, description="Replayed after-frame, when an ImageStore was given."
    )
    detail: str = Field(default="", description="stderr / error text, truncated.")


class ReplayResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    result: Trajectory | Rejected = Field(description="The accepted record, or why it was rejected.")
    log: list[StepLog] = Field(default_factory=list, description="Per-step replay log (also when rejected).")
    score: float | None = Field(default=None, description="Verifier score, when evaluation ran.")
    duration: float = Field(default=0.0, description="Wall-clock seconds of reset + steps + evaluation.")

    @property
    def accepted(self) -> bool:
        return isinstance(self.result, Trajectory)


# ---------------------------------------------------------------- pure helpers


def phash_hex(png: bytes) -> str:
    """64-bit perceptual hash of image bytes as hex, the same form `ImageRef.phash` stores."""
    with Image.open(io.BytesIO(png)) as image:
        return str(imagehash.phash(image))


def phash_distance(a: str, b: str) -> int:
    """Hamming distance between two hex perceptual hashes (0 = same picture at phash resolution, max 64)."""
    return int(imagehash.hex_to_hash(a) - imagehash.hex_to_hash(b))


def format_log(log: Iterable[StepLog]) -> str:
    """A fixed-width table of a replay log, one line per step, for reject details and terminal output."""
    lines = [f"{'step':>4}  {'iface':<7} {'status':<11} {'rc':>4} {'secs':>6} {'phash':>5}  detail"]
    for entry in log:
        rc = "" if entry.returncode is None else str(entry.returncode)
        secs = "" if entry.duration is None else f"{entry.duration:.2f}"
        dist = "" if entry.phash_distance is None else str(entry.phash_distance)
        detail = entry.detail.replace("\n", " ")[:80]
        lines.append(
            f"{entry.index:>4}  {entry.interface:<7} {entry.status:<11} {rc:>4} {secs:>6} {dist:>5}  {detail}".rstrip()
        )
    return "\n".join(lines)


def has_tool_executor(env: Env) -> bool | None:
    """Whether `env` can execute `ToolCall` steps: True/False when it says so through a public `tool_executor`
    attribute, None when it does not say (then a tool step answered with status 'not_executed' tells)."""
    if not hasattr(env, "tool_executor"):
        return None
    return env.tool_executor is not None


def _short(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reject(record: Trajectory, reason: str, detail: str, step_index: int | None = None) -> Rejected:
    assert reason in REJECT_REASONS, reason
    return Rejected(record_id=record.id, stage=STAGE, reason=reason, detail=detail, step_index=step_index)


def precheck(trajectory: Trajectory, env: Env, task: TaskSpec | None) -> Rejected | None:
    """Reasons to reject without touching the environment (cheap, run before any reset)."""
    if task is None or (trajectory.task_id is not None and trajectory.task_id != task.id):
        wanted = trajectory.task_id or "<none>"
        got = "<none>" if task is None else task.id
        return _reject(trajectory, "unknown_task", f"record needs task {wanted}, got {got}")
    executable = [
        s for s in trajectory.steps if not isinstance(s.action, Control) or s.action.kind != "terminate"
    ]
    if not executable:
        return _reject(trajectory, "empty_trajectory", f"{len(trajectory.steps)} steps, none executable")
    if any(s.interface == "gui" for s in trajectory.steps) and trajectory.screen != env.screen:
        return _reject(
            trajectory,
            "screen_mismatch",
            f"record screen {trajectory.screen.width}x{trajectory.screen.height}, "
            f"environment {env.screen.width}x{env.screen.height}",
        )
    tool_steps = [s.index for s in trajectory.steps if isinstance(s.action, ToolCall)]
    if tool_steps and has_tool_executor(env) is False:
        return _reject(
            trajectory,
            "tool_executor_missing",
            f"tool calls at steps {tool_steps} but {type(env).__name__} has no tool executor",
            step_index=tool_steps[0],
        )
    return None


# ---------------------------------------------------------------- replay


def replay(
    trajectory: Trajectory,
    env: Env,
    task: TaskSpec | None,
    cfg: ReplayConfig | None = None,
    *,
    images: ImageStore | None = None,
) -> ReplayResult:
    """Replay `trajectory` on `env` from `task`'s initial state and verify the end state (see module docstring)."""
    cfg = cfg or ReplayConfig()
    started = time.monotonic()
    early = precheck(trajectory, env, task)
    if early is not None:
        return ReplayResult(result=early, duration=time.monotonic() - started)
    assert task is not None

    log: list[StepLog] = []

    def done(result: Trajectory | Rejected, score: float | None = None) -> ReplayResult:
        return ReplayResult(result=result, log=log, score=score, duration=time.monotonic() - started)

    def failed(reason: str, head: str, step_index: int | None = None) -> ReplayResult:
        return done(_reject(trajectory, reason, f"{head}\n{format_log(log)}", step_index))

    try:
        env.reset(task)
    # any failure to bring the desktop up is infrastructure, not the record's fault
    except Exception as exc:
        return failed("env_error", f"reset failed: {type(exc).__name__}: {exc}")

    terminated = False
    for step in trajectory.steps:
        if terminated:
            log.append(StepLog(index=step.index, interface=step.interface, status="skipped"))
            continue
        entry, error = _execute(step, env, cfg, images)
        if isinstance(step.action, Control) and step.action.kind == "terminate":
            # executed so that backends which score the claim itself see it (OSWorld's infeasible tasks are
            # solved by FAIL); the claim never counts as success by itself: only the verifier's score decides
            entry = entry.model_copy(update={"status": "terminate", "detail": step.action.value or ""})
            terminated = True
        log.append(entry)
        if error is not None:
            return failed("env_error", f"step {step.index}: {error}", step.index)
        if isinstance(step.action, ToolCall) and entry.status == "not_executed":
            return failed(
                "tool_executor_missing",
                f"step {step.index}: {type(env).__name__} did not execute tool {step.action.name!r}",
                step.index,
            )
        if entry.status == "infra_error":
            return failed("env_error", f"step {step.index} infrastructure error: {entry.detail}", step.index)
        if cfg.reject_on_step_error and entry.status in ("error", "timeout") and step.interface != "control":
            return failed(
                "step_error",
                f"{step.interface} step {step.index} ended with {entry.status} (rc={entry.returncode})",
                step.index,
            )

    try:
        score = float(env.evaluate())
    # a getter crashing on a missing file is the metric's job; anything raised here is infrastructure
    except Exception as exc:
        return failed("env_error", f"evaluation failed: {type(exc).__name__}: {exc}")

    if score < cfg.success_threshold:
        return done(
            _reject(
                trajectory,
                "task_failed",
                f"score {score:.3f} < {cfg.success_threshold:.3f}\n{format_log(log)}",
            ),
            score,
        )
    return done(_accepted(trajectory, task, env, cfg, log, score, time.monotonic() - started), score)


def _execute(
    step: Step, env: Env, cfg: ReplayConfig, images: ImageStore | None
) -> tuple[StepLog, str | None]:
    """Run one step; return its log entry and, when the environment raised, the error text."""
    t0 = time.monotonic()
    try:
        obs, result = env.step(step.action)
    except Exception as exc:
        entry = StepLog(
            index=step.index,
            interface=step.interface,
            status="infra_error",
            duration=time.monotonic() - t0,
            detail=_short(f"{type(exc).__name__}: {exc}"),
        )
        return entry, entry.detail
    distance = None
    frame = None
    if images is not None:
        frame = images.put(obs.screenshot_png)
    if cfg.compare_frames and step.next_screenshot is not None and step.next_screenshot.phash:
        replayed = frame.phash if frame is not None and frame.phash else phash_hex(obs.screenshot_png)
        distance = phash_distance(replayed, step.next_screenshot.phash)
    return (
        StepLog(
            index=step.index,
            interface=step.interface,
            status=result.status,
            returncode=result.returncode,
            duration=result.duration if result.duration is not None else time.monotonic() - t0,
            phash_distance=distance,
            frame=frame,
            detail=_short(result.stderr) if result.status != "ok" else "",
        ),
        None,
    )


def _accepted(
    trajectory: Trajectory,
    task: TaskSpec,
    env: Env,
    cfg: ReplayConfig,
    log: list[StepLog],
    score: float,
    duration: float,
) -> Trajectory:
    by_index = {entry.index: entry for entry in log}
    steps = []
    for step in trajectory.steps:
        entry = by_index.get(step.index)
        evidence: dict[str, Any] = {} if entry is None else entry.model_dump(mode="json", exclude={"index"})
        steps.append(step.model_copy(update={"metadata": {**step.metadata, "replay": evidence}}, deep=True))
    previous = trajectory.outcome
    outcome = Outcome(
        score=score,
        success=True,
        verifier=_verifier_name(task, env),
        judge=previous.judge if previous is not None else None,
    )
    distances = [e.phash_distance for e in log if e.phash_distance is not None]
    summary = {
        "score": score,
        "env": type(env).__name__,
        "seconds": round(duration, 3),
        "steps_executed": sum(e.status != "skipped" for e in log),
        "step_errors": sum(e.status in ("error", "timeout") for e in log),
        "max_phash_distance": max(distances) if distances else None,
    }
    return trajectory.derive(
        stage=STAGE,
        version=synth.__version__,
        params_hash=config_hash(cfg),
        steps=steps,
        outcome=outcome,
        metadata={**trajectory.metadata, "replay": summary},
    )


def _verifier_name(task: TaskSpec, env: Env) -> str:
    return f"{type(env).__name__}:{task.id}"


# ---------------------------------------------------------------- stage form


def replay_many(
    records: Iterable[Trajectory],
    tasks: Mapping[str, TaskSpec] | Iterable[TaskSpec],
    pool_or_env: Any,
    cfg: ReplayConfig | None = None,
    *,
    images: ImageStore | None = None,
) -> Iterator[Trajectory | Rejected]:
    """Replay every record on an `Env` (sequentially) or an `EnvPool` (one record per free desktop, in parallel).

    Results come out in input order. Records whose task is not in `tasks` are rejected without using a desktop.
    """
    cfg = cfg or ReplayConfig()
    by_id = dict(tasks) if isinstance(tasks, Mapping) else {t.id: t for t in tasks}

    if isinstance(pool_or_env, Env):
        env = pool_or_env
        for record in records:
            yield replay(record, env, by_id.get(record.task_id or ""), cfg, images=images).result
        return

    pool = pool_or_env

    def one(record: Trajectory) -> Trajectory | Rejected:
        task = by_id.get(record.task_id or "")
        if task is None:
            return _reject(record, "unknown_task", f"task {record.task_id!r} is not in the suite")
        with pool.acquire() as env:
            return replay(record, env, task, cfg, images=images).result

    # a bounded window keeps memory flat on long inputs while every desktop of the pool stays busy
    window = max(1, int(getattr(pool, "size", 1)))
    with ThreadPoolExecutor(max_workers=window) as executor:
        pending = []
        for record in records:
            pending.append(executor.submit(one, record))
            if len(pending) >= 2 * window:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()
