"""Replay verification: pure helpers, the reject reasons that need no desktop, and real replays on the local desktop."""

from __future__ import annotations

import contextlib
import io
import random
import threading

import pytest
from PIL import Image

from synth.images import ImageStore, describe_image
from synth.schema import (
    CliAction,
    Control,
    GuiAction,
    MouseOp,
    Rejected,
    Screen,
    Source,
    Step,
    StepResult,
    ToolCall,
    Trajectory,
)
from verify.env.base import EnvError, Observation
from verify.recorder import record_demonstration
from verify.replay import (
    REJECT_REASONS,
    ReplayConfig,
    StepLog,
    format_log,
    phash_distance,
    phash_hex,
    precheck,
    replay,
    replay_many,
)
from verify.tasks import SUITE_DIR, load_task

SCREEN = Screen(width=1280, height=720)


def _frame(kind: str) -> bytes:
    """Small synthetic frames: seeded noise (phash sees texture, not flat colour); 'a-dot' is 'a' plus one pixel."""
    seed = {"a": 1, "b": 2, "a-dot": 1}[kind]
    rng = random.Random(seed)
    image = Image.new("L", (128, 72))
    image.putdata([rng.randrange(256) for _ in range(128 * 72)])
    if kind == "a-dot":
        image.putpixel((100, 50), 0)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


# ---------------------------------------------------------------- pure helpers


def test_phash_distance_separates_layouts_and_ignores_tiny_changes():
    a, b, dot = phash_hex(_frame("a")), phash_hex(_frame("b")), phash_hex(_frame("a-dot"))
    assert phash_distance(a, a) == 0
    assert phash_distance(a, b) > 10
    assert phash_distance(a, dot) <= 4
    # the same hash the image store records, so recorded refs compare directly
    assert describe_image(_frame("a")).phash == a


def test_format_log_renders_every_field():
    log = [
        StepLog(index=0, interface="gui", status="ok", duration=0.234, phash_distance=3),
        StepLog(index=1, interface="cli", status="error", returncode=2, duration=0.05, detail="ls: no\nsuch"),
        StepLog(index=2, interface="control", status="terminate", detail="success"),
        StepLog(index=3, interface="gui", status="skipped"),
    ]
    lines = format_log(log).splitlines()
    assert len(lines) == 5 and lines[0].split()[:3] == ["step", "iface", "status"]
    assert lines[1].split() == ["0", "gui", "ok", "0.23", "3"]
    assert lines[2].split() == ["1", "cli", "error", "2", "0.05", "ls:", "no", "such"]
    assert lines[3].split() == ["2", "control", "terminate", "success"]
    assert lines[4].split() == ["3", "gui", "skipped"]


def _traj(steps, task_id="t1", screen=SCREEN) -> Trajectory:
    return Trajectory(
        id="r1",
        source=Source(dataset="test", record_id="r1"),
        instruction="do it",
        screen=screen,
        task_id=task_id,
        steps=[Step(index=i, action=a) for i, a in enumerate(steps)],
    )


class _Task:
    def __init__(self, id: str):
        self.id = id


class ScriptedEnv:
    """An Env whose state is a counter of executed echo commands; scores 1.0 once `want` commands ran.

    It lets the replay's own control flow (terminate, step errors, env errors, evidence) be checked without a
    desktop; the desktop tests below check the same paths on the real one.
    """

    def __init__(self, want: int = 1, fail_reset: bool = False, tool_executor=None):
        self.screen = SCREEN
        self.want, self.fail_reset, self.tool_executor = want, fail_reset, tool_executor
        self.done, self.executed = 0, []

    def reset(self, task=None):
        if self.fail_reset:
            raise EnvError("Xvfb died")
        self.done, self.executed = 0, []
        return Observation(_frame("a"))

    def step(self, action):
        self.executed.append(action)
        if isinstance(action, CliAction):
            ok = action.command.startswith("echo")
            self.done += ok
            return Observation(_frame("b")), StepResult(
                status="ok" if ok else "error", returncode=0 if ok else 1
            )
        return Observation(_frame("a")), StepResult(status="ok")

    def evaluate(self):
        return 1.0 if self.done >= self.want else 0.0

    def close(self):
        pass


