"""The embedded desktop end to end: real Xvfb, openbox, xterm, LibreOffice Calc, the bubblewrap sandbox."""

from __future__ import annotations

import io
import os
import subprocess
import time
from pathlib import Path

import openpyxl
import pytest
from PIL import Image

from synth.schema import CliAction, Control, GuiAction, KeyOp, MouseOp, StepResult, ToolCall, TypeOp
from verify.env.base import Env, EnvError, TaskContext
from verify.env.local import LocalDesktop, cli_observation_text
from verify.env.procs import alive, remove_stale_dirs

pytestmark = pytest.mark.desktop


def _terminal(env: LocalDesktop) -> int:
    env.open_terminal()
    return next(wid for wid, _, cls in env.display.windows() if cls == "xterm")


def test_implements_the_protocols(desktop):
    assert isinstance(desktop, Env) and isinstance(desktop, TaskContext)


def test_reset_gives_a_frame_of_the_screen_size(desktop):
    obs = desktop.reset()
    with Image.open(io.BytesIO(obs.screenshot_png)) as image:
        assert image.format == "PNG" and image.size == (1280, 720)
    assert obs.focus is not None and obs.focus.wm_class is None  # nothing open yet
    assert obs.text is None


def test_typing_into_xterm_writes_exact_text(desktop):
    desktop.reset()
    _terminal(desktop)
    # (no tab: bash's readline would complete instead of inserting it)
    lines = ["a<b>c | \"d\" 'e' ~f $HOME `x` \\ %s", "bookkeeper  committee  aaa", "last line"]
    text = "cat > ~/typed.txt <<'END'\n" + "\n".join(lines) + "\nEND\n"
    obs, result = desktop.step(GuiAction(ops=[TypeOp(text=text)]))
    assert result.status == "ok"
    assert obs.focus.wm_class == "xterm"
    # the heredoc is written by the shell: wait for it through the shell itself, not a sleep
    desktop.run_shell(
        "for i in $(seq 100); do grep -q last ~/typed.txt 2>/dev/null && break; sleep 0.05; done"
    )
    assert desktop.host_path("/home/user/typed.txt").read_text() == "\n".join(lines) + "\n"


def test_a_gui_step_returns_once_the_typed_command_has_finished(desktop):
    desktop.reset()
    _terminal(desktop)
    # silent for 1.5 s: the screen settles long before the command ends
    obs, result = desktop.step(GuiAction(ops=[TypeOp(text="sleep 1.5; echo done > ~/finished.txt\n")]))
    assert result.status == "ok" and result.duration >= 1.5
    assert desktop.host_path("/home/user/finished.txt").read_text() == "done\n"
    # a background job is not waited for, as a person sees the prompt again at once
    _, result = desktop.step(GuiAction(ops=[TypeOp(text="sleep 30 &\n")]))
    assert result.duration < 10


def test_moving_to_where_the_pointer_already_is_does_not_block(desktop):
    desktop.reset()  # parks the pointer at pointer_home (0, 0)
    for _ in range(2):
        _, result = desktop.step(GuiAction(ops=[MouseOp(op="moveTo", x=0, y=0)]))
        assert result.status == "ok" and result.duration < 2, "xdotool mousemove --sync blocked ~15 s here"


def test_a_click_changes_the_screen(desktop):
    desktop.reset()
    x, y, _, _ = desktop.display.window_rect(_terminal(desktop))
    desktop.settle()
    before = desktop.raw_screenshot()
    # double-clicking the first word of the prompt selects it (drawn highlighted)
    obs, result = desktop.step(GuiAction(ops=[MouseOp(op="doubleClick", x=x + 12, y=y + 8)]))
    assert result.status == "ok"
    assert desktop.raw_screenshot() != before
    # and a click on the empty desktop changes nothing (no root menu: it would start programs unsandboxed)
    settled = desktop.raw_screenshot()
    desktop.step(GuiAction(ops=[MouseOp(op="rightClick", x=5, y=715)]))
    assert desktop.raw_screenshot() == settled


