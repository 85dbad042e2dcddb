"""pyautogui code <-> canonical actions, and the HybridCUA / Qwen renderers."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synth.actions import (
    PYAUTOGUI_SIGNATURES,
    ActionParseError,
    ActionRenderError,
    normalize_key,
    parse_code,
    parse_hybridcua_bash,
    parse_hybridcua_tool_call,
    pyautogui_key_names,
    render_code,
    render_hybridcua_bash,
    render_hybridcua_tool_call,
    render_qwen_tool_call,
)
from synth.coords import CoordinateOutOfRange, CoordSpace
from synth.schema import CliAction, Control, GuiAction, KeyOp, MouseOp, Screen, ScrollOp, ToolCall, TypeOp

SCREEN = Screen(width=1920, height=1080)
ABS = CoordSpace.absolute()
NORM = CoordSpace.normalized()
GRID = CoordSpace.grid(999)
FIXTURES = Path(__file__).parent / "fixtures" / "real_pyautogui_codes.json"


def ops(code: str, space: CoordSpace = ABS) -> list:
    action = parse_code(code, screen=SCREEN, space=space)
    assert isinstance(action, GuiAction), action
    return action.ops


def one(code: str, space: CoordSpace = ABS):
    [op] = ops(code, space)
    return op


# ---------------------------------------------------------------- every op form


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("pyautogui.click(100, 200)", MouseOp(op="click", x=100, y=200)),
        ("pyautogui.click(x=100, y=200)", MouseOp(op="click", x=100, y=200)),
        ("pyautogui.click((100, 200))", MouseOp(op="click", x=100, y=200)),
        ("pyautogui.click([100, 200], clicks=2)", MouseOp(op="click", x=100, y=200, clicks=2)),
        (
            "pyautogui.click(100, 200, 3, 0.1, 'right')",
            MouseOp(op="click", x=100, y=200, clicks=3, button="right"),
        ),
        ("pyautogui.click(button='secondary')", MouseOp(op="click", button="right")),
        (
            "pyautogui.click(100, 200, button='primary', duration=0.5)",
            MouseOp(op="click", x=100, y=200, duration=0.5),
        ),
        ("pyautogui.click()", MouseOp(op="click")),
        ("pyautogui.doubleClick(5, 6)", MouseOp(op="doubleClick", x=5, y=6)),
        ("pyautogui.doubleClick(5, 6, button='right')", MouseOp(op="doubleClick", x=5, y=6, button="right")),
        ("pyautogui.tripleClick(x=5, y=6, interval=0.1)", MouseOp(op="tripleClick", x=5, y=6)),
        ("pyautogui.rightClick(5, 6)", MouseOp(op="rightClick", x=5, y=6, button="right")),
        ("pyautogui.middleClick()", MouseOp(op="middleClick", button="middle")),
        ("pyautogui.moveTo(10, 20, 0.25)", MouseOp(op="moveTo", x=10, y=20, duration=0.25)),
        ("pyautogui.dragTo(10, 20, duration=1, button='left')", MouseOp(op="dragTo", x=10, y=20, duration=1)),
        ("pyautogui.dragTo(10, 20, button='right')", MouseOp(op="dragTo", x=10, y=20, button="right")),
        ("pyautogui.mouseDown()", MouseOp(op="mouseDown")),
        ("pyautogui.mouseDown(3, 4, button='middle')", MouseOp(op="mouseDown", x=3, y=4, button="middle")),
        ("pyautogui.mouseUp(button=3)", MouseOp(op="mouseUp", button="right")),
        ("pyautogui.scroll(-5)", ScrollOp(op="scroll", amount=-5)),
        ("pyautogui.scroll(clicks=3, x=7, y=8)", ScrollOp(op="scroll", amount=3, x=7, y=8)),
        ("pyautogui.scroll(-2.0)", ScrollOp(op="scroll", amount=-2)),
        ("pyautogui.vscroll(4)", ScrollOp(op="scroll", amount=4)),
        ("pyautogui.hscroll(2, 7, 8)", ScrollOp(op="hscroll", amount=2, x=7, y=8)),
        ("pyautogui.press('Enter')", KeyOp(op="press", keys=["enter"])),
        ("pyautogui.press('a', presses=3, interval=0.1)", KeyOp(op="press", keys=["a"], presses=3)),
        ("pyautogui.press(['tab', 'tab', 'Return'])", KeyOp(op="press", keys=["tab", "tab", "return"])),
        ("pyautogui.press(keys=['enter'])", KeyOp(op="press", keys=["enter"])),
        ("pyautogui.hotkey('Ctrl', 'Shift', 't')", KeyOp(op="hotkey", keys=["ctrl", "shift", "t"])),
        ("pyautogui.hotkey(['ctrl', 'c'])", KeyOp(op="hotkey", keys=["ctrl", "c"])),
        ("pyautogui.hotkey('command', 'space', interval=0.5)", KeyOp(op="hotkey", keys=["command", "space"])),
        ("pyautogui.hotkey(keys=['ctrl', 'v'])", KeyOp(op="hotkey", keys=["ctrl", "v"])),
        ("pyautogui.keyDown('shift')", KeyOp(op="keyDown", keys=["shift"])),
        ("pyautogui.keyUp(key='SHIFT')", KeyOp(op="keyUp", keys=["shift"])),
        ("pyautogui.typewrite('Hello, World!')", TypeOp(text="Hello, World!")),
        ("pyautogui.write('hi', interval=0.05)", TypeOp(text="hi", interval=0.05)),
        ("pyautogui.write(message='x\\ny')", TypeOp(text="x\ny")),
        ("pyautogui.typewrite(['a', 'left', 'ENTER'])", KeyOp(op="press", keys=["a", "left", "enter"])),
        ("pyautogui.press('control')", KeyOp(op="press", keys=["ctrl"])),
        ("pyautogui.press('A')", KeyOp(op="press", keys=["A"])),
        ("computer.triple_click(x=5, y=6)", MouseOp(op="tripleClick", x=5, y=6)),
    ],
)
def test_parse_every_op_form(code, expected):
    assert one(code) == expected


def test_several_statements_become_one_action_in_order():
    code = (
        "import pyautogui\nimport time\n"
        "pyautogui.click(1, 2); time.sleep(0.5)\n"
        "pyautogui.typewrite('abc')\n"
        "pyautogui.press('enter')\n"
    )
    assert ops(code) == [
        MouseOp(op="click", x=1, y=2),
        TypeOp(text="abc"),
        KeyOp(op="press", keys=["enter"]),
    ]


def test_indented_code_is_accepted():
    assert one("\n    pyautogui.click(1, 2)\n") == MouseOp(op="click", x=1, y=2)


# ---------------------------------------------------------------- control actions


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("computer.terminate(status='success')", Control(kind="terminate", value="success")),
        ('computer.terminate(status="failure")', Control(kind="terminate", value="failure")),
        (
            "computer.terminate('failure', answer='Dialog blocked')",
            Control(kind="terminate", value="failure"),
        ),
        ("computer.wait()", Control(kind="wait")),
        ("computer.wait(seconds=2)", Control(kind="wait")),
        ("computer.answer('42 apples')", Control(kind="answer", value="42 apples")),
        ("computer.answer(answer='yes')", Control(kind="answer", value="yes")),
        ("DONE", Control(kind="terminate", value="success")),
        ("  FAIL\n", Control(kind="terminate", value="failure")),
        ("WAIT", Control(kind="wait")),
        ("'DONE'", Control(kind="terminate", value="success")),
        ("import time\ntime.sleep(3)", Control(kind="wait")),
    ],
)
def test_parse_control(code, expected):
    assert parse_code(code, screen=SCREEN, space=NORM) == expected


# ---------------------------------------------------------------- errors name the call


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("pyautogui.locateOnScreen('a.png')", "pyautogui.locateOnScreen('a.png')"),
        ("os.system('rm -rf /')", "os.system('rm -rf /')"),
        ("pyautogui.click(x, 5)", "pyautogui.click(x, 5)"),
        ("pyautogui.click(1, 2, button=btn)", "button=btn"),
        ("pyautogui.click(5)", "missing coordinate"),
        ("pyautogui.click(y=5)", "missing coordinate"),
        ("pyautogui.moveTo()", "pyautogui.moveTo()"),
        ("pyautogui.dragTo(duration=1)", "missing coordinate"),
        ("pyautogui.click('button.png')", "pyautogui.click('button.png')"),
        ("pyautogui.click(1, 2, foo=3)", "foo"),
        ("pyautogui.click(1, 2, clicks=0)", "pyautogui.click(1, 2, clicks=0)"),
        ("pyautogui.click(1, 2, button='up')", "unknown mouse button"),
        ("pyautogui.scroll()", "pyautogui.scroll()"),
        ("pyautogui.scroll(1.5)", "whole number"),
        ("pyautogui.press('enterr')", "unknown key name 'enterr'"),
        ("pyautogui.press([])", "empty key list"),
        ("pyautogui.hotkey()", "pyautogui.hotkey()"),
        ("pyautogui.moveTo(1, 2, tween=pyautogui.easeInQuad)", "tween=pyautogui.easeInQuad"),
        ("pyautogui.dragTo(1, 2, mouseDownUp=False)", "mouseDownUp"),
        ("pyautogui.click(*pts)", "pyautogui.click(*pts)"),
        ("computer.terminate(status='maybe')", "computer.terminate(status='maybe')"),
        ("computer.fly()", "computer.fly()"),
        ("pyautogui.click(1, 2)\ncomputer.terminate(status='success')", "mixed GUI and control"),
        ("DONE\npyautogui.press('a')", "mixed GUI and control"),
        ("computer.wait()\ncomputer.terminate(status='success')", "several control calls"),
        ("import os", "import os"),
        ("import pyautogui as pg", "import pyautogui as pg"),
        ("x = 1", "x = 1"),
        ("for i in range(3):\n    pyautogui.press('a')", "for i in range(3)"),
        ("pyautogui.click(1, 2", "syntax error"),
        ("", "no action"),
        ("import pyautogui", "no action"),
        ("time.sleep(-1)", "negative sleep"),
    ],
)
def test_errors_name_the_offending_call(code, needle):
    with pytest.raises(ActionParseError) as err:
        parse_code(code, screen=SCREEN, space=ABS)
    assert needle in str(err.value)
    assert isinstance(err.value, ValueError)


def test_out_of_range_coordinate_propagates():
    with pytest.raises(CoordinateOutOfRange, match="x=1.5"):
        parse_code("pyautogui.click(x=1.5, y=0.5)", screen=SCREEN, space=NORM)
    with pytest.raises(CoordinateOutOfRange, match="y=1200"):
        parse_code("pyautogui.moveTo(10, 1200)", screen=SCREEN, space=ABS)


# ---------------------------------------------------------------- coordinate spaces


def test_coordinates_convert_to_absolute_pixels():
    assert one("pyautogui.click(x=0.5, y=0.25)", NORM) == MouseOp(op="click", x=960, y=270)
    assert one("pyautogui.click(500, 500)", GRID) == MouseOp(op="click", x=960, y=540)
    qwen25 = CoordSpace.qwen25_for(SCREEN)  # 1932 x 1092
    assert one("pyautogui.scroll(-1, 966, 546)", qwen25) == ScrollOp(op="scroll", amount=-1, x=960, y=540)


def test_render_writes_coordinates_in_the_requested_space():
    action = GuiAction(ops=[MouseOp(op="click", x=960, y=540)])
    assert render_code(action, screen=SCREEN) == "pyautogui.click(960, 540)"
    assert render_code(action, screen=SCREEN, space=NORM) == "pyautogui.click(0.5, 0.5)"
    assert render_code(action, screen=SCREEN, space=GRID) == "pyautogui.click(500, 500)"


# ---------------------------------------------------------------- key names


def test_key_names_come_from_pyautogui():
    names = pyautogui_key_names()
    assert {"enter", "ctrl", "f12", "pagedown", "win"} <= names
    assert normalize_key("PageDown") == "pagedown"
    assert normalize_key("x") == "x"
    with pytest.raises(ActionParseError):
        normalize_key("hyper")


def test_signature_table_matches_installed_pyautogui():
    """Our binding table must accept exactly the parameters pyautogui's functions declare."""
    spec = importlib.util.find_spec("pyautogui")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for name, sig in PYAUTOGUI_SIGNATURES.items():
        if name in ("write", "hotkey"):  # write is an alias; hotkey takes *args, **kwargs
            continue
        real = [a.arg for a in functions[name].args.args]
        ours = [p.name for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        assert ours == real, name


# ---------------------------------------------------------------- round trips (property tests)

coord_x = st.integers(0, SCREEN.width)
coord_y = st.integers(0, SCREEN.height)
key_names = st.sampled_from(sorted(k for k in pyautogui_key_names() if len(k) > 1)) | st.sampled_from(
    "abcxyz019"
)
buttons = st.sampled_from(["left", "right", "middle"])
durations = st.sampled_from([0.0, 0.25, 1.0])


@st.composite
def mouse_ops(draw, lattice=None):
    op = draw(st.sampled_from(["click", "doubleClick", "tripleClick", "rightClick", "middleClick", "moveTo",
                               "dragTo", "mouseDown", "mouseUp"]))  # fmt: skip
    has_point = op in ("moveTo", "dragTo") or draw(st.booleans())
    x = y = None
    if has_point:
        x, y = draw(lattice) if lattice is not None else (float(draw(coord_x)), float(draw(coord_y)))
    fields = {"op": op, "x": x, "y": y, "duration": draw(durations)}
    match op:
        case "rightClick":
            fields["button"] = "right"
        case "middleClick":
            fields["button"] = "middle"
        case "moveTo":
            pass
        case "click":
            fields["button"] = draw(buttons)
            fields["clicks"] = draw(st.integers(1, 3))
        case _:
            fields["button"] = draw(buttons)
    return MouseOp(**fields)


@st.composite
def scroll_ops(draw, lattice=None):
    point = draw(st.none() | (lattice if lattice is not None else st.tuples(coord_x, coord_y)))
    x, y = (None, None) if point is None else (float(point[0]), float(point[1]))
    return ScrollOp(
        op=draw(st.sampled_from(["scroll", "hscroll"])), amount=draw(st.integers(-50, 50)), x=x, y=y
    )


key_ops = st.one_of(
    st.builds(KeyOp, op=st.just("press"), keys=st.lists(key_names, min_size=1, max_size=3),
              presses=st.integers(1, 4)),
    st.builds(KeyOp, op=st.just("hotkey"), keys=st.lists(key_names, min_size=1, max_size=3)),
    st.builds(KeyOp, op=st.sampled_from(["keyDown", "keyUp"]), keys=st.lists(key_names, min_size=1, max_size=1)),
)  # fmt: skip
type_ops = st.builds(TypeOp, text=st.text(max_size=30), interval=st.sampled_from([0.0, 0.02, 0.1]))


def gui_actions(lattice=None):
    op = st.one_of(mouse_ops(lattice), scroll_ops(lattice), key_ops, type_ops)
    return st.builds(GuiAction, ops=st.lists(op, min_size=1, max_size=5))


@given(gui_actions())
def test_render_then_parse_round_trips_absolute(action):
    code = render_code(action, screen=SCREEN)
    assert parse_code(code, screen=SCREEN, space=ABS) == action


@given(gui_actions())
def test_render_then_parse_round_trips_normalized(action):
    code = render_code(action, screen=SCREEN, space=NORM)
    assert parse_code(code, screen=SCREEN, space=NORM) == action


@st.composite
def grid_points(draw):
    # points that are exactly representable on the 0-999 grid: what a HybridCUA model can express
    gx, gy = draw(st.integers(0, 999)), draw(st.integers(0, 999))
    return GRID.to_pixels(gx, gy, SCREEN)


@given(st.sampled_from([Control(kind="wait"), Control(kind="terminate", value="success"),
                        Control(kind="terminate", value="failure")]) | st.builds(
    Control, kind=st.just("answer"), value=st.text(max_size=20)))  # fmt: skip
def test_control_round_trips(action):
    assert parse_code(render_code(action, screen=SCREEN), screen=SCREEN, space=ABS) == action


@given(gui_actions(lattice=grid_points()))
def test_hybridcua_bash_round_trip(action):
    command = render_hybridcua_bash(action, screen=SCREEN)
    assert command.startswith("python3 <<'PY'\nimport pyautogui\n") and command.endswith("\nPY")
    assert parse_hybridcua_bash(command, screen=SCREEN) == action


cli_actions = st.builds(
    CliAction,
    command=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
        lambda s: s.strip() and "</parameter>" not in s and s == s.strip("\n")
    ),
    timeout=st.sampled_from([30.0, 5.0, 120.0]),
)