def test_precheck_reasons_need_no_environment():
    env = ScriptedEnv()
    task = _Task("t1")
    assert precheck(_traj([CliAction(command="echo")], task_id="other"), env, task).reason == "unknown_task"
    assert precheck(_traj([CliAction(command="echo")]), env, None).reason == "unknown_task"
    assert (
        precheck(_traj([Control(kind="terminate", value="success")]), env, task).reason == "empty_trajectory"
    )
    gui = GuiAction(ops=[MouseOp(op="click", x=1, y=1)])
    assert (
        precheck(_traj([gui], screen=Screen(width=1920, height=1080)), env, task).reason == "screen_mismatch"
    )
    rejected = precheck(_traj([CliAction(command="echo"), ToolCall(name="f")]), env, task)
    assert rejected.reason == "tool_executor_missing" and rejected.step_index == 1
    assert precheck(_traj([ToolCall(name="f")]), ScriptedEnv(tool_executor=object()), task) is None
    assert env.executed == []
    assert set(REJECT_REASONS) >= {
        "task_failed",
        "step_error",
        "env_error",
        "unknown_task",
        "tool_executor_missing",
    }


def test_terminate_ends_replay_but_never_counts_as_success():
    task = _Task("t1")
    claimed = _traj([Control(kind="terminate", value="success"), CliAction(command="echo hi")])
    claimed.steps.insert(0, Step(index=9, action=Control(kind="wait")))
    out = replay(claimed, ScriptedEnv(), task)
    assert out.result.reason == "task_failed" and out.score == 0.0
    assert [e.status for e in out.log] == ["ok", "terminate", "skipped"]
    assert "terminate" in out.result.detail and "skipped" in out.result.detail


def test_step_error_is_logged_and_only_rejected_when_strict():
    task = _Task("t1")
    traj = _traj([CliAction(command="false"), CliAction(command="echo ok")])
    lenient = replay(traj, ScriptedEnv(), task)
    assert lenient.accepted and lenient.result.outcome.success and lenient.result.outcome.score == 1.0
    assert [s.metadata["replay"]["status"] for s in lenient.result.steps] == ["error", "ok"]
    assert lenient.result.provenance[-1].stage == "replay"
    strict = replay(traj, ScriptedEnv(), task, ReplayConfig(reject_on_step_error=True))
    assert strict.result.reason == "step_error" and strict.result.step_index == 0
    assert len(strict.log) == 1


class SilentToolEnv(ScriptedEnv):
    """Says nothing about tools up front (no `tool_executor` attribute) and answers them 'not_executed'."""

    def __init__(self):
        super().__init__()
        del self.tool_executor

    def step(self, action):
        if isinstance(action, ToolCall):
            return Observation(_frame("a")), StepResult(status="not_executed", stderr="no tool executor")
        return super().step(action)


def test_tool_call_not_executed_is_tool_executor_missing():
    traj = _traj([CliAction(command="echo"), ToolCall(name="f")])
    out = replay(traj, SilentToolEnv(), _Task("t1"))
    assert out.result.reason == "tool_executor_missing" and out.result.step_index == 1
    assert [e.status for e in out.log] == ["ok", "not_executed"]


def test_env_error_on_reset():
    out = replay(_traj([CliAction(command="echo")]), ScriptedEnv(fail_reset=True), _Task("t1"))
    assert out.result.reason == "env_error" and "Xvfb died" in out.result.detail


def test_phash_evidence_against_recorded_frames(tmp_path):
    store = ImageStore(tmp_path)
    traj = _traj([CliAction(command="echo a"), CliAction(command="echo b")])
    traj.steps[0].next_screenshot = describe_image(_frame("b"))  # what the replay will show
    traj.steps[1].next_screenshot = describe_image(_frame("a"))  # a different layout
    out = replay(traj, ScriptedEnv(want=2), _Task("t1"), images=store)
    assert out.accepted
    first, second = (s.metadata["replay"] for s in out.result.steps)
    assert first["phash_distance"] == 0 and second["phash_distance"] > 10
    assert first["frame"]["sha256"] in store
    assert out.result.metadata["replay"]["max_phash_distance"] == second["phash_distance"]
    # the source record's steps are kept as they were
    assert [s.action for s in out.result.steps] == [s.action for s in traj.steps]