def test_home_is_restored_between_resets(desktop):
    desktop.reset()
    result = desktop.run_shell(
        "echo x > ~/new.txt && rm -rf ~/Desktop && echo junk >> ~/.bashrc && echo t > /tmp/t"
    )
    assert result.status == "ok"
    bashrc = desktop.template / ".bashrc"
    desktop.reset()
    assert not desktop.host_path("/home/user/new.txt").exists()
    assert desktop.host_path("/home/user/Desktop").is_dir()
    assert desktop.host_path("/home/user/.bashrc").read_text() == bashrc.read_text()
    assert desktop.run_shell("ls /tmp").stdout == ""


def test_reset_kills_the_agents_apps(desktop):
    desktop.reset()
    _terminal(desktop)
    desktop.reset()
    assert desktop.display.windows() == []


def test_cli_tool_and_control_steps(desktop):
    desktop.reset()
    obs, result = desktop.step(CliAction(command="echo out; echo err >&2; exit 4"))
    assert (result.status, result.returncode, result.stdout, result.stderr) == ("error", 4, "out\n", "err\n")
    assert obs.text == "out\nerr\n[exit code 4]" == cli_observation_text(result)
    obs, result = desktop.step(ToolCall(name="sheet.set", arguments={"cell": "A1"}))
    assert result.status == "not_executed" and obs.screenshot_png
    obs, result = desktop.step(Control(kind="wait"))
    assert result.status == "ok" and result.duration >= desktop.config.wait_quiet


def test_tool_executor_runs_and_its_files_belong_to_the_agent():
    def executor(call: ToolCall) -> StepResult:
        env.host_path("/home/user/tool.txt").write_text(call.arguments["text"] + "\n")
        return StepResult(status="ok", stdout="written")

    with LocalDesktop(tool_executor=executor) as env:
        env.reset()
        obs, result = env.step(ToolCall(name="write", arguments={"text": "hi"}))
        assert result.status == "ok" and obs.text == "written"
        assert env.run_shell("echo more >> ~/tool.txt && cat ~/tool.txt").stdout == "hi\nmore\n"


def test_unknown_key_is_an_error_with_no_input(desktop):
    desktop.reset()
    _terminal(desktop)
    desktop.settle()
    before = desktop.raw_screenshot()
    _, result = desktop.step(GuiAction(ops=[TypeOp(text="abc"), KeyOp(op="press", keys=["nosuchkey"])]))
    assert result.status == "error" and "nosuchkey" in result.stderr
    assert desktop.raw_screenshot() == before


def test_host_path_stays_in_the_home(desktop):
    desktop.reset()
    assert desktop.host_path("/home/user/a/../b.txt") == desktop.home / "b.txt"
    for bad in ["/etc/passwd", "/home/user/../../etc/passwd", "home/user/x", "/home/username"]:
        with pytest.raises(ValueError):
            desktop.host_path(bad)
    desktop.run_shell("ln -s /etc/shadow ~/leak")
    with pytest.raises(ValueError):
        desktop.host_path("/home/user/leak")


def test_calc_opens_a_file_and_ctrl_s_saves_it():
    def setup(task, ctx):
        book = openpyxl.Workbook()
        book.active["A1"] = "header"
        book.save(ctx.host_path("/home/user/book.xlsx"))
        ctx.launch(["libreoffice", "--calc", "/home/user/book.xlsx"])
        assert ctx.wait_for_window("book.xlsx - LibreOffice Calc", 60)

    with LocalDesktop(setup_runner=setup, evaluator=lambda task, ctx: 1.0) as env:
        obs = env.reset(task=object())
        assert obs.focus.wm_class == "libreoffice-calc" and "read-only" not in obs.focus.title
        ops = [
            KeyOp(op="hotkey", keys=["ctrl", "home"]),
            KeyOp(op="press", keys=["down"]),
            TypeOp(text="42\n7\n"),
        ]
        _, result = env.step(GuiAction(ops=ops))
        assert result.status == "ok"
        obs, _ = env.step(GuiAction(ops=[KeyOp(op="hotkey", keys=["ctrl", "s"])]))
        assert obs.focus.title == "book.xlsx - LibreOffice Calc"  # no "Keep current format" dialog
        sheet = openpyxl.load_workbook(env.host_path("/home/user/book.xlsx")).active
        assert [cell.value for cell in sheet["A"]] == ["header", 42, 7]
        assert env.evaluate() == 1.0