@given(gui_actions(lattice=grid_points()) | cli_actions | st.sampled_from(
    [Control(kind="wait"), Control(kind="terminate", value="failure"), Control(kind="answer", value="7")]))  # fmt: skip
def test_hybridcua_tool_call_round_trip(action):
    text = render_hybridcua_tool_call(action, screen=SCREEN)
    assert text.startswith("<tool_call>\n<function=computer_use>\n<parameter=action>\n")
    assert parse_hybridcua_tool_call(text, screen=SCREEN) == action


def test_hybridcua_bash_interface_follows_content():
    gui = parse_hybridcua_bash(
        "python3 <<'PY'\nimport pyautogui\npyautogui.click(500, 500)\nPY", screen=SCREEN
    )
    assert gui == GuiAction(ops=[MouseOp(op="click", x=960, y=540)])
    dash = parse_hybridcua_bash(
        "python3 - <<'EOF'\nimport pyautogui\npyautogui.press('f5')\nEOF\n", screen=SCREEN
    )
    assert dash == GuiAction(ops=[KeyOp(op="press", keys=["f5"])])
    # python that does not drive pyautogui, and plain shell, are CLI
    for command in (
        "python3 <<'PY'\nimport csv\nprint(1)\nPY",
        "ls -la ~/Documents/",
        "cat <<'PY' > notes.txt\nimport pyautogui\nPY",
    ):
        assert parse_hybridcua_bash(command, screen=SCREEN) == CliAction(command=command)
    with pytest.raises(ActionParseError, match="for _ in range"):
        parse_hybridcua_bash(
            "python3 <<'PY'\nimport pyautogui\nfor _ in range(3):\n    pyautogui.press('a')\nPY",
            screen=SCREEN,
        )


