"""OSWorld adapter: OUR translation of actions, observations, results and tasks into OSWorld's DesktopEnv calls.

OSWorld itself is not installed here (see notes/desktop.md), so `RecordingDesktopEnv` below stands in for
`desktop_env.desktop_env.DesktopEnv`: it records the calls our adapter makes and answers with the shapes OSWorld's
code returns (obs dict {screenshot, accessibility_tree, terminal, instruction}; run_bash_script JSON
{status, output, error, returncode} with stderr merged into output). The tests check what we send and how we read
the answers, not the stand-in.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from PIL import Image

from synth.actions import parse_code
from synth.coords import CoordSpace
from synth.schema import CliAction, Control, Focus, GuiAction, KeyOp, MouseOp, Screen, ToolCall, TypeOp
from verify.env.base import Env, EnvError
from verify.env.osworld import (
    FOCUS_SCRIPT,
    INSTALL_HINT,
    OSWorldConfig,
    OSWorldEnv,
    cli_result,
    control_command,
    gui_code,
    observation_from_osworld,
    parse_xprop_focus,
    split_less_than,
    task_config,
)
from verify.tasks import SUITE_DIR, load_task

SCREEN = Screen(width=1280, height=720)


def _png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 36), color).save(buf, format="PNG")
    return buf.getvalue()


class _Controller:
    def __init__(self, parent: RecordingDesktopEnv):
        self.parent = parent

    def get_screenshot(self) -> bytes:
        self.parent.calls.append(("get_screenshot",))
        return self.parent.frame

    def run_bash_script(self, script: str, timeout: int = 30, working_dir: str | None = None) -> dict:
        self.parent.calls.append(("run_bash_script", script, timeout))
        if script == FOCUS_SCRIPT:
            return {"status": "success", "output": self.parent.xprop, "error": "", "returncode": 0}
        return self.parent.bash_answers.pop(0)


class RecordingDesktopEnv:
    """Stand-in for OSWorld's DesktopEnv that records calls (see module docstring)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.frame = _png((10, 20, 30))
        self.xprop = (
            'WM_NAME(STRING) = "user@vm: ~"\nWM_CLASS(STRING) = "gnome-terminal-server", "Gnome-terminal"\n'
        )
        self.bash_answers: list[dict] = []
        self.is_environment_used = False
        self.score = 1
        self.controller = _Controller(self)

    def _obs(self) -> dict:
        return {"screenshot": self.frame, "accessibility_tree": None, "terminal": None, "instruction": "x"}

    def reset(self, task_config=None, seed=None, options=None):
        self.calls.append(("reset", task_config))
        self.is_environment_used = False
        return self._obs()

    def step(self, action, pause=2):
        self.calls.append(("step", action, pause))
        self.is_environment_used = True
        return self._obs(), 0, action in ("DONE", "FAIL"), {}

    def evaluate(self):
        self.calls.append(("evaluate",))
        return self.score

    def close(self):
        self.calls.append(("close",))


def _env(**cfg) -> tuple[OSWorldEnv, RecordingDesktopEnv]:
    fake = RecordingDesktopEnv()
    return OSWorldEnv(OSWorldConfig(screen=SCREEN, **cfg), desktop_env=fake), fake


# ---------------------------------------------------------------- pure translation


def test_gui_code_round_trips_through_the_parser():
    action = GuiAction(
        ops=[
            MouseOp(op="click", x=640, y=360),
            TypeOp(text="ls -la ~/Documents\n", interval=0.02),
            KeyOp(op="hotkey", keys=["ctrl", "s"]),
        ]
    )
    code = gui_code(action, SCREEN)
    assert parse_code(code, screen=SCREEN, space=CoordSpace.absolute()) == action


def test_less_than_is_typed_as_shift_comma():
    action = GuiAction(ops=[TypeOp(text="a<b<", interval=0.02)])
    split = split_less_than(action)
    assert split.ops == [
        TypeOp(text="a", interval=0.02),
        KeyOp(op="hotkey", keys=["shift", ","]),
        TypeOp(text="b", interval=0.02),
        KeyOp(op="hotkey", keys=["shift", ","]),
    ]
    assert "<" not in gui_code(action, SCREEN)
    untouched = GuiAction(ops=[TypeOp(text="a>b")])
    assert split_less_than(untouched) == untouched


