"""Run shell commands and programs as the unprivileged agent user inside bubblewrap.

Layout every sandboxed process sees (shell commands, GUI apps, the shell inside the terminal):
- `/` is the host root, read-only; `/root`, `/work` and the other `hidden_paths` are empty tmpfs;
- `/home/user` is the agent home (a host directory owned by the agent user), the only writable host data;
- `/tmp` is either the desktop's private tmp directory (shared by the shell and the apps of one desktop,
  so `soffice` on the command line talks to the running Calc as on a real desktop) or a fresh tmpfs;
- `/run`, `/var/tmp`, `/dev/shm` are private tmpfs; no network but `lo` (`--unshare-all`), own PID namespace;
- when a display is bound: its socket `/tmp/.X11-unix/XN` and the cookie at `/run/switchyard/Xauthority`.

Limits: wall-clock timeout (the whole sandbox is killed: killing the outer bwrap kills the namespace init
through `--die-with-parent`, and the kernel kills everything in the PID namespace), RLIMIT_NPROC and RLIMIT_AS
set by `prlimit` right before `bwrap` executes. RLIMIT_NPROC counts *all* tasks (threads included) of the agent
uid on the machine, so it also bounds the sum over the desktops of a pool; keep it well above what the apps use.

The agent user (default `switchyard-agent`) is created with `useradd --system` the first time it is needed,
which requires root. Running as a non-root user is possible with `user=None` (commands then run as the current
user, still inside bwrap).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from synth.schema import StepResult
from verify.env.base import AGENT_HOME, EnvError
from verify.env.procs import claim_dir, kill_tree, spawn

AGENT_USER = "switchyard-agent"
XAUTHORITY_IN_SANDBOX = "/run/switchyard/Xauthority"


class SandboxConfig(BaseModel):
    """Policy of the sandbox: who runs, with which limits, what is hidden. Paths are given at run time."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = Field(
        default=AGENT_USER,
        description="Unprivileged user the commands run as (created with useradd if missing, needs root). "
        "None runs as the current user (for non-root machines; weaker isolation of host files).",
    )
    create_user: bool = Field(
        default=True, description="Create `user` with `useradd --system` when it does not exist (root only)."
    )
    max_output_chars: int = Field(
        default=1000,
        ge=0,
        description="stdout and stderr are each cut to this many characters (head kept, a note appended). "
        "Output beyond ~4x this many bytes is read and discarded, so a command printing gigabytes costs no memory.",
    )
    max_processes: int = Field(
        default=512,
        ge=16,
        description="RLIMIT_NPROC for shell commands: tasks (processes and threads) of the agent uid, machine-wide. "
        "Stops fork bombs; too low makes commands fail to fork while GUI apps of other desktops run.",
    )
    max_memory_bytes: int | None = Field(
        default=4 * 2**30,
        ge=2**24,
        description="RLIMIT_AS (virtual memory) per process of a shell command; None = unlimited.",
    )
    app_max_processes: int = Field(
        default=4096,
        ge=16,
        description="RLIMIT_NPROC for GUI apps launched on the desktop (LibreOffice is threaded).",
    )
    app_max_memory_bytes: int | None = Field(
        default=None, description="RLIMIT_AS for GUI apps; None = unlimited (LibreOffice reserves gigabytes)."
    )
    default_timeout: float = Field(default=30.0, gt=0, description="Timeout in seconds when run() gets none.")
    kill_timeout: float = Field(
        default=5.0, gt=0, description="Seconds to wait for a killed sandbox to disappear before giving up."
    )
    hidden_paths: list[str] = Field(
        default_factory=lambda: ["/root", "/work", "/srv", "/mnt", "/media"],
        description="Host directories replaced by an empty tmpfs inside the sandbox (those that exist).",
    )
    env: dict[str, str] = Field(
        default_factory=lambda: {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "SHELL": "/bin/bash",
            "TERM": "xterm",
            "TMPDIR": "/tmp",
            # GTK apps otherwise wait for an accessibility bus that does not exist
            "NO_AT_BRIDGE": "1",
        },
        description="The complete environment inside the sandbox (HOME, USER, DISPLAY, XAUTHORITY are added).",
    )


@dataclass(frozen=True)
class AgentUser:
    name: str
    uid: int
    gid: int


@dataclass(frozen=True)
class XBinding:
    """A display the sandbox may talk to: its number and the host path of its cookie file."""

    number: int
    xauthority: Path

    @property
    def socket(self) -> str:
        return f"/tmp/.X11-unix/X{self.number}"


_useradd_lock = threading.Lock()