def test_hybridcua_cannot_express_tool_calls():
    with pytest.raises(ActionRenderError):
        render_hybridcua_tool_call(ToolCall(name="x"), screen=SCREEN)
    with pytest.raises(ActionRenderError):
        render_hybridcua_bash(Control(kind="wait"), screen=SCREEN)


# ---------------------------------------------------------------- Qwen computer_use


def qwen_calls(text: str) -> list[dict]:
    blocks = text.split("\n</tool_call>")
    out = []
    for block in blocks:
        if block.strip():
            head, _, payload = block.strip().partition("<tool_call>\n")
            assert head == ""
            out.append(json.loads(payload))
    return out


def test_qwen_one_block_per_op_in_the_given_space():
    action = GuiAction(
        ops=[
            MouseOp(op="click", x=960, y=540),
            MouseOp(op="doubleClick", x=0, y=0),
            MouseOp(op="click", x=96, y=54, button="right"),
            TypeOp(text="héllo"),
            KeyOp(op="hotkey", keys=["ctrl", "s"]),
            KeyOp(op="press", keys=["tab", "enter"], presses=2),
            ScrollOp(op="scroll", amount=-3, x=960, y=540),
        ]
    )
    calls = qwen_calls(render_qwen_tool_call(action, screen=SCREEN, space=GRID))
    assert {c["name"] for c in calls} == {"computer_use"}
    assert [c["arguments"] for c in calls] == [
        {"action": "left_click", "coordinate": [500, 500]},
        {"action": "double_click", "coordinate": [0, 0]},
        {"action": "right_click", "coordinate": [50, 50]},
        {"action": "type", "text": "héllo"},
        {"action": "key", "keys": ["ctrl", "s"]},
        {"action": "key", "keys": ["tab"]},
        {"action": "key", "keys": ["enter"]},
        {"action": "key", "keys": ["tab"]},
        {"action": "key", "keys": ["enter"]},
        {"action": "mouse_move", "coordinate": [500, 500]},
        {"action": "scroll", "pixels": -3},
    ]