@pytest.mark.parametrize(
    ("control", "expected"),
    [
        (Control(kind="wait"), "WAIT"),
        (Control(kind="terminate", value="success"), "DONE"),
        (Control(kind="terminate", value="failure"), "FAIL"),
        (Control(kind="terminate"), "DONE"),
        (Control(kind="answer", value="42"), None),
    ],
)
def test_control_maps_to_osworld_special_actions(control, expected):
    assert control_command(control) == expected


def test_cli_result_reads_run_bash_script_answers():
    ok = cli_result({"status": "success", "output": "hi\n", "error": "", "returncode": 0}, 0.1)
    assert (ok.status, ok.returncode, ok.stdout) == ("ok", 0, "hi\n")
    failed = cli_result(
        {"status": "error", "output": "ls: cannot access 'x'\n", "error": "", "returncode": 2}, 0.1
    )
    assert (failed.status, failed.returncode) == ("error", 2)
    # OSWorld's server answers a timeout with returncode -1 and a message in output
    timeout = cli_result(
        {
            "status": "error",
            "output": "Script execution timed out after 5 seconds",
            "error": "",
            "returncode": -1,
        },
        5,
    )
    assert timeout.status == "timeout"
    # the client's own give-up answer after its retries: the script never ran
    gave_up = cli_result(
        {
            "status": "error",
            "output": "",
            "error": "Failed to execute bash script after 3 retries",
            "returncode": -1,
        },
        1,
    )
    assert gave_up.status == "infra_error"
    assert cli_result(None, 1).status == "infra_error"


# Real output of `xprop -id W _NET_WM_NAME WM_NAME WM_CLASS` (xprop 1.2.5, Debian 12) for an xterm titled
# `user@host: ~/a "q"`: xprop does not escape inner quotes, and a missing property prints "not found.".
XPROP_XTERM = """_NET_WM_NAME:  not found.
WM_NAME(STRING) = "user@host: ~/a "q""
WM_CLASS(STRING) = "xterm", "XTerm"
"""


def test_parse_xprop_focus():
    assert parse_xprop_focus(XPROP_XTERM) == Focus(title='user@host: ~/a "q"', wm_class="xterm")
    utf8 = '_NET_WM_NAME(UTF8_STRING) = "book.xlsx - LibreOffice Calc"\nWM_NAME(STRING) = "book.xlsx"\n'
    assert parse_xprop_focus(utf8) == Focus(title="book.xlsx - LibreOffice Calc", wm_class=None)
    assert (
        parse_xprop_focus("_NET_WM_NAME:  not found.\nWM_NAME:  not found.\nWM_CLASS:  not found.\n") is None
    )
    assert parse_xprop_focus("") is None


def test_observation_from_obs_dict():
    png = _png((1, 2, 3))
    obs = observation_from_osworld({"screenshot": png, "terminal": "out", "accessibility_tree": None})
    assert obs.screenshot_png == png and obs.text == "out"
    with pytest.raises(EnvError):
        observation_from_osworld({"screenshot": None})


def test_task_config_is_osworld_task_json():
    task = load_task(SUITE_DIR / "calc" / "sy-calc-sum-total.json")
    config = task_config(task)
    assert "switchyard" not in config
    assert (config["id"], config["instruction"]) == (task.id, task.instruction)
    assert [step["type"] for step in config["config"]] == [step.type for step in task.config]
    upload = next(step for step in config["config"] if step["type"] == "upload_file")
    assert all(
        os.path.isabs(f["local_path"]) and os.path.isfile(f["local_path"])
        for f in upload["parameters"]["files"]
    )
    # OSWorld calls len() on evaluator["result"] and tests `"expected" in evaluator`: no nulls may reach it
    assert config["evaluator"]["func"] == "compare_table" and "expected" not in config["evaluator"]
    assert json.loads(json.dumps(config)) == config


def test_reset_sends_task_config():
    env, fake = _env(query_focus=False)
    task = load_task(SUITE_DIR / "calc" / "sy-calc-sum-total.json")
    env.reset(task)
    assert fake.calls[0] == ("reset", task_config(task))


# ---------------------------------------------------------------- the adapter over a recording stand-in


def test_adapter_satisfies_env_protocol():
    env, _ = _env()
    assert isinstance(env, Env)
    assert env.screen == SCREEN


