"""Recorder: refusing mixed GUI demos, the record's bookkeeping, sample-set writing, and a real desktop recording."""

from __future__ import annotations

import io
import json
import random

import pytest
from PIL import Image

from synth.images import ImageStore
from synth.schema import CliAction, Control, Focus, GuiAction, Screen, StepResult, Trajectory
from synth.sources.native import write_native
from verify.env.base import Observation
from verify.recorder import (
    DATASET,
    DemonstrationError,
    demo_for,
    prune_images,
    read_jsonl,
    record_demonstration,
    referenced_images,
)
from verify.tasks import SUITE_DIR, TaskSpec, load_task

SCREEN = Screen(width=1280, height=720)


def _task(gui: list, **demos) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "id": "t-demo",
            "instruction": "Make notes.txt say hi.",
            "config": [],
            "evaluator": {"func": "exact_match", "result": {"type": "vm_file", "path": "~/notes.txt"}},
            "switchyard": {"domain": "terminal", "demonstrations": {"gui": gui, **demos}},
        }
    )


GUI_DEMO = [
    "pyautogui.click(640, 400)",
    "pyautogui.write('echo hi > notes.txt\\n', interval=0.02)",
    {"control": "terminate", "value": "success"},
]


def _png(seed: int) -> bytes:
    rng = random.Random(seed)
    image = Image.new("L", (64, 36))
    image.putdata([rng.randrange(256) for _ in range(64 * 36)])
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


class ScriptedDesktop:
    """An Env that shows a new frame after every step and moves focus to a terminal after the first click.

    It exists to check the recorder's bookkeeping exactly (which frame and focus belong to which step); the
    desktop test below records on the real one.
    """

    def __init__(self, score: float = 1.0):
        self.screen = SCREEN
        self.score = score
        self.frame = 0
        self.actions = []

    def _obs(self, focus: Focus | None, text: str | None = None) -> Observation:
        return Observation(_png(self.frame), focus=focus, text=text)

    def reset(self, task=None):
        self.frame, self.actions = 0, []
        return self._obs(Focus(title="Desktop", wm_class="openbox"))

    def step(self, action):
        self.actions.append(action)
        self.frame += 1
        return self._obs(
            Focus(title="user@host: ~", wm_class="xterm"), text=f"after {self.frame}"
        ), StepResult(duration=0.01)

    def evaluate(self):
        return self.score

    def close(self):
        pass


def test_gui_demo_with_a_shell_step_is_refused_before_touching_the_env():
    task = _task([*GUI_DEMO[:2], {"cli": "echo hi > notes.txt"}])
    env = ScriptedDesktop()
    with pytest.raises(DemonstrationError, match="cli step"):
        record_demonstration(env, task, "gui", images=ImageStore("/nonexistent"))
    assert env.actions == []
    with pytest.raises(DemonstrationError, match="no 'cli' demonstration"):
        demo_for(_task(GUI_DEMO), "cli")
    wrong_screen = ScriptedDesktop()
    wrong_screen.screen = Screen(width=1920, height=1080)
    with pytest.raises(DemonstrationError, match="written for 1280x720"):
        record_demonstration(wrong_screen, _task(GUI_DEMO), "gui", images=ImageStore("/nonexistent"))
    assert wrong_screen.actions == []
    with pytest.raises(DemonstrationError, match="terminate must be the last"):
        demo_for(_task([{"control": "terminate", "value": "success"}, GUI_DEMO[0]]), "gui")


