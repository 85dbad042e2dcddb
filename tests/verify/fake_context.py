"""A real, minimal `TaskContext` over a temp directory, for unit tests of setup steps, getters and metrics.

The temp directory plays the agent home (`/home/user`); shell commands run with bash in it (HOME pointing at
it), so task commands written with `~` behave as in the sandbox. GUI calls are recorded, not executed.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path, PurePosixPath

from synth.schema import StepResult
from verify.env.base import AGENT_HOME


class FakeContext:
    def __init__(self, home: Path):
        self.home = Path(home)
        self.launched: list[list[str]] = []
        self.windows_waited: list[str] = []

    def run_shell(self, command: str, timeout: float = 30.0) -> StepResult:
        env = {"HOME": str(self.home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        start = time.monotonic()
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.home,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return StepResult(status="timeout", duration=time.monotonic() - start)
        return StepResult(
            status="ok" if done.returncode == 0 else "error",
            returncode=done.returncode,
            stdout=done.stdout,
            stderr=done.stderr,
            duration=time.monotonic() - start,
        )

    def host_path(self, agent_path: str) -> Path:
        path = PurePosixPath(agent_path)
        home = PurePosixPath(AGENT_HOME)
        if path != home and home not in path.parents:
            raise ValueError(f"{agent_path} is outside {AGENT_HOME}")
        return self.home / path.relative_to(home)

    def launch(self, argv: list[str]) -> None:
        self.launched.append(list(argv))

    def wait_for_window(self, title_substring: str, timeout: float = 30.0) -> bool:
        self.windows_waited.append(title_substring)
        return True

    def screenshot(self) -> bytes:
        return b""
