"""`OSWorldEnv`: the `Env` protocol over OSWorld's `desktop_env.desktop_env.DesktopEnv` (a VM per environment).

For users who already run OSWorld VMs (VMware, VirtualBox, Docker+KVM, AWS, ...). OSWorld is imported lazily in the
constructor, so switchyard never depends on it; install it with `pip install desktop-env` and set up a VM provider
as OSWorld's README describes.

How our actions map onto OSWorld (its `action_space="pyautogui"`):
- `GuiAction`  -> pyautogui source (`synth.actions.render_code`, absolute pixels) passed to `DesktopEnv.step`, which
                  runs it with `python -c` inside the VM. Typed '<' is sent as shift+comma, because pyautogui types
                  '<' as '>' (pyautogui #198); OSWorld patches only `typewrite(...)` calls, not `write(...)`.
- `Control`    -> the special actions 'WAIT' / 'DONE' (terminate success) / 'FAIL' (terminate failure) through
                  `DesktopEnv.step`, so OSWorld's own evaluation sees them (infeasible tasks are solved by FAIL).
                  `answer` has no OSWorld counterpart: it executes nothing.
- `CliAction`  -> `DesktopEnv.controller.run_bash_script(command, timeout)`; its merged stdout+stderr becomes
                  `StepResult.stdout` and the observation text.
- `ToolCall`   -> not supported: status 'not_executed' (OSWorld has no tool executor).
Observations: OSWorld's obs dict (`screenshot` PNG bytes, `accessibility_tree`, `terminal`, `instruction`) becomes an
`Observation`; the focused window is read with `xprop` inside the VM when `query_focus` is on.
Tasks: a `TaskSpec` is OSWorld's own task JSON, so `task_config` returns it without switchyard's extension.
Screens: GUI coordinates are absolute pixels, so a record replays only on a VM of the same screen size.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from synth.actions import render_code
from synth.coords import CoordSpace
from synth.schema import (
    Action,
    CliAction,
    Control,
    Focus,
    GuiAction,
    KeyOp,
    PyAutoGUIOp,
    Screen,
    StepResult,
    ToolCall,
    TypeOp,
)
from verify.env.base import EnvError, Observation

if TYPE_CHECKING:
    from verify.tasks import TaskSpec

INSTALL_HINT = (
    "OSWorldEnv needs OSWorld's `desktop_env` package and a VM provider: `pip install desktop-env` "
    "(https://github.com/xlang-ai/OSWorld), then VMware/VirtualBox, Docker with KVM, or a cloud provider as "
    "OSWorld's README describes. The embedded desktop needs none of this: use verify.env.local.LocalDesktop."
)

# Reads the focused window inside the VM: the root window's _NET_ACTIVE_WINDOW, then that window's name and class.
# With no focused window xprop prints "_NET_ACTIVE_WINDOW:  not found." (or id 0x0): the script then fails.
FOCUS_SCRIPT = (
    "id=$(xprop -root _NET_ACTIVE_WINDOW 2>/dev/null | sed -n 's/.*# \\(0x[0-9a-fA-F]*\\).*/\\1/p'); "
    '[ -n "$id" ] && [ "$id" != "0x0" ] && xprop -id "$id" _NET_WM_NAME WM_NAME WM_CLASS 2>/dev/null'
)


class OSWorldConfig(BaseModel):
    """Arguments of OSWorld's `DesktopEnv` plus how this adapter paces and observes it."""

    model_config = ConfigDict(extra="forbid")

    provider_name: str = Field(
        default="docker",
        description="OSWorld VM provider: 'docker' (KVM, headless servers), 'vmware', 'virtualbox', 'aws', ...",
    )
    path_to_vm: str | None = Field(
        default=None,
        description="VM image/.vmx path; None lets OSWorld download or locate its default image.",
    )
    region: str | None = Field(
        default=None, description="Cloud region for cloud providers (e.g. 'us-east-1')."
    )
    snapshot_name: str = Field(default="init_state", description="VM snapshot OSWorld reverts to at reset.")
    screen: Screen = Field(
        default=Screen(width=1920, height=1080),
        description="VM screen size (OSWorld's default is 1920x1080). GUI records must match it to replay.",
    )
    headless: bool = Field(default=True, description="Run the VM without a viewer window.")
    os_type: str = Field(default="Ubuntu", description="OSWorld os_type of the VM image.")
    require_a11y_tree: bool = Field(
        default=False, description="Fetch the accessibility tree with every observation (slow; unused by us)."
    )
    cache_dir: str = Field(default="cache", description="OSWorld's cache directory for task files.")
    pause: float = Field(
        default=0.5,
        ge=0.0,
        description=(
            "Seconds OSWorld sleeps after each GUI/control step before its screenshot (its own default is 2 s). "
            "The VM offers no 'screen settled' signal, so this is a fixed cost per step."
        ),
    )
    query_focus: bool = Field(
        default=True,
        description="Read the focused window's title and WM_CLASS with xprop after each step (one extra request).",
    )