def test_record_bookkeeping(tmp_path):
    store = ImageStore(tmp_path / "images")
    env = ScriptedDesktop()
    traj = record_demonstration(env, _task(GUI_DEMO), "gui", images=store)

    # the demo's own terminate is not executed: the recorder writes one from the verifier's verdict
    assert len(env.actions) == 2 and all(isinstance(a, GuiAction) for a in env.actions)
    assert [s.interface for s in traj.steps] == ["gui", "gui", "control"]
    assert traj.steps[-1].action == Control(kind="terminate", value="success")
    # frames chain: what step i left on screen is what step i+1 saw
    for prev, nxt in zip(traj.steps, traj.steps[1:], strict=False):
        assert prev.next_screenshot == nxt.screenshot
    assert traj.steps[0].screenshot != traj.steps[0].next_screenshot
    # focus and text are those of the observation the action started from
    assert traj.steps[0].focus.wm_class == "openbox" and traj.steps[0].observation_text is None
    assert traj.steps[1].focus.wm_class == "xterm" and traj.steps[1].observation_text == "after 1"
    assert all(s.result is not None for s in traj.steps[:-1])
    assert traj.outcome.score == 1.0 and traj.outcome.success is True
    assert (traj.id, traj.task_id, traj.mode, traj.screen) == ("t-demo-gui", "t-demo", "gui", SCREEN)
    assert traj.source.dataset == DATASET and traj.source.record_id == "t-demo-gui"
    assert [p.stage for p in traj.provenance] == ["record"]
    # 3 distinct frames (reset, after step 0, after step 1), each stored once
    assert len(referenced_images([traj])) == 3 == len(list(store.root.glob("*/*.png")))

    failed = record_demonstration(ScriptedDesktop(score=0.0), _task(GUI_DEMO), "gui", images=store)
    assert failed.steps[-1].action.value == "failure" and failed.outcome.success is False


def test_write_read_and_prune(tmp_path):
    store = ImageStore(tmp_path / "images")
    traj = record_demonstration(ScriptedDesktop(), _task(GUI_DEMO), "gui", images=store)
    stale = store.put(_png(999))
    path = tmp_path / "trajectories.jsonl"
    assert write_native([traj, traj], path) == 2
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["id"] == "t-demo-gui"
    assert read_jsonl(path) == [traj, traj]
    assert prune_images(store, referenced_images([traj])) == 1
    assert stale not in store and all(ref in store for ref in referenced_images([traj]))


def test_cli_demo_records_cli_steps(tmp_path):
    task = _task(GUI_DEMO, cli=[{"cli": "echo hi > notes.txt"}])
    traj = record_demonstration(ScriptedDesktop(), task, "cli", images=ImageStore(tmp_path))
    assert traj.mode == "cli" and isinstance(traj.steps[0].action, CliAction)
    assert isinstance(traj, Trajectory)


# ---------------------------------------------------------------- real desktop

DESKTOP_TASK = "os/sy-os-backup-report.json"  # two commands typed into the xterm the task opens


@pytest.fixture(scope="module")
def desktop():
    local = pytest.importorskip("verify.env.local")
    env = local.LocalDesktop()
    try:
        yield env
    finally:
        env.close()


@pytest.mark.desktop
def test_record_gui_demo_on_the_real_desktop(desktop, tmp_path):
    task = load_task(SUITE_DIR / DESKTOP_TASK)
    store = ImageStore(tmp_path / "images")
    traj = record_demonstration(desktop, task, "gui", images=store)

    demo = task.switchyard.demonstrations.gui
    assert len(traj.steps) == len(demo) + 1 and traj.steps[-1].action == Control(
        kind="terminate", value="success"
    )
    assert traj.outcome.success is True and traj.outcome.score == 1.0
    for step in traj.steps[:-1]:
        assert step.screenshot != step.next_screenshot, f"step {step.index} changed nothing on screen"
        assert step.result.status == "ok"
        # the task opened an xterm and typed into it: that is what the GUI→CLI rewrite needs to know
        assert step.focus is not None and step.focus.wm_class and "xterm" in step.focus.wm_class.lower()
    frames = referenced_images([traj])
    assert all(sha in store for sha in frames)
    assert {store.path(sha).read_bytes()[:8] for sha in frames} == {b"\x89PNG\r\n\x1a\n"}
    assert Image.open(store.path(traj.steps[0].screenshot)).size == (traj.screen.width, traj.screen.height)