def ensure_agent_user(name: str = AGENT_USER, create: bool = True) -> AgentUser:
    """Look up the agent user, creating it (system user, own group, no home, no login shell) if missing."""
    with _useradd_lock:
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            if not create:
                raise EnvError(f"agent user {name!r} does not exist") from None
            if os.geteuid() != 0:
                raise EnvError(f"agent user {name!r} does not exist and creating it needs root") from None
            proc = subprocess.run(
                ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                 "--shell", "/usr/sbin/nologin", name],
                capture_output=True, text=True,
            )  # fmt: skip
            # exit 9 = created meanwhile by another process: fine
            if proc.returncode not in (0, 9):
                raise EnvError(f"useradd {name} failed: {proc.stderr.strip()}") from None
            pw = pwd.getpwnam(name)
    return AgentUser(name, pw.pw_uid, pw.pw_gid)


def current_user() -> AgentUser:
    pw = pwd.getpwuid(os.geteuid())
    return AgentUser(pw.pw_name, pw.pw_uid, pw.pw_gid)


def truncate(text: str, limit: int, total_bytes: int | None = None) -> str:
    """Keep the first `limit` characters and say that (and how much) was cut."""
    complete = total_bytes is None or total_bytes <= len(text.encode())
    if len(text) <= limit and complete:
        return text
    size = f"{len(text)} characters" if complete else f"{total_bytes} bytes"
    return f"{text[:limit]}\n[output truncated: {size} in total, first {limit} characters shown]"


