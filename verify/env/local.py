"""`LocalDesktop`: the embedded desktop backend (DESIGN §6) — an Xvfb display with openbox and real apps
(xterm, LibreOffice, mousepad) run as the unprivileged agent user, a home restored from a template at every
reset, GUI ops through xdotool, shell commands through the bubblewrap `Sandbox`.

    from verify.env.local import LocalDesktop
    with LocalDesktop() as env:
        obs = env.reset()                       # plain desktop; reset(task) also runs the task's setup
        env.open_terminal()
        obs, result = env.step(GuiAction(ops=[TypeOp(text="ls > ~/x.txt\\n")]))
        obs, result = env.step(CliAction(command="cat ~/x.txt"))

Every process the desktop starts (Xvfb, openbox, apps) is forked from a long-lived thread with a parent-death
signal, is killed by `close()`, at interpreter exit and on SIGTERM, and dies with the harness if it is SIGKILLed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from synth.schema import Action, CliAction, Control, GuiAction, MouseOp, Screen, StepResult, ToolCall
from verify.env import procs
from verify.env.base import AGENT_HOME, EnvError, Observation, TaskContext
from verify.env.display import DisplayConfig, XDisplay
from verify.env.sandbox import Sandbox, SandboxConfig, ensure_agent_user
from verify.env.xinput import UnknownKey

if TYPE_CHECKING:
    from verify.tasks import TaskSpec

SetupRunner = Callable[["TaskSpec", TaskContext], None]
Evaluator = Callable[["TaskSpec", TaskContext], float]
ToolExecutor = Callable[[ToolCall], StepResult]

TEMPLATE_VERSION = "1"
TERMINALS = {"xterm"}
# scratch directories under base_dir; those of dead harness processes are removed by the next desktop
_SCRATCH_PREFIXES = ("switchyard-desktop-", "switchyard-template-", "switchyard-sandbox-")


class LocalDesktopConfig(BaseModel):
    """One embedded desktop. Defaults reproduce the measured setup in notes/desktop.md."""

    model_config = ConfigDict(extra="forbid")

    display: DisplayConfig = Field(
        default_factory=DisplayConfig, description="Screen size, display numbers, WM."
    )
    sandbox: SandboxConfig = Field(
        default_factory=SandboxConfig,
        description="Agent user, limits and hidden paths for shell commands and apps.",
    )
    base_dir: Path | None = Field(
        default=None,
        description="Where per-desktop directories (home, tmp, logs, cookie) are created; None = system temp dir. "
        "It is hidden from the sandbox, so desktops of a pool cannot see each other's homes.",
    )
    template_dir: Path | None = Field(
        default=None,
        description="Persistent home template (built there once if missing); None = build one per process "
        "(~0.2 s: a LibreOffice profile with first-run dialogs and save-format warnings disabled).",
    )
    settle_quiet: float = Field(
        default=0.12,
        gt=0,
        description="Screen counts as settled after this many seconds without any pixel change.",
    )
    settle_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Give up waiting for a settled screen after this long (animations, cursors).",
    )
    settle_poll: float = Field(
        default=0.01, gt=0, description="Seconds between frames while waiting to settle."
    )
    wait_quiet: float = Field(
        default=1.0,
        gt=0,
        description="Control(kind='wait') waits until the screen is quiet this long (loading apps).",
    )
    settle_after_cli: bool = Field(
        default=True,
        description="Wait for the screen to settle after a shell command (it may change the GUI, e.g. via xdotool); "
        "costs settle_quiet per CLI step.",
    )
    terminal_job_timeout: float = Field(
        default=30.0,
        ge=0,
        description="After a GUI step, wait up to this long for a command typed into a terminal to finish "
        "(its shell back at the prompt). Costs nothing when no command runs; 0 disables the wait.",
    )
    terminal_options: list[str] = Field(
        default_factory=lambda: ["-T", "Terminal", "-geometry", "100x30"],
        description="xterm options used by open_terminal() (the shell inside always runs in the sandbox).",
    )
    app_env: dict[str, str] = Field(
        default_factory=lambda: {"SAL_USE_VCLPLUGIN": "gen"},
        description="Extra environment for GUI apps (LibreOffice's plain X11 backend; it has no desktop to probe).",
    )
    pointer_home: tuple[int, int] | None = Field(
        default=(0, 0),
        description="Where reset() parks the mouse pointer (absolute pixels; the top-left corner is window "
        "decoration, not document). Left over the document (Xvfb starts it at the centre), LibreOffice Impress "
        "selects each character typed under it after a Ctrl/Shift press, so the next key replaces it. None = "
        "leave the pointer where the previous episode put it. Costs one xdotool call (~5 ms) per reset.",
    )


# ---------------------------------------------------------------- home template

_LO_SETTINGS = [
    # Ctrl+S on .xlsx/.docx would open "Keep current format?"
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false"),
    # no recovery dialog after an app is killed at reset, no autosave writing into the home mid-episode
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "false"),
]

_BASHRC = r"""# switchyard agent shell
[ -z "$PS1" ] && return
PS1='\[\e]0;\u@\h: \w\a\]\u@\h:\w\$ '
alias ls='ls --color=auto'
"""


def _lo_version() -> str | None:
    """Major.minor of the installed LibreOffice (the "what's new" infobar appears when it differs)."""
    soffice = shutil.which("soffice")
    if soffice is None:
        return None
    out = subprocess.run([soffice, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"LibreOffice (\d+\.\d+)", out)
    return match.group(1) if match else None


def build_home_template(dest: Path, sandbox_config: SandboxConfig) -> Path:
    """Build the agent home template under `dest/home` and return it.

    Desktop/Documents/Downloads, a .bashrc that sets the terminal title, and a LibreOffice profile created by
    LibreOffice itself (inside the sandbox, so its paths say /home/user) with first-run and save-format dialogs
    turned off; a pre-built profile makes Calc start in ~0.2 s instead of ~1.2 s.
    """
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o711)
    home = dest / "home"
    if home.exists():
        shutil.rmtree(home)
    sandbox = Sandbox(sandbox_config, home=home)
    for name in ("Desktop", "Documents", "Downloads"):
        sandbox.prepare_dir(home / name)
        (home / name).chmod(0o755)
    (home / ".bashrc").write_text(_BASHRC)
    version = _lo_version()
    if version is not None:
        result = sandbox.run("soffice --headless --norestore --terminate_after_init", timeout=120)
        xcu = home / ".config/libreoffice/4/user/registrymodifications.xcu"
        if result.status != "ok" or not xcu.exists():
            raise EnvError(f"building the LibreOffice profile failed: {result.status} {result.stderr}")
        settings = [*_LO_SETTINGS, ("/org.openoffice.Setup/Product", "ooSetupLastVersion", version)]
        items = "".join(
            f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>\n'
            for path, name, value in settings
        )
        text = xcu.read_text()
        xcu.write_text(text.replace("</oor:items>", items + "</oor:items>"))
    if os.geteuid() == 0:
        _chown_tree(home, sandbox.user.uid, sandbox.user.gid)
    (dest / "VERSION").write_text(TEMPLATE_VERSION)
    return home


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give every entry under `root` to uid:gid (only those owned by someone else are touched)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for path in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(path)
                if st.st_uid != uid or st.st_gid != gid:
                    os.lchown(path, uid, gid)


_templates: dict[tuple[str | None, str | None], Path] = {}
_templates_lock = threading.Lock()


def home_template(config: LocalDesktopConfig) -> Path:
    """The home template for this config: reused within the process, built on first use."""
    key = (config.sandbox.user, str(config.template_dir) if config.template_dir else None)
    with _templates_lock:
        cached = _templates.get(key)
        if cached is not None and cached.exists():
            return cached
        if config.template_dir is not None:
            dest = config.template_dir
            marker = dest / "VERSION"
            if marker.exists() and marker.read_text() == TEMPLATE_VERSION and (dest / "home").is_dir():
                home = dest / "home"
            else:
                home = build_home_template(dest, config.sandbox)
        else:
            dest = Path(tempfile.mkdtemp(prefix="switchyard-template-", dir=config.base_dir))
            procs.claim_dir(dest)
            home = build_home_template(dest, config.sandbox)
            _TEMP_TEMPLATES.append(dest)
        _templates[key] = home
        return home


_TEMP_TEMPLATES: list[Path] = []


def _remove_temp_templates() -> None:
    for path in _TEMP_TEMPLATES:
        shutil.rmtree(path, ignore_errors=True)


atexit.register(_remove_temp_templates)


def cli_observation_text(result: StepResult) -> str:
    """What the model sees after a shell command: stdout, stderr, and the exit status when not 0."""
    parts = [text.rstrip("\n") for text in (result.stdout, result.stderr) if text]
    if result.status == "timeout":
        parts.append("[command timed out]")
    elif result.status == "infra_error":
        parts.append("[the sandbox failed to run the command]")
    elif result.returncode not in (0, None):
        parts.append(f"[exit code {result.returncode}]")
    return "\n".join(parts)


# ---------------------------------------------------------------- the desktop


class LocalDesktop:
    """An embedded desktop implementing `Env` and `TaskContext`. Thread-safe (one action at a time)."""

    def __init__(
        self,
        config: LocalDesktopConfig | None = None,
        *,
        setup_runner: SetupRunner | None = None,
        evaluator: Evaluator | None = None,
        tool_executor: ToolExecutor | None = None,
    ):
        self.config = config or LocalDesktopConfig()
        self.screen = Screen(width=self.config.display.width, height=self.config.display.height)
        self._setup_runner = setup_runner
        self._evaluator = evaluator
        self._tool_executor = tool_executor
        self._lock = threading.RLock()
        self._apps: list[subprocess.Popen[bytes]] = []
        self._task: TaskSpec | None = None
        self._closed = False
        base = Path(self.config.base_dir or tempfile.gettempdir())
        base.mkdir(parents=True, exist_ok=True)
        for prefix in _SCRATCH_PREFIXES:
            procs.remove_stale_dirs(base, prefix)
        self.agent = (
            ensure_agent_user(self.config.sandbox.user, self.config.sandbox.create_user)
            if self.config.sandbox.user is not None
            else None
        )
        self.root = Path(tempfile.mkdtemp(prefix="switchyard-desktop-", dir=base))
        self.root.chmod(0o711)  # the agent must traverse it to reach its home; it cannot list it
        procs.claim_dir(self.root)
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"
        self.logs = self.root / "logs"
        self.logs.mkdir()
        self._term_home = self.root / "term"
        self._term_home.mkdir()
        self._term_home.chmod(0o755)
        procs.register(self)
        try:
            self.template = home_template(self.config)
            hidden = [] if str(base) in ("/", "/tmp") else [str(base)]
            self.sandbox = Sandbox(self.config.sandbox, home=self.home, tmp=self.tmp, extra_hidden=hidden)
            self.display = XDisplay(self.config.display, self.root / "x", self.sandbox.user)
            self._start_display()
            self._restore_home()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ lifecycle

    def _start_display(self) -> None:
        self.display.start()
        self.sandbox.display = self.display.binding

    @property
    def display_name(self) -> str:
        return self.display.name

    def __enter__(self) -> LocalDesktop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise EnvError("desktop is closed")

    def healthy(self) -> bool:
        """Xvfb and the WM are running and a screenshot can be taken."""
        with self._lock:
            return not self._closed and self.display.alive()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(Exception):
                self._kill_apps()
            display = getattr(self, "display", None)
            if display is not None:
                with contextlib.suppress(Exception):
                    display.stop()
            shutil.rmtree(self.root, ignore_errors=True)
            procs.unregister(self)

    # ------------------------------------------------------------ reset

    def _kill_apps(self) -> None:
        apps, self._apps = self._apps, []
        left = procs.kill_tree(apps, self.config.sandbox.kill_timeout)
        if left:
            raise EnvError(f"agent processes survived SIGKILL: {left}")

    def _restore_home(self) -> None:
        for path in (self.home, self.tmp):
            if path.exists():
                shutil.rmtree(path)
        proc = subprocess.run(
            ["cp", "-a", "--", str(self.template), str(self.home)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise EnvError(f"restoring the home template failed: {proc.stderr.strip()}")
        self.sandbox.prepare_dir(self.home)
        self.sandbox.prepare_dir(self.tmp)

    def reset(self, task: TaskSpec | None = None) -> Observation:
        """Kill the agent's apps, restore the home (and the display if it died), run the task's setup."""
        with self._lock:
            self._check_open()
            self._kill_apps()
            if not self.display.alive():
                self.display.stop()
                self._start_display()
            self._restore_home()
            if self.config.pointer_home is not None:
                x, y = self.config.pointer_home
                self.display.run_ops([MouseOp(op="moveTo", x=x, y=y)])
            self._task = task
            if task is not None:
                runner = self._setup_runner or _default_setup_runner()
                try:
                    runner(task, self)
                except EnvError:
                    raise
                except Exception as exc:
                    raise EnvError(f"task setup failed: {type(exc).__name__}: {exc}") from exc
                self._hand_over_home()
            return self._observe(None, self.config.settle_quiet)

    def _hand_over_home(self) -> None:
        """Files written through host_path() by setup steps or tools run as root: give them to the agent
        before any agent process looks (LibreOffice opens a root-owned file read-only)."""
        if os.geteuid() == 0:
            _chown_tree(self.home, self.sandbox.user.uid, self.sandbox.user.gid)

    # ------------------------------------------------------------ step

    def step(self, action: Action) -> tuple[Observation, StepResult]:
        with self._lock:
            self._check_open()
            quiet: float | None = self.config.settle_quiet
            text: str | None = None
            start = time.monotonic()
            if isinstance(action, GuiAction):
                result = self._gui(action)
            elif isinstance(action, CliAction):
                result = self.sandbox.run(action.command, action.timeout)
                text = cli_observation_text(result)
                if not self.config.settle_after_cli:
                    quiet = None
            elif isinstance(action, ToolCall):
                result = self._tool(action)
                text = result.stdout if result.status == "ok" else (result.stderr or result.stdout)
            elif isinstance(action, Control):
                if action.kind == "wait":
                    # waiting *is* the action: until the screen has been quiet for wait_quiet
                    self.display.settle(
                        self.config.wait_quiet, self.config.settle_timeout, self.config.settle_poll
                    )
                    quiet = None
                result = StepResult(status="ok")
            else:
                raise TypeError(f"not an action: {action!r}")
            if result.duration is None:
                result = result.model_copy(update={"duration": time.monotonic() - start})
            return self._observe(text, quiet), result

    def _gui(self, action: GuiAction) -> StepResult:
        start = time.monotonic()
        try:
            self.display.run_ops(list(action.ops))
        except UnknownKey as exc:
            return StepResult(status="error", stderr=str(exc), duration=time.monotonic() - start)
        except EnvError as exc:
            return StepResult(status="infra_error", stderr=str(exc), duration=time.monotonic() - start)
        self._wait_for_terminal_prompt()
        return StepResult(status="ok", duration=time.monotonic() - start)

    def _wait_for_terminal_prompt(self) -> None:
        """A command typed into a terminal may run silently for a while (a conversion, a build): the screen
        settles long before it finishes. Wait until no terminal's shell runs a foreground job, as a person
        waits for the prompt, up to `terminal_job_timeout`."""
        terminals = [app.pid for app in self._apps if app.args and Path(str(app.args[0])).name in TERMINALS]
        deadline = time.monotonic() + self.config.terminal_job_timeout
        while any(procs.foreground_job_running(pid) for pid in terminals) and time.monotonic() < deadline:
            time.sleep(0.02)  # polling period of the condition "shell back at its prompt"

    def _tool(self, call: ToolCall) -> StepResult:
        if self._tool_executor is None:
            return StepResult(status="not_executed", stderr=f"no tool executor registered for {call.name!r}")
        start = time.monotonic()
        try:
            return self._tool_executor(call)
        except Exception as exc:
            return StepResult(
                status="error", stderr=f"{type(exc).__name__}: {exc}", duration=time.monotonic() - start
            )
        finally:
            self._hand_over_home()

    def _observe(self, text: str | None, quiet: float | None) -> Observation:
        if quiet is None:
            raw = self.display.grab_raw()
        else:
            _, raw = self.display.settle(quiet, self.config.settle_timeout, self.config.settle_poll)
        return Observation(screenshot_png=self.display.png(raw), focus=self.display.focus(), text=text)

    def evaluate(self) -> float:
        """Score the state against the task of the last reset, with verify.tasks.evaluate (or `evaluator`)."""
        with self._lock:
            self._check_open()
            if self._task is None:
                raise EnvError("evaluate() needs a task: call reset(task) first")
            evaluator = self._evaluator or _default_evaluator()
            try:
                return float(evaluator(self._task, self))
            except EnvError:
                raise
            except Exception as exc:
                raise EnvError(f"evaluation failed: {type(exc).__name__}: {exc}") from exc

    # ------------------------------------------------------------ TaskContext

    def run_shell(self, command: str, timeout: float = 30.0) -> StepResult:
        with self._lock:
            self._check_open()
            self._hand_over_home()
            return self.sandbox.run(command, timeout)

    def host_path(self, agent_path: str) -> Path:
        """Host location of `/home/user/...`. Raises ValueError outside the home, also via symlinks."""
        if not agent_path.startswith("/"):
            raise ValueError(f"not an absolute path: {agent_path!r}")
        norm = os.path.normpath(agent_path)
        if norm != AGENT_HOME and not norm.startswith(AGENT_HOME + "/"):
            raise ValueError(f"{agent_path!r} is outside the agent home {AGENT_HOME}")
        host = self.home / norm[len(AGENT_HOME) :].lstrip("/")
        # the agent may plant symlinks; a getter running as root must not follow them out of the home
        real_home = os.path.realpath(self.home)
        real = os.path.realpath(host)
        if real != real_home and not real.startswith(real_home + os.sep):
            raise ValueError(f"{agent_path!r} resolves outside the agent home")
        return host

    def launch(self, argv: list[str]) -> None:
        """Start a GUI program as the agent user on this desktop; `xterm ...` gets its shell sandboxed."""
        if not argv:
            raise ValueError("empty argv")
        with self._lock:
            self._check_open()
            self._hand_over_home()
            if Path(argv[0]).name in TERMINALS:
                self._apps.append(self._spawn_terminal(argv[1:]))
            else:
                self._apps.append(
                    self.sandbox.spawn(argv, log=self.logs / "apps.log", extra_env=self.config.app_env)
                )

    def _spawn_terminal(self, args: list[str]) -> subprocess.Popen[bytes]:
        # xterm cannot run inside bwrap (it cannot chown its pty); only the shell inside it is sandboxed
        if "-e" in args:
            split = args.index("-e")
            options, program = args[:split], args[split + 1 :]
        else:
            options, program = args, ["/bin/bash"]
        inner = self.sandbox.wrap(program, new_session=False)
        # resources planted with xrdb could make this unsandboxed xterm execute commands
        self.display.clear_resources()
        argv = [shutil.which("xterm") or "xterm", *options, "-xrm", "XTerm*printerCommand:", "-e", *inner]
        env = self.display.client_env(HOME=str(self._term_home), LANG="C.UTF-8")
        log = open(self.logs / "apps.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            return procs.spawn(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                cwd=str(self._term_home), **self.sandbox.user_kwargs(),
            )  # fmt: skip
        finally:
            log.close()

    def open_terminal(self, timeout: float = 10.0) -> None:
        """Launch xterm (shell in the sandbox) and wait until its window is mapped."""
        before = {wid for wid, _, cls in self.display.windows() if cls == "xterm"}
        self.launch(["xterm", *self.config.terminal_options])
        deadline = time.monotonic() + timeout
        while not any(cls == "xterm" and wid not in before for wid, _, cls in self.display.windows()):
            if time.monotonic() > deadline:
                raise EnvError("the terminal window did not appear")
            time.sleep(0.01)  # polling period of the condition "new xterm window mapped"

    def wait_for_window(self, title_substring: str, timeout: float = 30.0) -> bool:
        self._check_open()
        return self.display.wait_for_window(title_substring, timeout)

    def screenshot(self) -> bytes:
        with self._lock:
            self._check_open()
            return self.display.png()

    # ------------------------------------------------------------ extras for replay and benchmarks

    def raw_screenshot(self) -> bytearray:
        """The current frame as raw BGRX bytes (no PNG encoding)."""
        return self.display.grab_raw()

    def settle(self, quiet: float | None = None) -> bool:
        """Wait until the screen is quiet; False if it kept changing until settle_timeout."""
        settled, _ = self.display.settle(
            quiet or self.config.settle_quiet, self.config.settle_timeout, self.config.settle_poll
        )
        return settled

    def focus(self):  # noqa: ANN201 - synth.schema.Focus
        return self.display.focus()


def _default_setup_runner() -> SetupRunner:
    try:
        from verify.tasks import run_setup
    except ImportError as exc:
        raise EnvError(f"reset(task) needs verify.tasks.run_setup or a setup_runner: {exc}") from exc
    return run_setup


def _default_evaluator() -> Evaluator:
    try:
        from verify.tasks import evaluate
    except ImportError as exc:
        raise EnvError(f"evaluate() needs verify.tasks.evaluate or an evaluator: {exc}") from exc
    return evaluate
