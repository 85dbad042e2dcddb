"""The canonical record: one `Trajectory` type flows through every switchyard stage.

Conventions (DESIGN §3):
- Coordinates inside `GuiAction` ops are **absolute screen pixels** of `Trajectory.screen`. Every other space
  (AgentNet [0,1], the 0–999 grid, resized-image pixels) is converted at the edges by `synth.coords`.
- The interface class of a step (gui / cli / tool / control) is the action's `type`; it is never guessed from text.
- Screenshots are referenced by content hash (`ImageRef`) and live in an `ImageStore`.
- `to_json` / `from_json` round-trip exactly.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"

Interface = Literal["gui", "cli", "tool", "control"]
Mode = Literal["gui", "cli", "tool", "hybrid"]


class _Model(BaseModel):
    # forbid: a typo in a field name is a bug in the producer, not data to carry along silently
    model_config = ConfigDict(extra="forbid")


class Screen(_Model):
    width: int = Field(gt=0, description="Screen width in pixels; the space GUI op coordinates live in.")
    height: int = Field(gt=0, description="Screen height in pixels.")


class ImageRef(_Model):
    """A screenshot in the content-addressed store (`images/<sha256[:2]>/<sha256>.png`)."""

    sha256: str = Field(description="SHA-256 of the exact stored bytes (never re-encoded).")
    phash: str | None = Field(
        default=None, description="64-bit perceptual hash (hex) for dedup and evidence."
    )
    width: int | None = None
    height: int | None = None


# ---------------------------------------------------------------- pyautogui ops (absolute pixels)

MouseOpName = Literal[
    "click", "doubleClick", "tripleClick", "rightClick", "middleClick",
    "moveTo", "dragTo", "mouseDown", "mouseUp",
]  # fmt: skip


class MouseOp(_Model):
    op: MouseOpName
    x: float | None = Field(default=None, description="Absolute screen x; None = current pointer position.")
    y: float | None = Field(default=None, description="Absolute screen y; None = current pointer position.")
    button: Literal["left", "middle", "right"] = "left"
    clicks: int = Field(default=1, ge=1, description="Number of clicks (only for op='click').")
    duration: float = Field(default=0.0, ge=0, description="Movement duration in seconds (moveTo/dragTo).")


class ScrollOp(_Model):
    op: Literal["scroll", "hscroll"]
    amount: int = Field(
        description="Scroll clicks; positive = up (scroll) or right (hscroll), as in pyautogui."
    )
    x: float | None = None
    y: float | None = None


class KeyOp(_Model):
    op: Literal["press", "hotkey", "keyDown", "keyUp"]
    keys: list[str] = Field(
        min_length=1, description="pyautogui key names, lower-case ('ctrl', 'enter', 'a')."
    )
    presses: int = Field(default=1, ge=1, description="Repetitions (only for op='press').")


class TypeOp(_Model):
    op: Literal["write"] = Field(
        default="write", description="typewrite()/write() are both stored as 'write'."
    )
    text: str
    interval: float = Field(default=0.0, ge=0)


PyAutoGUIOp = Annotated[MouseOp | ScrollOp | KeyOp | TypeOp, Field(discriminator="op")]


# ---------------------------------------------------------------- actions


class GuiAction(_Model):
    type: Literal["gui"] = "gui"
    ops: list[PyAutoGUIOp] = Field(min_length=1)


class CliAction(_Model):
    type: Literal["cli"] = "cli"
    command: str = Field(min_length=1, description="A shell command (bash), possibly multi-line.")
    timeout: float = Field(default=30.0, gt=0, description="Wall-clock limit in seconds inside the sandbox.")


class ToolCall(_Model):
    type: Literal["tool"] = "tool"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Control(_Model):
    type: Literal["control"] = "control"
    kind: Literal["wait", "terminate", "answer"]
    value: str | None = Field(default=None, description="terminate: 'success'|'failure'; answer: the answer.")


Action = Annotated[GuiAction | CliAction | ToolCall | Control, Field(discriminator="type")]


def interface_of(action: GuiAction | CliAction | ToolCall | Control) -> Interface:
    """The interface class of an action, from its type alone."""
    return action.type


# ---------------------------------------------------------------- steps and trajectories


class StepResult(_Model):
    status: Literal["ok", "error", "timeout", "infra_error", "not_executed"] = "ok"
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration: float | None = Field(default=None, description="Seconds the action took to execute.")


class Focus(_Model):
    """Evidence of which window had the keyboard focus when the action ran (when the source recorded it)."""

    title: str | None = None
    wm_class: str | None = Field(default=None, description="X11 WM_CLASS, e.g. 'xterm', 'libreoffice-calc'.")


class Step(_Model):
    index: int = Field(ge=0)
    screenshot: ImageRef | None = Field(default=None, description="Frame the agent saw before acting.")
    observation_text: str | None = Field(
        default=None,
        description="Text shown to the model after the previous action (stdout/stderr, tool result).",
    )
    thought: str | None = None
    action: Action
    result: StepResult | None = None
    next_screenshot: ImageRef | None = Field(default=None, description="Frame after the action settled.")
    focus: Focus | None = None
    origin: list[int] = Field(
        default_factory=list, description="Indices of the source steps this step replaces."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def interface(self) -> Interface:
        return interface_of(self.action)


class Source(_Model):
    dataset: str = Field(
        description="Where the record came from, e.g. 'agentnet', 'osworld-run', 'switchyard'."
    )
    record_id: str = Field(description="The record's id in its source.")


class Outcome(_Model):
    score: float | None = Field(default=None, description="Verifier score in [0, 1].")
    success: bool | None = None
    verifier: str | None = Field(default=None, description="Which verifier produced the score.")
    judge: str | None = Field(default=None, description="Behavior judge verdict, when one was run.")


class Provenance(_Model):
    stage: str
    version: str = Field(description="Code version of the stage.")
    params_hash: str = Field(description="Hash of the stage config that produced this record.")
    parent_id: str | None = None


class Trajectory(_Model):
    schema_version: str = SCHEMA_VERSION
    id: str
    source: Source
    instruction: str
    platform: str = "linux"
    screen: Screen
    task_id: str | None = None
    mode: Mode = "gui"
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome | None = None
    provenance: list[Provenance] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=False)

    @classmethod
    def from_json(cls, text: str) -> Trajectory:
        return cls.model_validate_json(text)

    def derive(self, *, stage: str, version: str, params_hash: str, **changes: Any) -> Trajectory:
        """A copy with `changes` applied and one provenance entry appended (parent = this record)."""
        entry = Provenance(stage=stage, version=version, params_hash=params_hash, parent_id=self.id)
        return self.model_copy(update={**changes, "provenance": [*self.provenance, entry]}, deep=True)


class Rejected(_Model):
    """A record a stage could not keep. `reason` is a machine-readable code; `detail` is for humans."""

    record_id: str
    stage: str
    reason: str = Field(description="Short snake_case code, counted per stage, e.g. 'missing_image'.")
    detail: str = ""
    step_index: int | None = None


Result = Trajectory | Rejected


def config_hash(config: BaseModel | dict[str, Any]) -> str:
    """Stable short hash of a config, recorded in provenance and used in cache keys."""
    data = config.model_dump(mode="json") if isinstance(config, BaseModel) else config
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
