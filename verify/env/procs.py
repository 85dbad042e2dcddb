"""Process plumbing shared by the sandbox and the local desktop: a long-lived spawner thread, process-tree
kills, and a cleanup registry that runs at interpreter exit and on SIGTERM.

Why a spawner thread: `bwrap --die-with-parent` and `setpriv --pdeathsig` use PR_SET_PDEATHSIG, which fires
when the *thread* that forked the child exits. Long-lived children (Xvfb, openbox, GUI apps) are therefore
forked from one daemon thread that lives as long as the interpreter, so they outlive short-lived worker
threads (a Prefect thread pool) but still die with the harness, even when it is SIGKILLed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

_spawn_queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _spawner_main() -> None:
    while True:
        fn, fut = _spawn_queue.get()
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            fut.set_result(fn())
        except BaseException as exc:  # handed back to the caller, which re-raises
            fut.set_exception(exc)


def spawn(argv: list[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(argv, **popen_kwargs)`, forked from the long-lived spawner thread."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_spawner_main, name="switchyard-spawner", daemon=True)
            _spawner.start()
    fut: Future[subprocess.Popen[bytes]] = Future()
    _spawn_queue.put((lambda: subprocess.Popen(argv, **popen_kwargs), fut))
    return fut.result()


def _ppid_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: the fields after the last ')' are well-formed
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def descendants(pids: Iterable[int]) -> list[int]:
    """All live descendants of `pids` (not including them), found by walking /proc parent links."""
    tree = _ppid_map()
    out: list[int] = []
    stack = list(pids)
    while stack:
        for child in tree.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _stat(pid: int) -> tuple[str, list[bytes]] | None:
    """(comm, fields after comm) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode(errors="replace"), stat[
        stat.rfind(b")") + 2 :
    ].split()


def foreground_job_running(root_pid: int, shell: str = "bash") -> bool:
    """True while an interactive shell under `root_pid` (e.g. the bash inside a terminal) runs a foreground job.

    An interactive shell with job control hands its terminal to the job's process group: the terminal's
    foreground group (tpgid) differs from the shell's own group until the job ends or is backgrounded.
    Background jobs (`cmd &`) do not count, like a human who sees the prompt again.
    """
    for pid in descendants([root_pid]):
        info = _stat(pid)
        if info is None or info[0] != shell:
            continue
        fields = info[1]  # state ppid pgrp session tty_nr tpgid ...
        pgrp, tpgid = int(fields[2]), int(fields[5])
        if tpgid > 0 and tpgid != pgrp:
            return True
    return False


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


def kill_tree(procs: Iterable[subprocess.Popen[bytes]], timeout: float = 5.0) -> list[int]:
    """SIGKILL every descendant of `procs`, then `procs` themselves; wait until all are gone.

    Descendants die first so each of our children can reap its own child and exit by itself: killing an
    outer `bwrap` first would orphan its namespace init, leaving a zombie for PID 1 (which may reap late,
    and zombies count against the agent user's RLIMIT_NPROC). Killing a namespace init makes the kernel kill
    the rest of its PID namespace. Returns the pids still alive after `timeout` (empty on success).
    """
    procs = [p for p in procs if p.poll() is None]
    victims = descendants(p.pid for p in procs)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    for p in procs:
        if victims:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=min(0.5, max(0.0, deadline - time.monotonic())))
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                p.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
    left = [pid for pid in victims if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.005)  # polling the condition "gone from /proc"; nothing to block on for non-children
        left = [pid for pid in left if alive(pid)]
    return left + [p.pid for p in procs if p.poll() is None]


# ---------------------------------------------------------------- owned directories

OWNER_FILE = "owner.pid"


def claim_dir(path: Path) -> None:
    """Mark a scratch directory as owned by this process, so a later process can remove it if we die."""
    (path / OWNER_FILE).write_text(str(os.getpid()))


def remove_stale_dirs(base: Path, prefix: str) -> None:
    """Delete `base/prefix*` directories whose owner process died without cleaning up (SIGKILL)."""
    for entry in base.glob(f"{prefix}*"):
        try:
            pid = int((entry / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not alive(pid):
            shutil.rmtree(entry, ignore_errors=True)


# ---------------------------------------------------------------- cleanup registry

_closers: weakref.WeakSet[Any] = weakref.WeakSet()
_atexit_installed = False
_sigterm_installed = False


def _close_all() -> None:
    for obj in list(_closers):
        with contextlib.suppress(Exception):
            obj.close()


def _on_sigterm(signum: int, frame: Any) -> None:
    _close_all()
    # then die the way SIGTERM normally would, so the exit status stays truthful
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def register(obj: Any) -> None:
    """Call `obj.close()` at interpreter exit and on SIGTERM (unless the application handles SIGTERM itself)."""
    global _atexit_installed, _sigterm_installed
    _closers.add(obj)
    if not _atexit_installed:
        _atexit_installed = True
        atexit.register(_close_all)
    # signal handlers can only be installed from the main thread; never override one the application
    # installed (Prefect, pytest, ...)
    if (
        not _sigterm_installed
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        _sigterm_installed = True
        signal.signal(signal.SIGTERM, _on_sigterm)


def unregister(obj: Any) -> None:
    _closers.discard(obj)