def _which(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise EnvError(f"{name} not found on PATH (run scripts/install-desktop.sh)")
    return path


class Sandbox:
    """Runs commands as the agent user in bubblewrap with `home` bound at /home/user.

    `home=None` creates a private home that `close()` removes. `tmp=None` gives every command a fresh /tmp.
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        home: Path | None = None,
        tmp: Path | None = None,
        display: XBinding | None = None,
        extra_hidden: list[str] | None = None,
    ):
        self.config = config or SandboxConfig()
        if self.config.user is None:
            self.user = current_user()
        else:
            self.user = ensure_agent_user(self.config.user, self.config.create_user)
            if os.geteuid() not in (0, self.user.uid):
                raise EnvError(
                    f"switching to {self.user.name!r} needs root; set user=None to run as yourself"
                )
        self._bwrap = _which("bwrap")
        self._prlimit = _which("prlimit")
        self._own_dir: Path | None = None
        if home is None:
            self._own_dir = Path(tempfile.mkdtemp(prefix="switchyard-sandbox-"))
            self._own_dir.chmod(0o711)
            claim_dir(self._own_dir)
            home = self._own_dir / "home"
        self.home = Path(home)
        self.tmp = Path(tmp) if tmp is not None else None
        self.display = display
        self.extra_hidden = list(extra_hidden or [])
        self.prepare_dir(self.home)
        if self.tmp is not None:
            self.prepare_dir(self.tmp)

    # ------------------------------------------------------------ layout

    def prepare_dir(self, path: Path) -> None:
        """Create `path` (if missing) owned by the agent user, mode 0700."""
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            os.chown(path, self.user.uid, self.user.gid)
        path.chmod(0o700)

    def environment(self) -> dict[str, str]:
        env = dict(self.config.env)
        env.update(HOME=AGENT_HOME, USER=self.user.name, LOGNAME=self.user.name)
        if self.display is not None:
            env.update(DISPLAY=f":{self.display.number}", XAUTHORITY=XAUTHORITY_IN_SANDBOX)
        return env

    def bwrap_argv(self, *, new_session: bool = True, extra_env: dict[str, str] | None = None) -> list[str]:
        """The `bwrap ... ` prefix (without the program) for this sandbox's layout."""
        argv = [self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for path in [*self.config.hidden_paths, *self.extra_hidden]:
            if os.path.isdir(path) and os.path.realpath(path) != "/":
                argv += ["--tmpfs", path]
        # --tmpfs /home must come before the bind below it
        argv += ["--tmpfs", "/home", "--bind", str(self.home), AGENT_HOME]
        argv += ["--bind", str(self.tmp), "/tmp"] if self.tmp is not None else ["--tmpfs", "/tmp"]
        argv += ["--tmpfs", "/run", "--tmpfs", "/var/tmp"]
        if self.display is not None:
            sock = self.display.socket
            argv += [
                "--ro-bind",
                sock,
                sock,
                "--ro-bind",
                str(self.display.xauthority),
                XAUTHORITY_IN_SANDBOX,
            ]
        argv += ["--unshare-all", "--die-with-parent", "--clearenv", "--chdir", AGENT_HOME]
        # a new session stops TIOCSTI injection into a terminal; the interactive shell in xterm needs its tty
        if new_session:
            argv.append("--new-session")
        for key, value in {**self.environment(), **(extra_env or {})}.items():
            argv += ["--setenv", key, value]
        return argv

    def wrap(
        self,
        program: list[str],
        *,
        app: bool = False,
        new_session: bool = True,
        extra_env: dict[str, str] | None = None,
    ) -> list[str]:
        """Full argv `prlimit <limits> -- bwrap <layout> <program>`, with the shell limits or (`app`) the app limits."""
        cfg = self.config
        nproc = cfg.app_max_processes if app else cfg.max_processes
        mem = cfg.app_max_memory_bytes if app else cfg.max_memory_bytes
        limits = [f"--nproc={nproc}:{nproc}"]
        if mem is not None:
            limits.append(f"--as={mem}:{mem}")
        bwrap = self.bwrap_argv(new_session=new_session, extra_env=extra_env)
        return [self._prlimit, *limits, "--", *bwrap, *program]

    def user_kwargs(self) -> dict[str, Any]:
        """Popen arguments that switch to the agent user (directly: runuser delays SIGKILL forwarding by 2 s)."""
        if os.geteuid() == self.user.uid:
            return {}
        return {"user": self.user.uid, "group": self.user.gid, "extra_groups": []}

    def popen_kwargs(self) -> dict[str, Any]:
        """Popen arguments for the outer `prlimit`/`bwrap`: the agent user and a minimal host environment."""
        return {"env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}, **self.user_kwargs()}

    # ------------------------------------------------------------ running

    def run(self, command: str, timeout: float | None = None) -> StepResult:
        """Run `bash -c command`; never raises for anything the command does.

        status: ok (rc 0), error (rc != 0), timeout (killed at the deadline), infra_error (the sandbox itself
        could not start).
        """
        timeout = self.config.default_timeout if timeout is None else timeout
        argv = self.wrap(["/bin/bash", "-c", command])
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                **self.popen_kwargs(),
            )
        except OSError as exc:
            return StepResult(
                status="infra_error", stderr=f"could not start the sandbox: {exc}", duration=0.0
            )
        out, err, timed_out = self._collect(proc, start + timeout)
        duration = time.monotonic() - start
        limit = self.config.max_output_chars
        stdout = truncate(out[0].decode(errors="replace"), limit, out[1])
        stderr = truncate(err[0].decode(errors="replace"), limit, err[1])
        rc = proc.returncode
        if timed_out:
            return StepResult(
                status="timeout", returncode=None, stdout=stdout, stderr=stderr, duration=duration
            )
        infra = rc != 0 and (stderr.startswith("bwrap: ") or stderr.startswith("prlimit: "))
        status = "infra_error" if infra else ("ok" if rc == 0 else "error")
        return StepResult(status=status, returncode=rc, stdout=stdout, stderr=stderr, duration=duration)

    def _collect(
        self, proc: subprocess.Popen[bytes], deadline: float
    ) -> tuple[tuple[bytes, int], tuple[bytes, int], bool]:
        """Read both pipes until EOF and the process exits, or kill everything at `deadline`."""
        cap = 4 * self.config.max_output_chars + 4
        assert proc.stdout is not None and proc.stderr is not None
        bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
        totals = dict.fromkeys(bufs, 0)
        timed_out = False
        with selectors.DefaultSelector() as sel:
            for fd in bufs:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if timed_out:
                        break  # killed, yet something still holds the pipes open: stop reading
                    timed_out = True
                    kill_tree([proc], self.config.kill_timeout)
                    deadline = time.monotonic() + 1.0
                    continue
                for key, _ in sel.select(remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fd)
                        continue
                    totals[key.fd] += len(chunk)
                    room = cap - len(bufs[key.fd])
                    if room > 0:
                        bufs[key.fd] += chunk[:room]
        proc.stdout.close()
        proc.stderr.close()
        if not timed_out:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True  # closed its output but kept running past the deadline
        if timed_out:
            kill_tree([proc], self.config.kill_timeout)
        fds = list(bufs)
        return (bytes(bufs[fds[0]]), totals[fds[0]]), (bytes(bufs[fds[1]]), totals[fds[1]]), timed_out

    def spawn(
        self, program: list[str], *, log: Path | None = None, extra_env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start a long-lived program (a GUI app) in the sandbox with the app limits; returns its Popen.

        Forked from the spawner thread so `--die-with-parent` does not fire when the calling thread ends.
        """
        argv = self.wrap(program, app=True, extra_env=extra_env)
        out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
        try:
            return spawn(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, **self.popen_kwargs(),
            )  # fmt: skip
        finally:
            if log is not None:
                out.close()  # type: ignore[union-attr]

    def close(self) -> None:
        """Remove the private home created when none was given."""
        if self._own_dir is not None:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(self._own_dir)
            self._own_dir = None