def test_qwen25_resized_coordinates():
    action = GuiAction(ops=[MouseOp(op="moveTo", x=960, y=540)])
    [call] = qwen_calls(render_qwen_tool_call(action, screen=SCREEN, space=CoordSpace.qwen25_for(SCREEN)))
    assert call["arguments"] == {"action": "mouse_move", "coordinate": [966, 546]}


def test_qwen_drag_forms():
    # Qwen's own left_click_drag code shape: mouseDown at the pointer, dragTo, mouseUp
    code = "pyautogui.moveTo(100, 100)\npyautogui.mouseDown()\npyautogui.dragTo(500, 300, duration=0.5)\npyautogui.mouseUp()"
    calls = qwen_calls(
        render_qwen_tool_call(parse_code(code, screen=SCREEN, space=ABS), screen=SCREEN, space=ABS)
    )
    assert [c["arguments"] for c in calls] == [
        {"action": "mouse_move", "coordinate": [100, 100]},
        {"action": "left_click_drag", "coordinate": [500, 300]},
    ]
    for bad in (
        "pyautogui.mouseDown()",
        "pyautogui.keyDown('shift')",
        "pyautogui.dragTo(5, 5, button='right')",
    ):
        with pytest.raises(ActionRenderError):
            render_qwen_tool_call(parse_code(bad, screen=SCREEN, space=ABS), screen=SCREEN, space=ABS)


