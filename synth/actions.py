"""pyautogui source code <-> canonical actions, and renderers to model-facing action formats.

- `parse_code` reads pyautogui code (AgentNet/OpenCUA `code` strings, OSWorld actions) with `ast` into a
  `GuiAction` (absolute screen pixels) or a `Control`; it never executes or regex-matches the code.
- `render_code` writes a `GuiAction`/`Control` back as pyautogui source; `parse_code(render_code(a)) == a`.
- `render_hybridcua_bash` / `parse_hybridcua_bash`: the `command` of HybridCUA's unified bash action, where a
  GUI step is a pyautogui heredoc (`python3 <<'PY' ... PY`) on the 0–999 grid and a CLI step is the command;
  `render_hybridcua_tool_call` / `parse_hybridcua_tool_call`: the whole `<tool_call><function=...>` block.
- `render_qwen_tool_call`: Qwen2.5-VL / Qwen3-VL `computer_use` tool calls (`<tool_call>{json}</tool_call>`).

Parsing decisions (documented here because they shape the data):
- `import pyautogui` / `import time` lines are accepted and dropped; any other import is an error.
- `time.sleep(s)` is dropped inside a GUI action: the schema has no sleep op and replay waits for the screen
  to settle instead of sleeping blindly. Code made only of sleeps is `Control(kind="wait")`.
- A mouse call with neither x nor y acts at the current pointer (x = y = None), as pyautogui does; only one of
  the two, or none for `moveTo`/`dragTo` (a no-op in pyautogui, so never intended), is a missing coordinate.
- `rightClick`/`middleClick` keep their op name and set `button` to 'right'/'middle'; 'primary'/'secondary'
  map to 'left'/'right'. `typewrite`/`write` with a string become `TypeOp`; with a list of key names they
  press those keys in order, which is `KeyOp(op="press", keys=[...])`.
- `hotkey(keys=[...])` is accepted because AgentNet writes it that way (real pyautogui ignores `keys=`).
- Key names are normalized as pyautogui does (multi-character names lower-cased; single characters kept,
  since 'A' means shift+a) plus a few aliases models emit ('control' -> 'ctrl'); a multi-character name
  pyautogui does not know is an error, because pyautogui would silently do nothing.
- `interval` is kept for `write` only; other intervals, `logScreenshot` and `_pause` are dropped. A `tween=`
  (not a literal) or `mouseDownUp=False` is an error.
- Control calls: `computer.wait()`, `computer.terminate(status=...)` (an `answer=` beside it is dropped:
  `Control` holds one value), `computer.answer(...)` (AgentNet / OpenCUA) and the bare OSWorld strings WAIT,
  DONE (terminate success), FAIL (terminate failure). OpenCUA's `computer.triple_click(x, y)` is a GUI op.
  GUI and control calls in one string, or two control calls, are an error.
- Rendering writes x, y positionally (`pyautogui.click(960, 540)`), as pyautogui's docs, OSWorld and
  HybridCUA's prompt do, and text with `typewrite`, which every pyautogui version has.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import json
import math
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from synth.coords import CoordSpace
from synth.schema import (
    CliAction,
    Control,
    GuiAction,
    KeyOp,
    MouseOp,
    PyAutoGUIOp,
    Screen,
    ScrollOp,
    ToolCall,
    TypeOp,
)

__all__ = [
    "ActionParseError",
    "ActionRenderError",
    "HYBRIDCUA_SPACE",
    "parse_code",
    "render_code",
    "render_hybridcua_bash",
    "parse_hybridcua_bash",
    "render_hybridcua_tool_call",
    "parse_hybridcua_tool_call",
    "render_qwen_tool_call",
    "normalize_key",
    "pyautogui_key_names",
]

Action = GuiAction | CliAction | ToolCall | Control

# HybridCUA writes GUI coordinates on a 0–999 grid (see render_hybridcua_bash).
HYBRIDCUA_SPACE = CoordSpace.grid(999)
ABSOLUTE = CoordSpace.absolute()


class ActionParseError(ValueError):
    """Action code that cannot be read into a canonical action; the message names the offending call."""


class ActionRenderError(ValueError):
    """A canonical action that the requested output format cannot express."""


# ---------------------------------------------------------------- pyautogui vocabulary

_EXTRA_KEY_ALIASES = {
    # names models and datasets emit that pyautogui does not know; mapped to pyautogui's own name
    "control": "ctrl",
    "cmd": "command",
    "super": "win",
    "meta": "win",
    "windows": "win",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "page_up": "pageup",
    "page_down": "pagedown",
    "caps_lock": "capslock",
    "spacebar": "space",
}


@functools.cache
def pyautogui_key_names() -> frozenset[str]:
    """pyautogui's KEY_NAMES, read from its installed source without importing it.

    Importing pyautogui connects to an X display, which a pure parser must not need.
    """
    spec = importlib.util.find_spec("pyautogui")
    if spec is None or spec.origin is None:
        raise RuntimeError("pyautogui is not installed; it defines the key names")
    with open(spec.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "KEY_NAMES"
        ):
            return frozenset(ast.literal_eval(node.value))
    raise RuntimeError(f"KEY_NAMES not found in {spec.origin}")


def normalize_key(key: object, *, call: str = "key") -> str:
    """A pyautogui key name as pyautogui itself would use it; raises ActionParseError for unknown names."""
    if not isinstance(key, str) or key == "":
        raise ActionParseError(f"{call}: key name must be a non-empty string, got {key!r}")
    if len(key) == 1:
        return key
    name = key.lower()
    name = _EXTRA_KEY_ALIASES.get(name, name)
    if name not in pyautogui_key_names():
        raise ActionParseError(f"{call}: unknown key name {key!r}")
    return name


_BUTTONS = {"left": "left", "right": "right", "middle": "middle", "primary": "left", "secondary": "right"}
_BUTTON_NUMBERS = {1: "left", 2: "middle", 3: "right"}

_NO_DEFAULT = inspect.Parameter.empty


def _sig(*params: str | tuple[str, Any], var_positional: str | None = None) -> inspect.Signature:
    """A signature mirroring a pyautogui function; bare names are required, (name, default) optional."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    out: list[inspect.Parameter] = []
    if var_positional:
        out.append(inspect.Parameter(var_positional, inspect.Parameter.VAR_POSITIONAL))
        kind = inspect.Parameter.KEYWORD_ONLY
    for p in params:
        name, default = (p, _NO_DEFAULT) if isinstance(p, str) else p
        out.append(inspect.Parameter(name, kind, default=default))
    return inspect.Signature(out)


