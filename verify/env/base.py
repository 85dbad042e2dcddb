"""The `Env` protocol every desktop backend implements (DESIGN §6), and the observation it returns.

Paths: the agent's home is `/home/user` as seen by its apps and its shell (OSWorld-compatible task paths);
`host_path()` maps such a path to where it lives on the host, for getters that read files directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from synth.schema import Action, Focus, Screen, StepResult

if TYPE_CHECKING:
    from verify.tasks import TaskSpec

AGENT_HOME = "/home/user"


@dataclass
class Observation:
    screenshot_png: bytes = field(repr=False)
    focus: Focus | None = None
    text: str | None = None  # stdout/stderr of a CLI step or a tool result, shown to the model next


class EnvError(RuntimeError):
    """The environment itself failed (not the agent's action): recorded as infra_error, never as task failure."""


@runtime_checkable
class Env(Protocol):
    screen: Screen

    def reset(self, task: TaskSpec | None = None) -> Observation:
        """Fresh desktop: restore the home template, run the task's setup steps, return the first frame."""
        ...

    def step(self, action: Action) -> tuple[Observation, StepResult]:
        """Execute one action (GUI ops, sandboxed shell command, tool call, control) and wait until settled."""
        ...

    def evaluate(self) -> float:
        """Score the current state against the task passed to the last `reset` (0.0–1.0)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class TaskContext(Protocol):
    """What task setup steps and getters may use of an environment."""

    def run_shell(self, command: str, timeout: float = 30.0) -> StepResult:
        """Run a shell command as the agent user inside the sandbox (no network, time limit)."""
        ...

    def host_path(self, agent_path: str) -> Path:
        """Host location of a path under the agent home (`/home/user/...`); raises ValueError outside it."""
        ...

    def launch(self, argv: list[str]) -> None:
        """Start a GUI program as the agent user on the desktop (detached)."""
        ...

    def wait_for_window(self, title_substring: str, timeout: float = 30.0) -> bool:
        """Wait until a window whose title contains the text is mapped; False on timeout."""
        ...

    def screenshot(self) -> bytes:
        """PNG of the current screen."""
        ...