@pytest.mark.parametrize(
    ("action", "name", "arguments"),
    [
        (CliAction(command="ls -la"), "bash", {"command": "ls -la"}),
        (Control(kind="wait"), "computer_use", {"action": "wait", "time": 1.0}),
        (
            Control(kind="terminate", value="failure"),
            "computer_use",
            {"action": "terminate", "status": "failure"},
        ),
        (Control(kind="answer", value="42"), "computer_use", {"action": "answer", "text": "42"}),
        (ToolCall(name="calc.sum", arguments={"a": 1}), "calc.sum", {"a": 1}),
    ],
)
def test_qwen_non_gui_actions(action, name, arguments):
    [call] = qwen_calls(render_qwen_tool_call(action, screen=SCREEN, space=GRID))
    assert call == {"name": name, "arguments": arguments}


# ---------------------------------------------------------------- real published samples


def _space(name: str) -> CoordSpace:
    return {"normalized": NORM, "absolute": ABS, "grid999": GRID}[name]


REAL = json.loads(FIXTURES.read_text(encoding="utf-8"))


@pytest.mark.parametrize("sample", REAL["codes"], ids=lambda s: s["code"][:40])
def test_real_codes_parse(sample):
    screen = Screen(**REAL["screen"])
    action = parse_code(sample["code"], screen=screen, space=_space(sample["space"]))
    if sample["kind"] == "gui":
        assert isinstance(action, GuiAction)
        assert [op.op if op.op != "write" else "write" for op in action.ops] == sample["ops"]
        # and what we render reads back the same
        assert parse_code(render_code(action, screen=screen), screen=screen, space=ABS) == action
    else:
        assert action == Control(kind=sample["control"][0], value=sample["control"][1])