# ---------------------------------------------------------------- pure translation


def split_less_than(action: GuiAction) -> GuiAction:
    """The same action with every '<' in typed text sent as shift+comma (pyautogui types '<' as '>')."""
    ops: list[PyAutoGUIOp] = []
    for op in action.ops:
        if not isinstance(op, TypeOp) or "<" not in op.text:
            ops.append(op)
            continue
        for k, part in enumerate(op.text.split("<")):
            if k > 0:
                ops.append(KeyOp(op="hotkey", keys=["shift", ","]))
            if part:
                ops.append(op.model_copy(update={"text": part}))
    return GuiAction(ops=ops)


def gui_code(action: GuiAction, screen: Screen) -> str:
    """pyautogui source (absolute pixels of `screen`) for OSWorld's pyautogui action space."""
    return render_code(split_less_than(action), screen=screen, space=CoordSpace.absolute())


def control_command(action: Control) -> str | None:
    """OSWorld's special action for a control step; None when OSWorld has no counterpart (answer)."""
    match action.kind:
        case "wait":
            return "WAIT"
        case "terminate":
            return "FAIL" if action.value == "failure" else "DONE"
        case "answer":
            return None


def cli_timeout(action: CliAction) -> int:
    """OSWorld's run_bash_script takes whole seconds; round up so a command never gets less than it asked for."""
    return max(1, math.ceil(action.timeout))


def cli_result(response: Mapping[str, Any] | None, duration: float) -> StepResult:
    """A `StepResult` from `run_bash_script`'s JSON ({status, output, error, returncode}; stderr merged in output)."""
    if response is None:
        return StepResult(status="infra_error", stderr="run_bash_script returned nothing", duration=duration)
    output = str(response.get("output") or "")
    error = str(response.get("error") or "")
    rc = response.get("returncode", response.get("return_code"))
    rc = int(rc) if isinstance(rc, int | float) else None
    text = f"{output}\n{error}".lower()
    if rc == 0:
        return StepResult(status="ok", returncode=0, stdout=output, stderr=error, duration=duration)
    if rc == -1 and "timed out" in text:
        return StepResult(status="timeout", returncode=None, stdout=output, stderr=error, duration=duration)
    if rc == -1 and ("failed to execute bash script after" in text or "failed to execute script" in text):
        # the VM's HTTP server never ran the script: infrastructure, not the command's failure
        return StepResult(
            status="infra_error", returncode=None, stdout=output, stderr=error, duration=duration
        )
    return StepResult(status="error", returncode=rc, stdout=output, stderr=error, duration=duration)


_XPROP_LINE = re.compile(r"^(?P<name>_NET_WM_NAME|WM_NAME|WM_CLASS)\([^)]*\)\s*=\s*(?P<value>.*)$")


def _unquote(value: str) -> str | None:
    # xprop prints string properties between double quotes without escaping inner quotes: take first..last
    value = value.strip()
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return value[1:-1]
    return None


def parse_xprop_focus(text: str) -> Focus | None:
    """Focus from `xprop -id W _NET_WM_NAME WM_NAME WM_CLASS` output; None when nothing was readable.

    Missing properties print as `NAME:  not found.` and are skipped. WM_CLASS is `"instance", "class"`; we keep
    the instance (e.g. 'xterm', 'libreoffice-calc').
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _XPROP_LINE.match(line.strip())
        if match:
            unquoted = _unquote(match["value"])
            if unquoted is not None:
                values[match["name"]] = unquoted
    title = values.get("_NET_WM_NAME", values.get("WM_NAME"))
    wm_class = values["WM_CLASS"].split('", "')[0] if "WM_CLASS" in values else None
    if title is None and wm_class is None:
        return None
    return Focus(title=title, wm_class=wm_class)


def observation_from_osworld(
    obs: Mapping[str, Any] | None, *, focus: Focus | None = None, text: str | None = None
) -> Observation:
    """An `Observation` from OSWorld's obs dict; a missing screenshot is an environment failure."""
    png = None if obs is None else obs.get("screenshot")
    if not isinstance(png, bytes | bytearray) or not png:
        raise EnvError("OSWorld returned no screenshot (VM server unreachable?)")
    if text is None and obs is not None and obs.get("terminal"):
        text = str(obs["terminal"])
    return Observation(screenshot_png=bytes(png), focus=focus, text=text)