def _title_slide(path: Path, title: str) -> None:
    """A one-slide deck whose title box sits across the middle of the slide, i.e. under the screen centre."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    box = slide.shapes.title
    box.left, box.top, box.width, box.height = Inches(0.5), Inches(3.0), Inches(9.0), Inches(1.5)
    box.text = title
    slide.placeholders[1].top = Inches(5.5)
    deck.save(path)


def test_text_typed_into_an_impress_title_is_saved_exactly():
    """Regression: with the pointer left over the title box, Impress selected each character typed under it
    after a Ctrl/Shift press (here Ctrl+A), so the next key replaced it ('Quarterly Review' -> 'Quarterlyw')."""
    from pptx import Presentation

    def setup(task, ctx):
        _title_slide(ctx.host_path("/home/user/title.pptx"), "Draft")
        ctx.launch(["libreoffice", "--impress", "/home/user/title.pptx"])
        assert ctx.wait_for_window("title.pptx - LibreOffice Impress", 60)

    sentence = "Quarterly Review of Sales"
    with LocalDesktop(setup_runner=setup) as env:
        # where a previous episode (or Xvfb's start) may leave it: the middle of the screen, over the title
        env.display.run_ops([MouseOp(op="moveTo", x=env.screen.width // 2, y=env.screen.height // 2)])
        env.reset(task=object())
        for ops in (
            [KeyOp(op="press", keys=["tab"]), KeyOp(op="press", keys=["enter"])],
            [KeyOp(op="hotkey", keys=["ctrl", "a"])],
            [TypeOp(text=sentence, interval=0.04)],
            [KeyOp(op="press", keys=["esc"])],
            [KeyOp(op="hotkey", keys=["ctrl", "s"])],
        ):
            _, result = env.step(GuiAction(ops=ops))
            assert result.status == "ok"
        deck = Presentation(env.host_path("/home/user/title.pptx"))
        assert deck.slides[0].shapes.title.text == sentence


def test_evaluate_without_task_is_an_env_error(desktop):
    desktop.reset()
    with pytest.raises(EnvError):
        desktop.evaluate()


def test_close_leaves_nothing_behind():
    env = LocalDesktop()
    env.reset()
    env.open_terminal()
    xvfb = env.display._xvfb.pid
    number, root = env.display.number, env.root
    env.close()
    env.close()  # idempotent
    assert not alive(xvfb)
    assert not os.path.exists(f"/tmp/.X11-unix/X{number}") and not os.path.exists(f"/tmp/.X{number}-lock")
    assert not root.exists()
    with pytest.raises(EnvError):
        env.reset()


def test_harness_killed_by_sigkill_takes_its_desktop_along():
    script = (
        "import sys, time\n"
        "from verify.env.local import LocalDesktop\n"
        "env = LocalDesktop(); env.reset(); env.open_terminal()\n"
        "print(env.display._xvfb.pid, env.root, env.template.parent, flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(["python3", "-c", script], stdout=subprocess.PIPE, cwd=Path(__file__).parents[3])
    pid, root, template = proc.stdout.readline().split()
    xvfb = int(pid)
    proc.kill()
    proc.wait()
    # the parent-death signal is delivered by the kernel; wait for it through /proc, bounded
    deadline = time.monotonic() + 5
    while alive(xvfb) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(xvfb)
    # its scratch directories are left behind, and removed by the next harness that looks
    assert Path(root.decode()).exists() and Path(template.decode()).exists()
    for prefix in ("switchyard-desktop-", "switchyard-template-"):
        remove_stale_dirs(Path(root.decode()).parent, prefix)
    assert not Path(root.decode()).exists() and not Path(template.decode()).exists()