def test_real_agentnet_values():
    screen = Screen(**REAL["screen"])
    by_code = {s["code"]: s for s in REAL["codes"]}
    click = parse_code("pyautogui.click(x=0.9722, y=0.9701)", screen=screen, space=NORM)
    assert click == GuiAction(ops=[MouseOp(op="click", x=0.9722 * 1920, y=0.9701 * 1080)])
    assert "pyautogui.click(x=0.9722, y=0.9701)" in by_code
    typed = parse_code('pyautogui.write(message="help me polish this: \'")', screen=screen, space=NORM)
    assert typed == GuiAction(ops=[TypeOp(text="help me polish this: '")])
    hotkey = parse_code("pyautogui.hotkey(keys=['ctrl', 'F'])", screen=screen, space=NORM)
    # pyautogui keeps single characters as given (an upper-case letter implies shift)
    assert hotkey == GuiAction(ops=[KeyOp(op="hotkey", keys=["ctrl", "F"])])


@pytest.mark.parametrize("sample", REAL["hybridcua_bash"], ids=lambda s: s["kind"])
def test_real_hybridcua_commands(sample):
    action = parse_hybridcua_bash(sample["command"], screen=Screen(**REAL["screen"]))
    assert action.type == sample["kind"]
    if sample["kind"] == "gui":
        assert action == GuiAction(ops=[MouseOp(op="click", x=96.0, y=16.2)])