def task_config(task: TaskSpec) -> dict[str, Any]:
    """The OSWorld task JSON `DesktopEnv.reset(task_config=...)` expects: the spec without switchyard's extension.

    Unset optional fields are dropped rather than sent as null: OSWorld tests `len(evaluator["result"])` and
    `"expected" in evaluator`, so a null there would crash or mislead it. Bundled `upload_file` paths are already
    absolute host paths (resolved by `load_task`), which is what OSWorld's host-side upload reads.
    """
    config = task.model_dump(mode="json", exclude_none=True, exclude={"switchyard"})
    config.setdefault("config", [])
    return config


# ---------------------------------------------------------------- the environment


class OSWorldEnv:
    """`Env` over an OSWorld `DesktopEnv`. Pass `desktop_env` to wrap an already constructed one."""

    tool_executor = None  # OSWorld executes no tool calls

    def __init__(self, cfg: OSWorldConfig | None = None, *, desktop_env: Any | None = None):
        self.cfg = cfg or OSWorldConfig()
        self.screen = self.cfg.screen
        self._env = desktop_env if desktop_env is not None else _make_desktop_env(self.cfg)

    # -- Env protocol

    def reset(self, task: TaskSpec | None = None) -> Observation:
        try:
            obs = self._env.reset(task_config=None if task is None else task_config(task))
        except Exception as exc:
            raise EnvError(f"OSWorld reset failed: {type(exc).__name__}: {exc}") from exc
        return observation_from_osworld(obs, focus=self._focus())

    def step(self, action: Action) -> tuple[Observation, StepResult]:
        t0 = time.monotonic()
        match action:
            case GuiAction():
                obs = self._step(gui_code(action, self.screen))
                return observation_from_osworld(obs, focus=self._focus()), StepResult(
                    status="ok", duration=time.monotonic() - t0
                )
            case Control():
                command = control_command(action)
                obs = self._step(command) if command is not None else self._obs()
                return observation_from_osworld(obs, focus=self._focus()), StepResult(
                    status="ok", duration=time.monotonic() - t0
                )
            case CliAction():
                response = self._bash(action.command, cli_timeout(action))
                # DesktopEnv only marks itself dirty in step(); without this a docker/cloud VM would skip the
                # snapshot revert at the next reset and start from the state our command left behind
                if hasattr(self._env, "is_environment_used"):
                    self._env.is_environment_used = True
                result = cli_result(response, time.monotonic() - t0)
                text = "\n".join(part for part in (result.stdout, result.stderr) if part) or None
                return observation_from_osworld(self._obs(), focus=self._focus(), text=text), result
            case ToolCall():
                result = StepResult(
                    status="not_executed",
                    stderr=f"OSWorldEnv has no tool executor (tool {action.name!r})",
                    duration=time.monotonic() - t0,
                )
                return observation_from_osworld(self._obs(), focus=self._focus()), result
        raise TypeError(f"not an action: {action!r}")

    def evaluate(self) -> float:
        try:
            return float(self._env.evaluate())
        except Exception as exc:
            raise EnvError(f"OSWorld evaluation failed: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        self._env.close()

    # -- internals

    def _step(self, command: str) -> Mapping[str, Any]:
        try:
            obs, _reward, _done, _info = self._env.step(command, pause=self.cfg.pause)
        except Exception as exc:
            raise EnvError(f"OSWorld step failed: {type(exc).__name__}: {exc}") from exc
        return obs

    def _obs(self) -> Mapping[str, Any]:
        try:
            return {"screenshot": self._env.controller.get_screenshot()}
        except Exception as exc:
            raise EnvError(f"OSWorld screenshot failed: {type(exc).__name__}: {exc}") from exc

    def _bash(self, script: str, timeout: int) -> Mapping[str, Any] | None:
        try:
            return self._env.controller.run_bash_script(script, timeout=timeout)
        except Exception as exc:
            raise EnvError(f"OSWorld run_bash_script failed: {type(exc).__name__}: {exc}") from exc

    def _focus(self) -> Focus | None:
        if not self.cfg.query_focus:
            return None
        try:
            response = self._env.controller.run_bash_script(FOCUS_SCRIPT, timeout=5)
        except Exception:  # focus is evidence, not a requirement: a VM without xprop still replays
            return None
        if not response or response.get("returncode") != 0:
            return None
        return parse_xprop_focus(str(response.get("output") or ""))


def _make_desktop_env(cfg: OSWorldConfig) -> Any:
    try:
        from desktop_env.desktop_env import DesktopEnv
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return DesktopEnv(
        provider_name=cfg.provider_name,
        region=cfg.region,
        path_to_vm=cfg.path_to_vm,
        snapshot_name=cfg.snapshot_name,
        action_space="pyautogui",
        cache_dir=cfg.cache_dir,
        screen_size=(cfg.screen.width, cfg.screen.height),
        headless=cfg.headless,
        require_a11y_tree=cfg.require_a11y_tree,
        os_type=cfg.os_type,
    )