def test_gui_step_sends_pyautogui_code_with_pause():
    env, fake = _env(pause=0.25)
    action = GuiAction(ops=[MouseOp(op="doubleClick", x=100, y=200), TypeOp(text="hello", interval=0.02)])
    obs, result = env.step(action)
    step_calls = [c for c in fake.calls if c[0] == "step"]
    assert len(step_calls) == 1
    _, code, pause = step_calls[0]
    assert pause == 0.25
    assert parse_code(code, screen=SCREEN, space=CoordSpace.absolute()) == action
    assert result.status == "ok" and result.duration is not None
    assert obs.screenshot_png == fake.frame
    assert obs.focus == Focus(title="user@vm: ~", wm_class="gnome-terminal-server")


def test_cli_step_runs_bash_script_and_marks_vm_dirty():
    env, fake = _env(query_focus=False)
    fake.bash_answers.append({"status": "error", "output": "No such file\n", "error": "", "returncode": 1})
    obs, result = env.step(CliAction(command="cat /nope", timeout=2.5))
    assert ("run_bash_script", "cat /nope", 3) in fake.calls  # whole seconds, rounded up
    assert not any(c[0] == "step" for c in fake.calls)
    assert (result.status, result.returncode) == ("error", 1)
    assert obs.text == "No such file\n"
    # otherwise a docker/cloud VM would skip its snapshot revert at the next reset
    assert fake.is_environment_used is True


def test_control_steps_and_evaluate_go_through_desktop_env():
    env, fake = _env(query_focus=False)
    env.step(Control(kind="wait"))
    env.step(Control(kind="terminate", value="failure"))
    env.step(Control(kind="answer", value="42"))
    sent = [c[1] for c in fake.calls if c[0] == "step"]
    assert sent == ["WAIT", "FAIL"]
    fake.score = 0.5
    assert env.evaluate() == 0.5


def test_tool_call_is_not_executed():
    env, fake = _env(query_focus=False)
    obs, result = env.step(ToolCall(name="set_cell", arguments={"cell": "A1"}))
    assert result.status == "not_executed" and "set_cell" in result.stderr
    assert not any(c[0] in ("step", "run_bash_script") for c in fake.calls)
    assert env.tool_executor is None


def test_reset_without_task_and_close():
    env, fake = _env(query_focus=False)
    obs = env.reset(None)
    assert fake.calls[0] == ("reset", None)
    assert obs.screenshot_png == fake.frame
    env.close()
    assert fake.calls[-1] == ("close",)


def test_missing_osworld_raises_import_error_with_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "desktop_env", None)  # makes `import desktop_env...` raise ImportError
    with pytest.raises(ImportError) as info:
        OSWorldEnv(OSWorldConfig())
    assert "pip install desktop-env" in str(info.value)
    assert str(info.value) == INSTALL_HINT


# ---------------------------------------------------------------- the focus script against a real X server

_NEEDED = ("Xvfb", "openbox", "xterm", "xdotool", "xprop", "xdpyinfo")


@pytest.mark.desktop
@pytest.mark.skipif(
    any(shutil.which(t) is None for t in _NEEDED), reason="needs Xvfb, openbox, xterm, x11-utils"
)
def test_focus_script_reads_the_focused_xterm(tmp_path):
    display = f":{200 + os.getpid() % 300}"
    env = {**os.environ, "DISPLAY": display}
    procs = [subprocess.Popen(["Xvfb", display, "-screen", "0", "640x480x24", "-nolisten", "tcp"])]
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["xdpyinfo"], env=env, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "Xvfb did not come up"
            time.sleep(0.02)
        procs.append(subprocess.Popen(["openbox"], env=env, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(["xterm", "-T", "agent shell"], env=env, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while True:
            found = subprocess.run(
                ["xdotool", "search", "--sync", "--name", "agent shell", "windowactivate", "--sync"],
                env=env,
                capture_output=True,
                timeout=10,
            )
            out = subprocess.run(["bash", "-c", FOCUS_SCRIPT], env=env, capture_output=True, text=True)
            if found.returncode == 0 and out.returncode == 0:
                break
            assert time.monotonic() < deadline, out.stderr
            time.sleep(0.05)
        assert parse_xprop_focus(out.stdout) == Focus(title="agent shell", wm_class="xterm")
    finally:
        for proc in reversed(procs):
            proc.kill()
            proc.wait()