_XY = (("x", None), ("y", None))
_TAIL = (("logScreenshot", None), ("_pause", True))
# Parameter lists as in pyautogui 0.9.54 (tests check them against the installed source).
PYAUTOGUI_SIGNATURES: dict[str, inspect.Signature] = {
    "click": _sig(*_XY, ("clicks", 1), ("interval", 0.0), ("button", "primary"), ("duration", 0.0),
                  ("tween", None), *_TAIL),
    "rightClick": _sig(*_XY, ("interval", 0.0), ("duration", 0.0), ("tween", None), *_TAIL),
    "middleClick": _sig(*_XY, ("interval", 0.0), ("duration", 0.0), ("tween", None), *_TAIL),
    "doubleClick": _sig(*_XY, ("interval", 0.0), ("button", "left"), ("duration", 0.0), ("tween", None), *_TAIL),
    "tripleClick": _sig(*_XY, ("interval", 0.0), ("button", "left"), ("duration", 0.0), ("tween", None), *_TAIL),
    "moveTo": _sig(*_XY, ("duration", 0.0), ("tween", None), ("logScreenshot", False), ("_pause", True)),
    "dragTo": _sig(*_XY, ("duration", 0.0), ("tween", None), ("button", "primary"), *_TAIL,
                   ("mouseDownUp", True)),
    "mouseDown": _sig(*_XY, ("button", "primary"), ("duration", 0.0), ("tween", None), *_TAIL),
    "mouseUp": _sig(*_XY, ("button", "primary"), ("duration", 0.0), ("tween", None), *_TAIL),
    "scroll": _sig("clicks", *_XY, *_TAIL),
    "hscroll": _sig("clicks", *_XY, *_TAIL),
    "vscroll": _sig("clicks", *_XY, *_TAIL),
    "press": _sig("keys", ("presses", 1), ("interval", 0.0), *_TAIL),
    "typewrite": _sig("message", ("interval", 0.0), *_TAIL),
    "write": _sig("message", ("interval", 0.0), *_TAIL),
    "keyDown": _sig("key", *_TAIL),
    "keyUp": _sig("key", *_TAIL),
    # keys= is not pyautogui's (its hotkey ignores unknown kwargs) but AgentNet writes hotkey(keys=[...])
    "hotkey": _sig(("keys", None), ("interval", 0.0), *_TAIL, var_positional="args"),
}  # fmt: skip


# ---------------------------------------------------------------- parsing


class _Ctx:
    """What every per-call parser needs: where coordinates live and how to name the call in errors."""

    def __init__(self, screen: Screen, space: CoordSpace, call_src: str) -> None:
        self.screen = screen
        self.space = space
        self.call = call_src

    def fail(self, why: str) -> ActionParseError:
        return ActionParseError(f"{self.call}: {why}")


def _literal_args(call: ast.Call, ctx: _Ctx) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for node in call.args:
        if isinstance(node, ast.Starred):
            raise ctx.fail("*args are not supported")
        args.append(_literal(node, ctx))
    for kw in call.keywords:
        if kw.arg is None:
            raise ctx.fail("**kwargs are not supported")
        kwargs[kw.arg] = _literal(kw.value, ctx, name=kw.arg)
    return args, kwargs


