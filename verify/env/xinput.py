"""Translate pyautogui ops (synth.schema, absolute pixels) into `xdotool` command chains.

xdotool is driven with an explicit display per call, so one harness process can drive many displays
(pyautogui binds to $DISPLAY at import). It also types `<` correctly (pyautogui bug #198) and keeps
repeated letters when given a per-key delay. Pure functions: no display needed to test them.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from synth.schema import KeyOp, MouseOp, PyAutoGUIOp, Screen, ScrollOp, TypeOp


class UnknownKey(ValueError):
    """A key name pyautogui would not accept either."""


_BUTTONS = {"left": "1", "middle": "2", "right": "3"}

# pyautogui key names (KEYBOARD_KEYS) -> X keysym names
_NAMED = {
    "enter": "Return", "return": "Return", "\n": "Return", "\r": "Return",
    "tab": "Tab", "\t": "Tab", "space": "space", " ": "space",
    "esc": "Escape", "escape": "Escape", "backspace": "BackSpace", "\b": "BackSpace",
    "delete": "Delete", "del": "Delete", "insert": "Insert",
    "home": "Home", "end": "End", "pageup": "Prior", "pgup": "Prior", "pagedown": "Next", "pgdn": "Next",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "shift": "Shift_L", "shiftleft": "Shift_L", "shiftright": "Shift_R",
    "ctrl": "Control_L", "control": "Control_L", "ctrlleft": "Control_L", "ctrlright": "Control_R",
    "alt": "Alt_L", "altleft": "Alt_L", "altright": "Alt_R",
    "option": "Alt_L", "optionleft": "Alt_L", "optionright": "Alt_R",
    "win": "Super_L", "winleft": "Super_L", "winright": "Super_R", "super": "Super_L",
    "command": "Super_L", "cmd": "Super_L",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock", "pause": "Pause",
    "printscreen": "Print", "prtsc": "Print", "prtscr": "Print", "prntscrn": "Print", "print": "Print",
    "apps": "Menu", "menu": "Menu", "clear": "Clear", "help": "Help", "select": "Select", "execute": "Execute",
    "add": "KP_Add", "subtract": "KP_Subtract", "multiply": "KP_Multiply", "divide": "KP_Divide",
    "decimal": "KP_Decimal", "separator": "KP_Separator",
    "volumemute": "XF86AudioMute", "volumedown": "XF86AudioLowerVolume", "volumeup": "XF86AudioRaiseVolume",
    "playpause": "XF86AudioPlay", "nexttrack": "XF86AudioNext", "prevtrack": "XF86AudioPrev",
    "browserback": "XF86Back", "browserforward": "XF86Forward", "browserrefresh": "XF86Refresh",
}  # fmt: skip
_NAMED |= {f"f{i}": f"F{i}" for i in range(1, 25)}
_NAMED |= {f"num{i}": f"KP_{i}" for i in range(10)}

_PUNCT = {
    "!": "exclam", '"': "quotedbl", "#": "numbersign", "$": "dollar", "%": "percent", "&": "ampersand",
    "'": "apostrophe", "(": "parenleft", ")": "parenright", "*": "asterisk", "+": "plus", ",": "comma",
    "-": "minus", ".": "period", "/": "slash", ":": "colon", ";": "semicolon", "<": "less", "=": "equal",
    ">": "greater", "?": "question", "@": "at", "[": "bracketleft", "\\": "backslash", "]": "bracketright",
    "^": "asciicircum", "_": "underscore", "`": "grave", "{": "braceleft", "|": "bar", "}": "braceright",
    "~": "asciitilde",
}  # fmt: skip


def keysym(key: str) -> str:
    """X keysym name for a pyautogui key name ('ctrl' -> 'Control_L', '<' -> 'less', 'é' -> 'U00E9')."""
    if len(key) == 1:
        if key in _NAMED:
            return _NAMED[key]
        if key in _PUNCT:
            return _PUNCT[key]
        if key in string.ascii_letters or key in string.digits:
            return key
        if key.isprintable():
            return f"U{ord(key):04X}"
        raise UnknownKey(f"unknown key {key!r}")
    # pyautogui lower-cases multi-character key names too
    name = key.lower()
    if name in _NAMED:
        return _NAMED[name]
    raise UnknownKey(f"unknown key {key!r}")


def _point(x: float, y: float, screen: Screen) -> list[str]:
    """`mousemove` to the point, clamped onto the screen as pyautogui does.

    No `--sync`: it blocked for ~15 s when the pointer already sat on the target (measured on this Xvfb), and
    it is not needed for order: the X server handles the warp before the button and key events that follow
    it on the same connection."""
    px = min(max(round(x), 0), screen.width - 1)
    py = min(max(round(y), 0), screen.height - 1)
    return ["mousemove", str(px), str(py)]


def op_commands(op: PyAutoGUIOp, screen: Screen, type_delay_ms: int = 12) -> list[list[str]]:
    """One op as a list of xdotool commands (each `[name, *args]`)."""
    if isinstance(op, MouseOp):
        move = [_point(op.x, op.y, screen)] if op.x is not None and op.y is not None else []
        button = _BUTTONS[op.button]
        repeat = {"click": op.clicks, "doubleClick": 2, "tripleClick": 3}.get(op.op, 1)
        if op.op == "rightClick":
            button = "3"
        elif op.op == "middleClick":
            button = "2"
        if op.op in ("click", "doubleClick", "tripleClick", "rightClick", "middleClick"):
            return [*move, ["click", "--repeat", str(repeat), "--delay", "60", button]]
        if op.op == "moveTo":
            return move
        if op.op == "dragTo":
            # press where the pointer is, move, release: pyautogui.dragTo semantics
            return [["mousedown", button], *move, ["mouseup", button]]
        if op.op == "mouseDown":
            return [*move, ["mousedown", button]]
        return [*move, ["mouseup", button]]  # mouseUp
    if isinstance(op, ScrollOp):
        move = [_point(op.x, op.y, screen)] if op.x is not None and op.y is not None else []
        if op.amount == 0:
            return move
        # X buttons: 4/5 = wheel up/down, 6/7 = wheel left/right
        buttons = {"scroll": ("4", "5"), "hscroll": ("7", "6")}[op.op]
        button = buttons[0] if op.amount > 0 else buttons[1]
        return [*move, ["click", "--repeat", str(abs(op.amount)), "--delay", "20", button]]
    if isinstance(op, KeyOp):
        syms = [keysym(k) for k in op.keys]
        if op.op == "press":
            return [["key", "--delay", str(type_delay_ms), *(syms * op.presses)]]
        if op.op == "hotkey":
            return [["key", "+".join(syms)]]
        return [["keydown" if op.op == "keyDown" else "keyup", *syms]]
    if isinstance(op, TypeOp):
        delay = str(max(type_delay_ms, round(op.interval * 1000)))
        # xdotool types "\n" as the Linefeed keysym, which LibreOffice ignores; pyautogui presses Return
        commands: list[list[str]] = []
        for part in re.split(r"([\r\n])", op.text):
            if part in ("\n", "\r"):
                commands.append(["key", "--delay", delay, "Return"])
            elif part:
                commands.append(["type", "--delay", delay, "--", part])
        return commands
    raise TypeError(f"not a pyautogui op: {op!r}")


def xdotool_chains(ops: Iterable[PyAutoGUIOp], screen: Screen, type_delay_ms: int = 12) -> list[list[str]]:
    """Ops grouped into as few xdotool invocations as possible (`type` swallows the rest of its
    invocation's arguments, so it always ends a chain).

    Raises UnknownKey before anything would run, so an action with a bad key has no partial effect.
    """
    chains: list[list[str]] = [[]]
    for op in ops:
        for cmd in op_commands(op, screen, type_delay_ms):
            chains[-1].extend(cmd)
            if cmd[0] == "type":
                chains.append([])
    return [c for c in chains if c]
