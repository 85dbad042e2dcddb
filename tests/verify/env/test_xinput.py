from __future__ import annotations

import pytest

from synth.schema import KeyOp, MouseOp, Screen, ScrollOp, TypeOp
from verify.env.xinput import UnknownKey, keysym, op_commands, xdotool_chains

SCREEN = Screen(width=1280, height=720)


@pytest.mark.parametrize(
    ("key", "sym"),
    [("ctrl", "Control_L"), ("Enter", "Return"), ("<", "less"), (">", "greater"), ("|", "bar"), ("a", "a"),
     ("A", "A"), ("f5", "F5"), ("pgdn", "Next"), ("é", "U00E9"), ("\n", "Return"), ("win", "Super_L")],
)  # fmt: skip
def test_keysym(key, sym):
    assert keysym(key) == sym


@pytest.mark.parametrize("key", ["nosuchkey", "ctrl+c", "", "\x00"])
def test_unknown_keys_raise(key):
    with pytest.raises(UnknownKey):
        keysym(key)


def test_click_moves_then_clicks_and_clamps_to_screen():
    cmds = op_commands(MouseOp(op="doubleClick", x=2000.4, y=-3, button="left"), SCREEN)
    assert cmds[0] == ["mousemove", "1279", "0"]
    assert cmds[1][:3] == ["click", "--repeat", "2"] and cmds[1][-1] == "1"


def test_click_without_position_does_not_move():
    assert op_commands(MouseOp(op="rightClick"), SCREEN) == [["click", "--repeat", "1", "--delay", "60", "3"]]


def test_drag_presses_at_current_position():
    cmds = op_commands(MouseOp(op="dragTo", x=10, y=20, button="right"), SCREEN)
    assert cmds == [["mousedown", "3"], ["mousemove", "10", "20"], ["mouseup", "3"]]


def test_scroll_direction_buttons():
    assert op_commands(ScrollOp(op="scroll", amount=3), SCREEN)[-1][-1] == "4"
    assert op_commands(ScrollOp(op="scroll", amount=-2), SCREEN)[-1][2] == "2"
    assert op_commands(ScrollOp(op="hscroll", amount=-1), SCREEN)[-1][-1] == "6"


def test_hotkey_is_a_chord_and_press_repeats():
    assert op_commands(KeyOp(op="hotkey", keys=["ctrl", "shift", "s"]), SCREEN) == [
        ["key", "Control_L+Shift_L+s"]
    ]
    press = op_commands(KeyOp(op="press", keys=["tab", "a"], presses=2), SCREEN)[0]
    assert press[3:] == ["Tab", "a", "Tab", "a"]


def test_type_sends_newlines_as_return_and_keeps_text_verbatim():
    cmds = op_commands(TypeOp(text="a<b>|'\"~\n\nzz"), SCREEN, type_delay_ms=7)
    assert cmds == [
        ["type", "--delay", "7", "--", "a<b>|'\"~"],
        ["key", "--delay", "7", "Return"],
        ["key", "--delay", "7", "Return"],
        ["type", "--delay", "7", "--", "zz"],
    ]


def test_type_interval_raises_the_delay():
    assert op_commands(TypeOp(text="x", interval=0.05), SCREEN, type_delay_ms=12)[0][2] == "50"


def test_chains_break_after_type_only():
    ops = [MouseOp(op="click", x=1, y=2), KeyOp(op="hotkey", keys=["ctrl", "a"]), TypeOp(text="hi"),
           KeyOp(op="press", keys=["enter"])]  # fmt: skip
    chains = xdotool_chains(ops, SCREEN)
    assert len(chains) == 2
    assert chains[0][0] == "mousemove" and chains[0][-1] == "hi"
    assert chains[1] == ["key", "--delay", "12", "Return"]


def test_bad_key_fails_before_any_chain_is_built():
    with pytest.raises(UnknownKey):
        xdotool_chains([MouseOp(op="click", x=1, y=1), KeyOp(op="press", keys=["bogus"])], SCREEN)