def _literal(node: ast.expr, ctx: _Ctx, name: str | None = None) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        what = f"argument {name}=" if name else "argument "
        raise ctx.fail(f"{what}{ast.unparse(node)} is not a literal") from None


def _bind(fn: str, call: ast.Call, ctx: _Ctx) -> dict[str, Any]:
    args, kwargs = _literal_args(call, ctx)
    values = _bind_sig(PYAUTOGUI_SIGNATURES[fn], args, kwargs, ctx)
    if values.get("tween") is not None:
        raise ctx.fail("tween= is not supported")
    if values.get("mouseDownUp") is False:
        raise ctx.fail("mouseDownUp=False is not supported")
    return values


def _number(value: Any, what: str, ctx: _Ctx) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ctx.fail(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _int(value: Any, what: str, ctx: _Ctx) -> int:
    num = _number(value, what, ctx)
    if not num.is_integer():
        raise ctx.fail(f"{what} must be a whole number, got {value!r}")
    return int(num)


def _xy(values: dict[str, Any], ctx: _Ctx, *, required: bool) -> tuple[float | None, float | None]:
    x, y = values.get("x"), values.get("y")
    # pyautogui accepts the point as one tuple/list in x (its _normalizeXYArgs)
    if isinstance(x, tuple | list) and y is None:
        if len(x) != 2:
            raise ctx.fail(f"point must have two coordinates, got {x!r}")
        x, y = x
    if isinstance(x, str):
        raise ctx.fail("locating an image on screen (string x) is not supported")
    if x is None and y is None:
        if required:
            raise ctx.fail("missing coordinate")
        return None, None
    if x is None or y is None:
        raise ctx.fail(f"missing coordinate (x={x!r}, y={y!r})")
    return ctx.space.to_pixels(_number(x, "x", ctx), _number(y, "y", ctx), ctx.screen)


def _button(value: Any, ctx: _Ctx) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value in _BUTTON_NUMBERS:
        return _BUTTON_NUMBERS[value]
    if isinstance(value, str) and value.lower() in _BUTTONS:
        return _BUTTONS[value.lower()]
    raise ctx.fail(f"unknown mouse button {value!r}")


def _duration(values: dict[str, Any], ctx: _Ctx) -> float:
    return _number(values.get("duration", 0.0), "duration", ctx)


def _parse_mouse(fn: str, values: dict[str, Any], ctx: _Ctx) -> MouseOp:
    x, y = _xy(values, ctx, required=fn in ("moveTo", "dragTo"))
    fields: dict[str, Any] = {"op": fn, "x": x, "y": y, "duration": _duration(values, ctx)}
    match fn:
        case "rightClick":
            fields["button"] = "right"
        case "middleClick":
            fields["button"] = "middle"
        case "moveTo":
            pass
        case "click":
            fields["button"] = _button(values["button"], ctx)
            fields["clicks"] = _int(values["clicks"], "clicks", ctx)
        case _:
            fields["button"] = _button(values["button"], ctx)
    return _build(MouseOp, fields, ctx)


def _parse_scroll(fn: str, values: dict[str, Any], ctx: _Ctx) -> ScrollOp:
    x, y = _xy(values, ctx, required=False)
    op = "hscroll" if fn == "hscroll" else "scroll"
    return _build(ScrollOp, {"op": op, "amount": _int(values["clicks"], "clicks", ctx), "x": x, "y": y}, ctx)


def _key_list(value: Any, ctx: _Ctx) -> list[str]:
    if isinstance(value, str):
        return [normalize_key(value, call=ctx.call)]
    if isinstance(value, list | tuple):
        if not value:
            raise ctx.fail("empty key list")
        return [normalize_key(k, call=ctx.call) for k in value]
    raise ctx.fail(f"keys must be a string or a list of strings, got {value!r}")


def _parse_press(fn: str, values: dict[str, Any], ctx: _Ctx) -> KeyOp:
    presses = _int(values["presses"], "presses", ctx)
    return _build(KeyOp, {"op": "press", "keys": _key_list(values["keys"], ctx), "presses": presses}, ctx)


def _parse_hotkey(fn: str, values: dict[str, Any], ctx: _Ctx) -> KeyOp:
    keys = values.get("args", ())
    if values.get("keys") is not None:
        if keys:
            raise ctx.fail("keys given both positionally and as keys=")
        keys = (values["keys"],)
    # like pyautogui, hotkey(['ctrl', 'c']) is hotkey('ctrl', 'c')
    if keys and isinstance(keys[0], list | tuple):
        if len(keys) != 1:
            raise ctx.fail("a key list must be the only positional argument")
        keys = keys[0]
    if not keys:
        raise ctx.fail("no keys given")
    return _build(KeyOp, {"op": "hotkey", "keys": _key_list(list(keys), ctx)}, ctx)


def _parse_key_updown(fn: str, values: dict[str, Any], ctx: _Ctx) -> KeyOp:
    if not isinstance(values["key"], str):
        raise ctx.fail(f"key must be a string, got {values['key']!r}")
    return _build(KeyOp, {"op": fn, "keys": [normalize_key(values["key"], call=ctx.call)]}, ctx)


def _parse_write(fn: str, values: dict[str, Any], ctx: _Ctx) -> KeyOp | TypeOp:
    message = values["message"]
    if isinstance(message, list | tuple):
        return _build(KeyOp, {"op": "press", "keys": _key_list(message, ctx)}, ctx)
    if not isinstance(message, str):
        raise ctx.fail(f"message must be a string or a list of key names, got {message!r}")
    return _build(TypeOp, {"text": message, "interval": _number(values["interval"], "interval", ctx)}, ctx)


def _build(model: Any, fields: dict[str, Any], ctx: _Ctx) -> Any:
    try:
        return model(**fields)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ctx.fail(problems) from None


_OpParser = Callable[[str, dict[str, Any], _Ctx], PyAutoGUIOp]
_PYAUTOGUI_PARSERS: dict[str, _OpParser] = {
    **dict.fromkeys(
        ["click", "doubleClick", "tripleClick", "rightClick", "middleClick", "moveTo", "dragTo", "mouseDown",
         "mouseUp"],
        _parse_mouse,
    ),
    "scroll": _parse_scroll,
    "hscroll": _parse_scroll,
    "vscroll": _parse_scroll,
    "press": _parse_press,
    "hotkey": _parse_hotkey,
    "keyDown": _parse_key_updown,
    "keyUp": _parse_key_updown,
    "typewrite": _parse_write,
    "write": _parse_write,
}  # fmt: skip


# ------------------------------------------------ control calls (AgentNet / OpenCUA `computer.*`, OSWorld)

_OSWORLD_SPECIAL = {
    "WAIT": Control(kind="wait"),
    "DONE": Control(kind="terminate", value="success"),
    "FAIL": Control(kind="terminate", value="failure"),
}
_TERMINATE_STATUSES = {"success": "success", "failure": "failure", "fail": "failure", "failed": "failure"}
# OpenCUA's prompt offers computer.triple_click(x, y) next to pyautogui (no pyautogui.tripleClick there)
_COMPUTER_GUI_CALLS = {"triple_click": "tripleClick", "tripleClick": "tripleClick"}


def _bind_sig(sig: inspect.Signature, args: list[Any], kwargs: dict[str, Any], ctx: _Ctx) -> dict[str, Any]:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise ctx.fail(str(e)) from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _parse_control(fn: str, call: ast.Call, ctx: _Ctx) -> Control:
    args, kwargs = _literal_args(call, ctx)
    match fn:
        case "wait":
            # a duration, when given, is dropped: replay waits on the screen, not the clock
            _bind_sig(_sig(("seconds", None)), args, kwargs, ctx)
            return Control(kind="wait")
        case "terminate":
            # OpenCUA-style terminate(status=..., answer=...) keeps only the status: Control has one value
            values = _bind_sig(_sig(("status", "success"), ("answer", None)), args, kwargs, ctx)
            status = values["status"]
            if not isinstance(status, str) or status.lower() not in _TERMINATE_STATUSES:
                raise ctx.fail(f"unknown terminate status {status!r}")
            return Control(kind="terminate", value=_TERMINATE_STATUSES[status.lower()])
        case "answer":
            if len(args) + len(kwargs) != 1 or (kwargs and next(iter(kwargs)) not in ("answer", "text")):
                raise ctx.fail("expected exactly one answer argument")
            value = args[0] if args else next(iter(kwargs.values()))
            if not isinstance(value, str):
                value = json.dumps(value)
            return Control(kind="answer", value=value)
    raise ctx.fail("unknown function")


# ---------------------------------------------------------------- statement loop


def _call_name(call: ast.Call) -> tuple[str, str] | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id, func.attr
    return None


def _first_line(node: ast.AST) -> str:
    src = ast.unparse(node)
    return src.splitlines()[0] if src else type(node).__name__


def parse_code(code: str, *, screen: Screen, space: CoordSpace) -> GuiAction | Control:
    """Parse pyautogui / control code into a `GuiAction` (absolute pixels of `screen`) or a `Control`.

    Coordinates in `code` are read in `space`. Raises `ActionParseError` naming the offending call, or
    `CoordinateOutOfRange` for a coordinate outside `space`.
    """
    stripped = code.strip()
    if stripped in _OSWORLD_SPECIAL:
        return _OSWORLD_SPECIAL[stripped]
    try:
        tree = ast.parse(stripped)
    except SyntaxError as e:
        line = (e.text or "").strip()
        raise ActionParseError(f"syntax error at line {e.lineno}: {e.msg}: {line!r}") from None

    ops: list[PyAutoGUIOp] = []
    controls: list[Control] = []
    slept = False
    for stmt in tree.body:
        match stmt:
            case ast.Import(names=aliases):
                for alias in aliases:
                    if alias.name not in ("pyautogui", "time") or alias.asname is not None:
                        raise ActionParseError(
                            f"{_first_line(stmt)}: only 'import pyautogui' and 'import time'"
                        )
            case ast.Expr(value=ast.Name(id=word)) if word in _OSWORLD_SPECIAL:
                controls.append(_OSWORLD_SPECIAL[word])
            case ast.Expr(value=ast.Constant(value=str() as word)) if word.strip() in _OSWORLD_SPECIAL:
                controls.append(_OSWORLD_SPECIAL[word.strip()])
            case ast.Expr(value=ast.Call() as call):
                ctx = _Ctx(screen, space, _first_line(call))
                match _call_name(call):
                    case ("pyautogui", fn) if fn in _PYAUTOGUI_PARSERS:
                        ops.append(_PYAUTOGUI_PARSERS[fn](fn, _bind(fn, call, ctx), ctx))
                    case ("computer", fn) if fn in _COMPUTER_GUI_CALLS:
                        op_name = _COMPUTER_GUI_CALLS[fn]
                        args, kwargs = _literal_args(call, ctx)
                        values = _bind_sig(PYAUTOGUI_SIGNATURES[op_name], args, kwargs, ctx)
                        ops.append(_parse_mouse(op_name, values, ctx))
                    case ("computer", fn):
                        controls.append(_parse_control(fn, call, ctx))
                    case ("time", "sleep"):
                        args, kwargs = _literal_args(call, ctx)
                        if len(args) + len(kwargs) != 1:
                            raise ctx.fail("expected one duration")
                        seconds = _number(args[0] if args else next(iter(kwargs.values())), "seconds", ctx)
                        if seconds < 0:
                            raise ctx.fail("negative sleep")
                        slept = True
                    case _:
                        raise ctx.fail("unknown function")
            case _:
                raise ActionParseError(f"{_first_line(stmt)}: unsupported statement")

    if ops and controls:
        raise ActionParseError(f"mixed GUI and control calls in one action: {stripped!r}")
    if len(controls) > 1:
        raise ActionParseError(f"several control calls in one action: {stripped!r}")
    if controls:
        return controls[0]
    if ops:
        return GuiAction(ops=ops)
    if slept:
        return Control(kind="wait")
    raise ActionParseError(f"no action in code: {stripped!r}")


# ---------------------------------------------------------------- rendering pyautogui code


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _point_args(op: MouseOp | ScrollOp, screen: Screen, space: CoordSpace) -> list[str]:
    if op.x is None or op.y is None:
        if op.x is not None or op.y is not None:
            raise ActionRenderError(f"{op.op}: only one coordinate set")
        return []
    x, y = space.from_pixels(op.x, op.y, screen)
    return [_num(x), _num(y)]


def _render_op(op: PyAutoGUIOp, screen: Screen, space: CoordSpace) -> list[str]:
    # positional x, y as in pyautogui's docs, OSWorld actions and HybridCUA's prompt examples
    match op:
        case MouseOp():
            args = _point_args(op, screen, space)
            if op.op == "click" and op.clicks != 1:
                args.append(f"clicks={op.clicks}")
            # rightClick/middleClick imply their button; moveTo has none
            if op.op not in ("rightClick", "middleClick", "moveTo") and op.button != "left":
                args.append(f"button={op.button!r}")
            if op.duration:
                args.append(f"duration={_num(op.duration)}")
            return [f"pyautogui.{op.op}({', '.join(args)})"]
        case ScrollOp():
            args = [str(op.amount), *_point_args(op, screen, space)]
            return [f"pyautogui.{op.op}({', '.join(args)})"]
        case KeyOp(op="press"):
            keys = repr(op.keys[0]) if len(op.keys) == 1 else repr(list(op.keys))
            presses = f", presses={op.presses}" if op.presses != 1 else ""
            return [f"pyautogui.press({keys}{presses})"]
        case KeyOp(op="hotkey"):
            return [f"pyautogui.hotkey({', '.join(repr(k) for k in op.keys)})"]
        case KeyOp(op="keyDown" | "keyUp"):
            return [f"pyautogui.{op.op}({k!r})" for k in op.keys]
        case TypeOp():
            interval = f", interval={_num(op.interval)}" if op.interval else ""
            return [f"pyautogui.typewrite({op.text!r}{interval})"]
    raise ActionRenderError(f"cannot render op {op!r}")


def _render_control(action: Control) -> str:
    match action.kind:
        case "wait":
            return "computer.wait()"
        case "terminate":
            return f"computer.terminate(status={(action.value or 'success')!r})"
        case "answer":
            return f"computer.answer({(action.value or '')!r})"


def render_code(action: GuiAction | Control, *, screen: Screen, space: CoordSpace = ABSOLUTE) -> str:
    """pyautogui source for a GUI action (one call per line), or the `computer.*` call of a control action.

    Coordinates are written in `space`. `parse_code(render_code(a), space=same)` gives `a` back exactly
    for continuous spaces and for ops already on a quantized space's lattice.
    """
    match action:
        case GuiAction():
            return "\n".join(line for op in action.ops for line in _render_op(op, screen, space))
        case Control():
            return _render_control(action)
    raise ActionRenderError(f"render_code takes a GuiAction or Control, not {type(action).__name__}")


# ---------------------------------------------------------------- HybridCUA unified bash action
#
# Shape from HybridCUA ("HybridCUA: Learning to Orchestrate GUI and CLI for Computer-Use Agents",
# arXiv 2609.38008), whose training agent ports OSWorld `mm_agents/c_gui/prompts.py`: one tool
# (`computer_use`, or `cli` in their A/B) with actions bash / wait / terminate / answer; GUI steps are
# `action=bash` with a quoted heredoc `python3 <<'PY'\nimport pyautogui\n...\nPY`, coordinates 0-999 on
# a screen "treated as 1000x1000" (scaled to pixels by a shim inside the VM); calls are written in the
# Qwen3-Coder XML form `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>...`.

_HEREDOC_DELIMITER = "PY"
_HYBRIDCUA_DEFAULT_TIMEOUT = CliAction.model_fields["timeout"].default


def render_hybridcua_bash(action: Action, *, screen: Screen) -> str:
    """The `command` of HybridCUA's bash action: a pyautogui heredoc on the 0–999 grid, or the CLI command."""
    match action:
        case GuiAction():
            body = render_code(action, screen=screen, space=HYBRIDCUA_SPACE)
            return f"python3 <<'{_HEREDOC_DELIMITER}'\nimport pyautogui\n{body}\n{_HEREDOC_DELIMITER}"
        case CliAction():
            return action.command
    raise ActionRenderError(
        f"HybridCUA bash cannot express a {type(action).__name__}; use render_hybridcua_tool_call"
    )


def _python_heredoc(text: str) -> str | None:
    """The body of `python3 <<'DELIM' ... DELIM` when `text` is exactly one such heredoc, else None."""
    lines = text.strip().splitlines()
    if len(lines) < 2:
        return None
    try:
        tokens = shlex.split(lines[0])
    except ValueError:
        return None
    if not tokens or tokens[0].rsplit("/", 1)[-1] not in ("python", "python3"):
        return None
    # `python3 - <<'PY'` (read the program from stdin) is the same heredoc
    redirect = "".join(t for t in tokens[1:] if t != "-")
    if not redirect.startswith("<<") or redirect.startswith("<<<"):
        return None
    delimiter = redirect[2:].lstrip("-")
    if not delimiter or lines[-1].strip() != delimiter:
        return None
    return "\n".join(lines[1:-1])


def _drives_pyautogui(body: str) -> bool:
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "pyautogui" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "pyautogui":
            return True
    return False


def parse_hybridcua_bash(text: str, *, screen: Screen, timeout: float | None = None) -> GuiAction | CliAction:
    """Read a HybridCUA bash `command`: a python heredoc importing pyautogui is GUI, anything else CLI.

    The interface follows the content, not the channel (DESIGN §3, HybridCUA App. B): python driving
    pyautogui is a GUI step even though it arrives through bash. Its coordinates are read on the 0–999
    grid; a heredoc that imports pyautogui but does more than pyautogui calls raises ActionParseError.
    """
    if not text.strip():
        raise ActionParseError("empty bash command")
    body = _python_heredoc(text)
    if body is not None and _drives_pyautogui(body):
        action = parse_code(body, screen=screen, space=HYBRIDCUA_SPACE)
        if not isinstance(action, GuiAction):
            raise ActionParseError(f"pyautogui heredoc without GUI ops: {text.strip()!r}")
        return action
    return CliAction(command=text, timeout=timeout if timeout is not None else _HYBRIDCUA_DEFAULT_TIMEOUT)


def _xml_tool_call(name: str, params: dict[str, Any]) -> str:
    parts = [f"<tool_call>\n<function={name}>"]
    parts += [f"<parameter={key}>\n{value}\n</parameter>" for key, value in params.items()]
    parts.append("</function>\n</tool_call>")
    return "\n".join(parts)


def render_hybridcua_tool_call(action: Action, *, screen: Screen, tool_name: str = "computer_use") -> str:
    """One HybridCUA tool call block (XML parameter form) for `action`."""
    params: dict[str, Any]
    match action:
        case GuiAction():
            params = {"action": "bash", "command": render_hybridcua_bash(action, screen=screen)}
        case CliAction():
            params = {"action": "bash", "command": action.command}
            if action.timeout != _HYBRIDCUA_DEFAULT_TIMEOUT:
                params["timeout"] = _num(action.timeout)
        case Control(kind="wait"):
            params = {"action": "wait"}
        case Control(kind="terminate"):
            params = {"action": "terminate", "status": action.value or "success"}
        case Control(kind="answer"):
            params = {"action": "answer", "text": action.value or ""}
        case _:
            raise ActionRenderError(f"HybridCUA has no action for a {type(action).__name__}")
    return _xml_tool_call(tool_name, params)


def _split_xml_tool_call(text: str) -> tuple[str, dict[str, str]]:
    """(function name, raw parameter strings) of one `<tool_call><function=..>` block (Qwen3-Coder form)."""
    body = text.strip()
    if not (body.startswith("<tool_call>") and body.endswith("</tool_call>")):
        raise ActionParseError(f"not a single <tool_call> block: {body[:80]!r}")
    body = body[len("<tool_call>") : -len("</tool_call>")].strip()
    head, sep, rest = body.partition(">")
    if not head.startswith("<function=") or not sep or not rest.rstrip().endswith("</function>"):
        raise ActionParseError(f"tool call without <function=...>: {body[:80]!r}")
    name = head[len("<function=") :].strip()
    rest = rest.rstrip()[: -len("</function>")]
    params: dict[str, str] = {}
    while rest.strip():
        rest = rest.lstrip()
        if not rest.startswith("<parameter="):
            raise ActionParseError(f"{name}: unexpected text in tool call: {rest[:80]!r}")
        key, sep, rest = rest[len("<parameter=") :].partition(">")
        value, sep2, rest = rest.partition("</parameter>")
        if not sep or not sep2:
            raise ActionParseError(f"{name}: unterminated <parameter={key}>")
        # the format puts each value on its own lines; only those framing newlines are removed
        params[key.strip()] = value.removeprefix("\n").removesuffix("\n")
    return name, params


def parse_hybridcua_tool_call(text: str, *, screen: Screen) -> Action:
    """Read one HybridCUA tool call block back into an action (inverse of `render_hybridcua_tool_call`)."""
    name, params = _split_xml_tool_call(text)
    call = f"{name}(action={params.get('action')!r})"
    match params.get("action"):
        case "bash":
            if not params.get("command", "").strip():
                raise ActionParseError(f"{call}: bash without command")
            timeout = None
            if "timeout" in params:
                try:
                    timeout = float(params["timeout"])
                except ValueError:
                    raise ActionParseError(f"{call}: timeout {params['timeout']!r} is not a number") from None
            return parse_hybridcua_bash(params["command"], screen=screen, timeout=timeout)
        case "wait":
            return Control(kind="wait")
        case "terminate":
            status = params.get("status", "").strip().lower()
            if status not in _TERMINATE_STATUSES:
                raise ActionParseError(f"{call}: unknown status {params.get('status')!r}")
            return Control(kind="terminate", value=_TERMINATE_STATUSES[status])
        case "answer":
            return Control(kind="answer", value=params.get("text", ""))
    raise ActionParseError(f"{call}: unknown action")


# ---------------------------------------------------------------- Qwen computer_use tool calls
#
# Qwen2.5-VL and Qwen3-VL are prompted with a `computer_use` function (Qwen-Agent style; action enum
# key, type, mouse_move, left_click, left_click_drag, right_click, middle_click, double_click,
# triple_click, scroll, hscroll, wait, terminate, answer; parameters keys, text, coordinate, pixels, time,
# status — QwenLM/Qwen3-VL cookbooks/utils/agent_function_call.py) and answer in the Hermes form
# `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>` (served with vLLM's `hermes` parser).
# The `<function=..><parameter=..>` XML form is Qwen3-Coder's (and HybridCUA's, above), not the VL models'.
# Coordinates: Qwen2.5-VL uses resized-image pixels (`CoordSpace.qwen25_for(screen)`), Qwen3-VL a screen
# treated as 1000x1000 (`CoordSpace.grid(999)`).


def _qwen_point(x: float | None, y: float | None, screen: Screen, space: CoordSpace) -> list[int] | None:
    if x is None or y is None:
        return None
    u, v = space.from_pixels(x, y, screen)
    return [round(u), round(v)]


def _qwen_args(action: str, coordinate: list[int] | None = None, **more: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"action": action}
    if coordinate is not None:
        args["coordinate"] = coordinate
    args.update(more)
    return args


_QWEN_CLICKS = {
    ("click", "left", 1): "left_click",
    ("click", "left", 2): "double_click",
    ("click", "left", 3): "triple_click",
    ("click", "right", 1): "right_click",
    ("click", "middle", 1): "middle_click",
    ("doubleClick", "left", 1): "double_click",
    ("tripleClick", "left", 1): "triple_click",
    ("rightClick", "right", 1): "right_click",
    ("middleClick", "middle", 1): "middle_click",
}


def _qwen_drag(
    ops: Sequence[PyAutoGUIOp], i: int, screen: Screen, space: CoordSpace
) -> tuple[list[dict], int]:
    """mouseDown, moveTo/dragTo..., mouseUp -> mouse_move(start) + left_click_drag(end); returns next index."""
    down = ops[i]
    j = i + 1
    while j < len(ops) and isinstance(ops[j], MouseOp) and ops[j].op in ("moveTo", "dragTo"):
        j += 1
    up = ops[j] if j < len(ops) else None
    if not (isinstance(up, MouseOp) and up.op == "mouseUp" and up.button == "left"):
        raise ActionRenderError("Qwen computer_use cannot hold a mouse button outside a drag")
    end = up if up.x is not None else ops[j - 1] if j - 1 > i else None
    if not isinstance(end, MouseOp) or end.x is None:
        raise ActionRenderError("Qwen computer_use drag needs an end point")
    calls = []
    start = _qwen_point(down.x, down.y, screen, space)  # type: ignore[union-attr]
    if start is not None:
        calls.append(_qwen_args("mouse_move", start))
    calls.append(_qwen_args("left_click_drag", _qwen_point(end.x, end.y, screen, space)))
    return calls, j + 1


def _qwen_gui(ops: Sequence[PyAutoGUIOp], screen: Screen, space: CoordSpace) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    i = 0
    while i < len(ops):
        op = ops[i]
        match op:
            case MouseOp(op="mouseDown", button="left"):
                more, i = _qwen_drag(ops, i, screen, space)
                calls.extend(more)
                continue
            case MouseOp(op="moveTo"):
                calls.append(_qwen_args("mouse_move", _qwen_point(op.x, op.y, screen, space)))
            case MouseOp(op="dragTo", button="left"):
                calls.append(_qwen_args("left_click_drag", _qwen_point(op.x, op.y, screen, space)))
            case MouseOp(op="click" | "doubleClick" | "tripleClick" | "rightClick" | "middleClick"):
                name = _QWEN_CLICKS.get((op.op, op.button, op.clicks))
                if name is None:
                    raise ActionRenderError(f"Qwen computer_use has no {op.op} with {op.button} x{op.clicks}")
                calls.append(_qwen_args(name, _qwen_point(op.x, op.y, screen, space)))
            case MouseOp():
                raise ActionRenderError(f"Qwen computer_use cannot express {op.op} with button {op.button}")
            case ScrollOp():
                # Qwen's scroll/hscroll take no coordinate: point first, then scroll
                point = _qwen_point(op.x, op.y, screen, space)
                if point is not None:
                    calls.append(_qwen_args("mouse_move", point))
                calls.append(_qwen_args(op.op, pixels=op.amount))
            case KeyOp(op="hotkey"):
                calls.append(_qwen_args("key", keys=list(op.keys)))
            case KeyOp(op="press"):
                # `key` holds its keys together; sequential presses become separate calls
                calls.extend(_qwen_args("key", keys=[k]) for _ in range(op.presses) for k in op.keys)
            case KeyOp():
                raise ActionRenderError(f"Qwen computer_use cannot express {op.op}")
            case TypeOp():
                calls.append(_qwen_args("type", text=op.text))
        i += 1
    return calls


def _qwen_block(name: str, arguments: dict[str, Any]) -> str:
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def render_qwen_tool_call(
    action: Action, *, screen: Screen, space: CoordSpace, wait_seconds: float = 1.0
) -> str:
    """Qwen2.5-VL / Qwen3-VL `computer_use` tool call blocks for `action`, one block per call.

    A GuiAction with several ops gives several blocks; a CliAction a `bash` call with `command`; a ToolCall
    its own name and arguments. Ops Qwen cannot express (keyDown/keyUp, non-left drags, a held button
    outside a mouseDown..mouseUp drag) raise ActionRenderError.
    """
    match action:
        case GuiAction():
            calls = [("computer_use", args) for args in _qwen_gui(action.ops, screen, space)]
        case Control(kind="wait"):
            calls = [("computer_use", _qwen_args("wait", time=wait_seconds))]
        case Control(kind="terminate"):
            calls = [("computer_use", _qwen_args("terminate", status=action.value or "success"))]
        case Control(kind="answer"):
            calls = [("computer_use", _qwen_args("answer", text=action.value or ""))]
        case CliAction():
            calls = [("bash", {"command": action.command})]
        case ToolCall():
            calls = [(action.name, dict(action.arguments))]
        case _:
            raise ActionRenderError(f"cannot render {type(action).__name__} as a Qwen tool call")
    return "\n".join(_qwen_block(name, args) for name, args in calls)
