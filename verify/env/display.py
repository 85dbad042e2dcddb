"""One Xvfb display with openbox: start/stop, raw and PNG screenshots, "settled" waits, focus and window
queries, and GUI input through xdotool.

Access control: Xvfb runs with `-auth <cookie>`; the agent's clients get that cookie, and the harness's own
user is admitted by `xhost +SI:localuser:<user>`, so in-process clients (mss, python-xlib) connect without
touching $XAUTHORITY of the harness process.

Openbox runs as the agent user (outside the sandbox) with a config that has no menus and no `Execute`
actions: the default root menu would start a terminal outside the sandbox.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import select
import shutil
import struct
import subprocess
import threading
import time
from pathlib import Path

import mss
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field
from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror

from synth.schema import Focus, PyAutoGUIOp, Screen
from verify.env.base import EnvError
from verify.env.procs import kill_tree, spawn
from verify.env.sandbox import AgentUser, XBinding, current_user
from verify.env.xinput import xdotool_chains


class DisplayConfig(BaseModel):
    """The virtual screen and its window manager."""

    model_config = ConfigDict(extra="forbid")

    width: int = Field(
        default=1280, gt=0, description="Screen width in pixels (the space of GUI op coordinates)."
    )
    height: int = Field(default=720, gt=0, description="Screen height in pixels.")
    depth: int = Field(default=24, description="Colour depth; 24 keeps screenshots in 4-byte BGRX pixels.")
    first_display: int = Field(
        default=100, ge=1, description="Display numbers are searched upward from here (:100, :101, ...)."
    )
    start_timeout: float = Field(
        default=15.0, gt=0, description="Seconds to wait for Xvfb and openbox to come up."
    )
    window_manager: bool = Field(
        default=True,
        description="Run openbox (focus, decorations, Alt+Tab). Without it new windows get no focus.",
    )
    png_compress_level: int = Field(
        default=1,
        ge=0,
        le=9,
        description="zlib level for PNG screenshots: 1 is ~3x faster than 6, ~20% larger.",
    )
    type_delay_ms: int = Field(
        default=12,
        ge=1,
        description="Minimum delay between typed keys; 0 drops repeated letters in some apps.",
    )
    input_timeout: float = Field(default=60.0, gt=0, description="Seconds one xdotool invocation may take.")


_OPENBOX_RC = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy><center>yes</center></placement>
  <desktops><number>1</number></desktops>
  <menu><file>{menu}</file></menu>
  <keyboard>
    <keybind key="A-F4"><action name="Close"/></keybind>
    <keybind key="A-Tab"><action name="NextWindow"/></keybind>
    <keybind key="A-S-Tab"><action name="PreviousWindow"/></keybind>
  </keyboard>
  <mouse>
    <dragThreshold>3</dragThreshold><doubleClickTime>400</doubleClickTime>
    <context name="Frame">
      <mousebind button="A-Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="A-Left" action="Drag"><action name="Move"/></mousebind>
    </context>
    <context name="Titlebar">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Left" action="Drag"><action name="Move"/></mousebind>
      <mousebind button="Left" action="DoubleClick"><action name="ToggleMaximize"/></mousebind>
    </context>
    <context name="Client">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Middle" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Right" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
    <context name="Close"><mousebind button="Left" action="Click"><action name="Close"/></mousebind></context>
    <context name="Maximize">
      <mousebind button="Left" action="Click"><action name="ToggleMaximize"/></mousebind>
    </context>
    <context name="Iconify"><mousebind button="Left" action="Click"><action name="Iconify"/></mousebind></context>
  </mouse>
</openbox_config>
"""
_OPENBOX_MENU = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_menu xmlns="http://openbox.org/3.4/menu"><menu id="root-menu" label="-"/></openbox_menu>
"""


def write_xauthority(path: Path, cookie: bytes) -> None:
    """An Xauthority file with one MIT-MAGIC-COOKIE-1 entry valid for any host and display (FamilyWild)."""

    def field(data: bytes) -> bytes:
        return struct.pack(">H", len(data)) + data

    entry = struct.pack(">H", 0xFFFF) + field(b"") + field(b"") + field(b"MIT-MAGIC-COOKIE-1") + field(cookie)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(entry)


_numbers_lock = threading.Lock()
_numbers_in_use: set[int] = set()


def _number_free(n: int) -> bool:
    return n not in _numbers_in_use and not any(
        os.path.exists(p) for p in (f"/tmp/.X{n}-lock", f"/tmp/.X11-unix/X{n}")
    )


class XDisplay:
    """Xvfb + openbox on a free display number; `workdir` holds the cookie and the WM config."""

    def __init__(self, config: DisplayConfig, workdir: Path, agent: AgentUser):
        self.config = config
        self.screen = Screen(width=config.width, height=config.height)
        self.workdir = Path(workdir)
        self.agent = agent
        self.number: int | None = None
        self.xauthority = self.workdir / "Xauthority"
        self._xvfb: subprocess.Popen[bytes] | None = None
        self._wm: subprocess.Popen[bytes] | None = None
        self._mss: mss.base.MSSBase | None = None
        self._x: xdisplay.Display | None = None
        self._lock = threading.RLock()
        self._atoms: dict[str, int] = {}

    # ------------------------------------------------------------ lifecycle

    @property
    def name(self) -> str:
        if self.number is None:
            raise EnvError("display not started")
        return f":{self.number}"

    @property
    def binding(self) -> XBinding:
        if self.number is None:
            raise EnvError("display not started")
        return XBinding(self.number, self.xauthority)

    def client_env(self, **extra: str) -> dict[str, str]:
        """Environment for X clients started by the harness on this display."""
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "DISPLAY": self.name, "XAUTHORITY": str(self.xauthority),
                **extra}  # fmt: skip

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_xauthority(self.xauthority, secrets.token_bytes(16))
        if os.geteuid() == 0:
            os.chown(self.xauthority, self.agent.uid, self.agent.gid)
        deadline = time.monotonic() + self.config.start_timeout
        n = self.config.first_display
        while True:
            with _numbers_lock:
                while not _number_free(n):
                    n += 1
                _numbers_in_use.add(n)
            if self._start_xvfb(n, deadline):
                break
            with _numbers_lock:
                _numbers_in_use.discard(n)
            if time.monotonic() > deadline:
                raise EnvError("could not start Xvfb on any display number")
            n += 1  # lost a race with another process for this number
        try:
            me = current_user().name
            subprocess.run(["xhost", f"+SI:localuser:{me}"], env=self.client_env(), check=True,
                           capture_output=True, timeout=10)  # fmt: skip
            self._x = xdisplay.Display(self.name)
            self._mss = mss.MSS(display=self.name)
            if self.config.window_manager:
                self._start_wm(deadline)
        except Exception as exc:
            self.stop()
            raise EnvError(f"display :{n} came up but could not be set up: {exc}") from exc

    def _start_xvfb(self, n: int, deadline: float) -> bool:
        cfg = self.config
        read_fd, write_fd = os.pipe()
        argv = [
            "setpriv", "--pdeathsig", "KILL", "--",
            "Xvfb", f":{n}", "-displayfd", str(write_fd), "-screen", "0", f"{cfg.width}x{cfg.height}x{cfg.depth}",
            "-nolisten", "tcp", "-noreset", "-auth", str(self.xauthority),
        ]  # fmt: skip
        log = open(self.workdir / "xvfb.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = spawn(argv, pass_fds=[write_fd], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True)  # fmt: skip
        finally:
            os.close(write_fd)
            log.close()
        # Xvfb writes the display number to the pipe once it accepts connections; EOF means it gave up
        data = b""
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while not data.endswith(b"\n"):
                ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
                chunk = pipe.read(64) if ready else b""
                if not chunk:
                    break
                data += chunk
        if data.strip() == str(n).encode():
            self._xvfb, self.number = proc, n
            return True
        kill_tree([proc], 2.0)
        return False

    def _start_wm(self, deadline: float) -> None:
        wmdir = self.workdir / "wm"
        wmdir.mkdir(exist_ok=True)
        (wmdir / "menu.xml").write_text(_OPENBOX_MENU)
        (wmdir / "rc.xml").write_text(_OPENBOX_RC.format(menu=wmdir / "menu.xml"))
        log = open(self.workdir / "openbox.log", "ab")  # noqa: SIM115 - handed to the child
        kwargs = {}
        if os.geteuid() == 0:
            os.chown(wmdir, self.agent.uid, self.agent.gid)
            kwargs = {"user": self.agent.uid, "group": self.agent.gid, "extra_groups": []}
        try:
            self._wm = spawn(
                ["setpriv", "--pdeathsig", "KILL", "--", "openbox", "--config-file", str(wmdir / "rc.xml"),
                 "--sm-disable"],
                env=self.client_env(HOME=str(wmdir)), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, **kwargs,
            )  # fmt: skip
        finally:
            log.close()
        while self._root_property("_NET_SUPPORTING_WM_CHECK") is None:
            if self._wm.poll() is not None or time.monotonic() > deadline:
                raise EnvError(f"openbox did not start (see {self.workdir / 'openbox.log'})")
            time.sleep(0.005)  # polling the condition "WM announced itself"

    def alive(self) -> bool:
        """Xvfb (and openbox, if used) still running and a screenshot can be taken."""
        if self._xvfb is None or self._xvfb.poll() is not None:
            return False
        if self.config.window_manager and (self._wm is None or self._wm.poll() is not None):
            return False
        try:
            self.grab_raw()
        except Exception:
            return False
        return True

    def stop(self) -> None:
        with self._lock:
            for closer in (self._mss, self._x):
                if closer is not None:
                    with contextlib.suppress(Exception):
                        closer.close()
            self._mss = self._x = None
            procs = [p for p in (self._wm, self._xvfb) if p is not None]
            if self._xvfb is not None and self._xvfb.poll() is None:
                # SIGTERM lets Xvfb remove its lock file and socket
                self._xvfb.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._xvfb.wait(timeout=2.0)
            kill_tree(procs, 5.0)
            self._wm = self._xvfb = None
            if self.number is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"/tmp/.X{self.number}-lock")
                with _numbers_lock:
                    _numbers_in_use.discard(self.number)
            self.number = None

    # ------------------------------------------------------------ screenshots

    def grab_raw(self) -> bytearray:
        """The whole screen as raw BGRX bytes (~0.5 ms at 720p)."""
        with self._lock:
            if self._mss is None:
                raise EnvError("display not started")
            monitor = {"left": 0, "top": 0, "width": self.config.width, "height": self.config.height}
            try:
                return self._mss.grab(monitor).raw
            except Exception as exc:
                raise EnvError(f"screenshot of {self.name} failed: {exc}") from exc

    def png(self, raw: bytes | bytearray | None = None) -> bytes:
        """PNG of `raw` (or of a fresh grab)."""
        raw = self.grab_raw() if raw is None else raw
        size = (self.config.width, self.config.height)
        image = Image.frombuffer("RGB", size, bytes(raw), "raw", "BGRX", 0, 1)
        out = io.BytesIO()
        image.save(out, format="PNG", compress_level=self.config.png_compress_level)
        return out.getvalue()

    def settle(
        self, quiet: float = 0.12, timeout: float = 10.0, poll: float = 0.01
    ) -> tuple[bool, bytearray]:
        """Wait until the screen is unchanged for `quiet` seconds (exact buffer equality; perceptual hashes
        miss a typed command line). Returns (settled, last frame); settled is False if `timeout` hit first."""
        start = time.monotonic()
        last = self.grab_raw()
        changed_at = start
        while True:
            now = time.monotonic()
            if now - changed_at >= quiet:
                return True, last
            if now - start >= timeout:
                return False, last
            time.sleep(poll)  # the polling period of the condition "screen unchanged for `quiet`"
            frame = self.grab_raw()
            if frame != last:
                last, changed_at = frame, time.monotonic()

    # ------------------------------------------------------------ windows

    def _atom(self, name: str) -> int:
        if name not in self._atoms:
            assert self._x is not None
            self._atoms[name] = self._x.intern_atom(name)
        return self._atoms[name]

    def _root_property(self, name: str) -> list[int] | None:
        with self._lock:
            if self._x is None:
                raise EnvError("display not started")
            prop = self._x.screen().root.get_full_property(self._atom(name), X.AnyPropertyType)
            return None if prop is None else list(prop.value)

    def _describe(self, wid: int) -> tuple[str | None, str | None]:
        assert self._x is not None
        win = self._x.create_resource_object("window", wid)
        title = None
        with contextlib.suppress(xerror.XError):
            prop = win.get_full_property(self._atom("_NET_WM_NAME"), self._atom("UTF8_STRING"))
            if prop is not None and prop.value:
                title = (
                    prop.value.decode(errors="replace") if isinstance(prop.value, bytes) else str(prop.value)
                )
            if title is None:
                prop = win.get_full_property(Xatom.WM_NAME, X.AnyPropertyType)
                if prop is not None and prop.value:
                    value = prop.value
                    title = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        wm_class = None
        with contextlib.suppress(xerror.XError):
            cls = win.get_wm_class()
            if cls:
                wm_class = cls[1].lower()
        return title, wm_class

    def focus(self) -> Focus:
        """Title and (lower-cased) WM_CLASS class of the active window; empty Focus when none is active."""
        with self._lock:
            try:
                active = self._root_property("_NET_ACTIVE_WINDOW")
                if not active or not active[0]:
                    return Focus()
                title, wm_class = self._describe(active[0])
            except (xerror.XError, xerror.ConnectionClosedError) as exc:
                raise EnvError(f"focus query on {self.name} failed: {exc}") from exc
            return Focus(title=title, wm_class=wm_class)

    def windows(self) -> list[tuple[int, str | None, str | None]]:
        """(window id, title, wm class) of every managed top-level window."""
        with self._lock:
            try:
                ids = self._root_property("_NET_CLIENT_LIST") or []
                return [(wid, *self._describe(wid)) for wid in ids]
            except (xerror.XError, xerror.ConnectionClosedError) as exc:
                raise EnvError(f"window query on {self.name} failed: {exc}") from exc

    def window_rect(self, wid: int) -> tuple[int, int, int, int]:
        """(x, y, width, height) of a client window's area in screen pixels (without decorations)."""
        with self._lock:
            if self._x is None:
                raise EnvError("display not started")
            try:
                win = self._x.create_resource_object("window", wid)
                geom = win.get_geometry()
                pos = win.translate_coords(self._x.screen().root, 0, 0)
            except (xerror.XError, xerror.ConnectionClosedError) as exc:
                raise EnvError(f"window {wid:#x} is gone: {exc}") from exc
            return -pos.x, -pos.y, geom.width, geom.height

    def wait_for_window(self, title_substring: str, timeout: float = 30.0, poll: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if any(title and title_substring in title for _, title, _ in self.windows()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)  # polling period of the condition "a matching window is mapped"

    def clear_resources(self) -> None:
        """Delete X resources set on the root window (xrdb), so a terminal started outside the sandbox
        does not pick up resources the agent planted (e.g. translations that execute commands)."""
        with self._lock:
            if self._x is None:
                return
            root = self._x.screen().root
            for name in ("RESOURCE_MANAGER", "SCREEN_RESOURCES"):
                root.delete_property(self._atom(name))
            self._x.sync()

    # ------------------------------------------------------------ input

    def run_ops(self, ops: list[PyAutoGUIOp]) -> None:
        """Execute pyautogui ops with xdotool; raises UnknownKey (before any input) or EnvError."""
        chains = xdotool_chains(ops, self.screen, self.config.type_delay_ms)
        xdotool = shutil.which("xdotool") or "xdotool"
        for chain in chains:
            try:
                proc = subprocess.run([xdotool, *chain], env=self.client_env(), capture_output=True,
                                      timeout=self.config.input_timeout)  # fmt: skip
            except subprocess.TimeoutExpired as exc:
                raise EnvError(f"xdotool timed out: {chain[:6]}") from exc
            if proc.returncode != 0:
                raise EnvError(
                    f"xdotool failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[:300]}"
                )
