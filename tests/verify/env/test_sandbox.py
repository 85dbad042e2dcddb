"""Hostile commands against the sandbox: each must be reported in a StepResult, and the host must not notice."""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from pathlib import Path

import pytest

from verify.env.sandbox import Sandbox, SandboxConfig, truncate

# needs root, bubblewrap and prlimit (installed with the desktop packages)
pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def sandbox():
    sb = Sandbox(SandboxConfig(max_processes=300))
    yield sb
    sb.close()


@pytest.fixture
def canary():
    """A world-writable file in a world-writable host directory the sandbox can see: only the read-only
    root stops the agent from deleting it. Plus a root-only secret next to it."""
    base = Path("/var/lib") / f"switchyard-canary-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    base.chmod(0o777)
    (base / "canary").write_text("alive")
    (base / "canary").chmod(0o666)
    (base / "secret").write_text("root only")
    (base / "secret").chmod(0o600)
    yield base
    shutil.rmtree(base)


def test_runs_as_agent_in_the_agent_home(sandbox):
    result = sandbox.run("id -un; pwd; echo $HOME; echo err >&2")
    assert result.status == "ok" and result.returncode == 0
    assert result.stdout.split() == [sandbox.user.name, "/home/user", "/home/user"]
    assert result.stderr == "err\n"
    assert sandbox.user.uid != 0


def test_rm_rf_root_leaves_the_host_intact(sandbox, canary):
    (sandbox.home / "mine.txt").write_text("x")
    result = sandbox.run("rm -rf / --no-preserve-root; ls /usr/bin/ls", timeout=60)
    assert result.status in ("ok", "error")
    assert "Read-only file system" in result.stderr or "read-only" in result.stderr.lower()
    assert (canary / "canary").read_text() == "alive"
    assert Path("/usr/bin/ls").exists() and Path("/etc/passwd").exists()
    assert not (sandbox.home / "mine.txt").exists()  # the agent may wipe its own home


def test_write_to_etc_fails(sandbox):
    name = f"switchyard-{uuid.uuid4().hex[:8]}"
    result = sandbox.run(f"echo pwned > /etc/{name}")
    assert result.status == "error" and result.returncode != 0
    assert "Read-only file system" in result.stderr
    assert not Path(f"/etc/{name}").exists()


def test_unreadable_host_files_stay_unreadable(sandbox, canary):
    result = sandbox.run(f"cat {canary}/secret; cat /etc/shadow")
    assert result.status == "error"
    assert "root only" not in result.stdout
    assert result.stderr.count("Permission denied") == 2
    hidden = sandbox.run("ls -A /root /work | grep -v ':$' | grep -c . || true")
    assert hidden.stdout.strip() == "0"


def test_no_network_but_loopback(sandbox):
    interfaces = sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert interfaces.stdout.split() == ["lo"]
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = (
            "import socket,sys\n"
            f"for addr in (('127.0.0.1', {port}), ('1.1.1.1', 53)):\n"
            "    s = socket.socket(); s.settimeout(3)\n"
            "    try: s.connect(addr); print('connected', addr)\n"
            "    except OSError as e: print('failed', addr[0], e.errno)\n"
        )
        result = sandbox.run(f'python3 -c "{code}"')
    assert "connected" not in result.stdout
    assert result.stdout.count("failed") == 2


def test_timeout_kills_quickly(sandbox):
    start = time.monotonic()
    result = sandbox.run("sleep 100", timeout=1)
    assert result.status == "timeout" and result.returncode is None
    assert time.monotonic() - start < 3


def test_fork_bomb_is_contained(sandbox):
    start = time.monotonic()
    result = sandbox.run(":(){ :|:& };: ; sleep 100", timeout=3)
    assert result.status == "timeout"
    assert "Resource temporarily unavailable" in result.stderr  # RLIMIT_NPROC hit
    assert time.monotonic() - start < 10
    assert sandbox.run("echo still fine").stdout == "still fine\n"


def test_memory_limit(sandbox):
    result = sandbox.run("python3 -c 'x = bytearray(8 * 2**30)'")
    assert result.status == "error" and "MemoryError" in result.stderr


def test_output_is_truncated_and_bounded(sandbox):
    flood = sandbox.run("yes", timeout=1)
    assert flood.status == "timeout"
    assert len(flood.stdout) < 1200 and "output truncated" in flood.stdout
    big = sandbox.run("head -c 5000 /dev/zero | tr '\\0' a")
    assert big.stdout.startswith("a" * 1000) and "5000 bytes in total" in big.stdout


def test_background_processes_die_with_the_command(sandbox):
    result = sandbox.run("sleep 60 & echo started")
    assert result.status == "ok" and result.duration < 5
    assert "sleep 60" not in os.popen(f"ps -o args= -u {sandbox.user.uid}").read()


def test_truncate_keeps_head():
    assert truncate("abc", 5) == "abc"
    cut = truncate("abcdef", 3)
    assert cut.startswith("abc\n") and "6 characters in total" in cut