def test_replay_many_keeps_order_and_rejects_unknown_tasks():
    records = [
        _traj([CliAction(command="echo")], task_id="t1"),
        _traj([CliAction(command="x")], task_id="nope"),
    ]
    records[1] = records[1].model_copy(update={"id": "r2"})
    out = list(replay_many(records, [_Task("t1")], ScriptedEnv(), ReplayConfig()))
    assert isinstance(out[0], Trajectory) and out[1].reason == "unknown_task" and out[1].record_id == "r2"


class ScriptedPool:
    """`EnvPool`'s leasing shape (`size`, `acquire()` context manager) over scripted envs."""

    def __init__(self, size: int):
        self.size = size
        self._free = [ScriptedEnv() for _ in range(size)]
        self._lock = threading.Lock()
        self.leases = 0

    @contextlib.contextmanager
    def acquire(self):
        with self._lock:
            env = self._free.pop()
            self.leases += 1
        try:
            yield env
        finally:
            with self._lock:
                self._free.append(env)


def test_replay_many_over_a_pool_keeps_input_order():
    records = []
    for i in range(9):
        # every third record runs a failing command only: rejected; the others pass
        command = "false" if i % 3 == 0 else f"echo {i}"
        records.append(_traj([CliAction(command=command)]).model_copy(update={"id": f"r{i}"}))
    pool = ScriptedPool(3)
    out = list(replay_many(records, [_Task("t1")], pool))
    assert [r.record_id if isinstance(r, Rejected) else r.id for r in out] == [f"r{i}" for i in range(9)]
    assert [isinstance(r, Rejected) for r in out] == [i % 3 == 0 for i in range(9)]
    assert pool.leases == 9


# ---------------------------------------------------------------- real desktop

DESKTOP_TASK = "os/sy-os-backup-report.json"  # two commands typed into the xterm the task opens


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One real desktop for the module, and the task's GUI demonstration recorded on it."""
    local = pytest.importorskip("verify.env.local")
    env = local.LocalDesktop()
    try:
        task = load_task(SUITE_DIR / DESKTOP_TASK)
        store = ImageStore(tmp_path_factory.mktemp("images"))
        traj = record_demonstration(env, task, "gui", images=store)
        assert traj.outcome.success, "the demonstration itself must solve the task"
        yield env, task, traj, store
    finally:
        env.close()


@pytest.mark.desktop
def test_recorded_gui_trajectory_replays_and_broken_ones_are_rejected(recorded):
    """Replay the recorded GUI demo (accepted), then two broken variants (task_failed with the log)."""
    env, task, traj, _store = recorded
    accepted = replay(traj, env, task)
    assert accepted.accepted, accepted.result
    assert accepted.result.outcome.success and accepted.result.outcome.score == 1.0
    evidence = [s.metadata["replay"] for s in accepted.result.steps[:-1]]
    assert all(e["status"] == "ok" and e["phash_distance"] is not None for e in evidence)

    # drop the steps after the first GUI step: the end state no longer satisfies the task
    truncated = traj.model_copy(update={"steps": [traj.steps[0], traj.steps[-1]]}, deep=True)
    out = replay(truncated, env, task)
    assert out.result.reason == "task_failed" and out.score is not None and out.score < 1.0
    assert "terminate" in out.result.detail and len(out.log) == 2


@pytest.mark.desktop
def test_cli_rewrite_of_recorded_gui_trajectory_replays(recorded):
    cli_rewrite = pytest.importorskip("synth.cli_rewrite")
    env, task, traj, _store = recorded
    rewritten = cli_rewrite.rewrite_trajectory(traj, cli_rewrite.CliRewriteConfig())
    assert isinstance(rewritten, Trajectory), rewritten
    assert any(s.interface == "cli" for s in rewritten.steps)
    out = replay(rewritten, env, task)
    assert out.accepted, out.result
    assert any(e.interface == "cli" and e.returncode == 0 for e in out.log)

    # a wrong command in the rewrite: the verifier rejects it and the log shows the failing step
    wrong = rewritten.model_copy(deep=True)
    for step in wrong.steps:
        if isinstance(step.action, CliAction):
            step.action = CliAction(command="ls /nonexistent-dir", timeout=step.action.timeout)
    out = replay(wrong, env, task)
    assert out.result.reason == "task_failed"
    assert any(e.interface == "cli" and e.status == "error" for e in out.log)
