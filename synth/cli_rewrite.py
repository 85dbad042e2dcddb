"""GUI→CLI rewrite: fold terminal typing inside GUI trajectories into direct shell commands.

HybridCUA (App. C.1 of its paper; we could not verify the paper's bibliographic details here) builds part of its interleaved GUI–CLI data by finding the segments of a GUI demonstration in which the
demonstrator typed into a terminal, folding each segment back into one shell command, and replaying the result.
The project page (github.com/ZJU-REAL/HybridCUA, site/index.html) states that route; the appendix wording itself
was not available when this module was written, so the rules below are our precise reading of it. Each choice is
conservative: when in doubt a step stays GUI, since a wrongly folded command corrupts data and a missed one only
loses a sample.

1. Which typing goes to a terminal. Evidence, strongest first:
   a. `Step.focus` (recorded by our recorder and OSWorld runs). When present it decides, both ways: WM_CLASS
      (any dot/space separated part) in `terminal_wm_classes`, or, without a WM_CLASS, a title matching
      `terminal_title_patterns`. A text editor with focus is never a terminal, whatever the thought says.
   b. An opening event earlier in the trajectory: a terminal-opening hotkey (ctrl+alt+t), or a step whose
      description says it opens/launches/searches for a terminal and that ends in a launching gesture (a click on
      the dock icon, Enter on the launcher's search hit; a bare Super press only announces the intent). The
      terminal is then assumed focused for the following steps until focus evidently leaves: any mouse click,
      drag or button press (we cannot tell a click inside the terminal from one elsewhere), a window/desktop
      switching hotkey (`focus_leaving_hotkeys`: alt+tab, super, alt+f4, …) or a submitted `exit`/`logout`.
      Focus evidence that shows a terminal is carried forward under the same rule, and a command half-typed in a
      terminal keeps the keys there until it is submitted (so "type …" then "press Enter" steps fold together).
   c. Text (synth.sources.agentnet keeps AgentNet's "thought" in `Step.thought` and its natural-language "action"
      in `Step.metadata["action_description"]`): the step says it types in/into the terminal
      (`text_terminal_patterns`). A step that says it opens or searches for a terminal (`text_opening_patterns`)
      is the opposite: its own typing goes to a launcher, not a shell. Text is never carried to later steps. The
      screen description is not used: it says what is visible, not where the keys go.
2. Reconstructing commands. Terminal typing is replayed through a line buffer: `write` text (with '\\n'/'\\r' as
   Enter), `press('enter'|'return')`, single printable keys and 'space'. A submitted line completes a command when
   bash itself (`bash -n`, never executing anything) does not ask for more input: open quotes, `for … do` without
   `done`, a pipe or `&&` at the end, a trailing backslash and an unclosed heredoc all continue onto the next line,
   so a heredoc typed line by line (`cat > f <<EOF` … `EOF`) folds into one multi-line command. A command that bash
   rejects as a genuine syntax error is still a command: it is what was submitted, and replay will judge it.
   Backspace removes the last character of the current line (`resolve_backspace`); a backspace with nothing to
   delete, Tab (completion), arrows and every other editing key make the typing ambiguous.
3. Folding. A span is a run of consecutive steps each made only of terminal typing (optionally preceded by
   opening hotkeys inside the same action) that ends exactly when the line buffer is empty and no command is
   pending. The span becomes ONE `CliAction` whose command is every command completed in it, one per line. Steps
   are never split: a step mixing terminal typing with anything else (a click, a non-terminal key) stays GUI, and
   so does any span it interrupts. Empty Enter presses with nothing typed stay GUI.
4. Removal. A step made only of terminal-opening hotkeys is dropped (`drop_opening_steps`) when the terminal
   session it opened produced at least one folded command and no ambiguous typing; otherwise it stays GUI (so a
   second rewrite sees the same evidence). Submission keystrokes and heredoc lines vanish into the folded step.
   Dropped steps are listed in `Trajectory.metadata["removed_source_steps"]`, so every source step is accounted for.
5. Output steps: re-indexed 0..n-1; `origin` = union of the replaced steps' origins (a step without one counts as
   its own index); screenshot/observation_text of the first replaced step, next_screenshot of the last; thought =
   the distinct non-empty thoughts of the replaced steps joined by newlines (every step's reasoning is kept; a
   later stage may rewrite it); focus/result cleared (a shell command runs in the sandbox, not in a window, and
   has not run yet). The folded step's metadata records the evidence used and whether the terminal still had
   focus afterwards (`terminal_focused_after`), so a second rewrite carries the same context past it.
6. Records: new id `<id><id_suffix>`, mode "cli" when every non-control step is CLI, else "hybrid", one provenance
   entry (`rewrite_cli`). No folded command → `Rejected("no_terminal_commands")`, or
   `Rejected("ambiguous_terminal_typing")` when terminal typing existed but none could be reconstructed (the
   original stays in the ingest output either way). Ambiguous spans next to folded ones (an unterminated command at
   the end, an interrupted span, a backspace past the line) stay GUI and are listed in
   `metadata["cli_rewrite"]["ambiguous"]`; `reject_partial` rejects such records instead.

7. Shell state. A typed session is one long-lived shell, but every `CliAction` runs in a fresh one (OSWorld's
   `run_bash_script`, our sandbox). So the state-changing commands a session ran before (`cd`, `pushd`, `export`,
   `source`, `alias`, `umask`, bare `VAR=value`; `shell_state_builtins`) are replayed in front of each later
   command of the same terminal, one per line, as typed (`carry_shell_state`). State changed inside a compound
   command (`cd x && make`) is not carried; the step's metadata then says `shell_state: "uncertain"`.

Rewriting a rewritten trajectory folds nothing further: it yields one of the two rejections (property-tested in
tests/synth/test_cli_rewrite.py; rules 4 and 5 exist to keep this true).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, field_validator

from synth.schema import (
    CliAction,
    GuiAction,
    KeyOp,
    MouseOp,
    Rejected,
    Step,
    Trajectory,
    TypeOp,
    config_hash,
)

STAGE = "rewrite_cli"
VERSION = "2"  # 2: carries shell state into later commands (rule 7)


class CliRewriteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    terminal_wm_classes: list[str] = Field(
        default=[
            "xterm",
            "uxterm",
            "gnome-terminal",
            "gnome-terminal-server",
            "xfce4-terminal",
            "konsole",
            "terminator",
            "tilix",
            "alacritty",
            "kitty",
            "urxvt",
            "rxvt",
            "lxterminal",
            "mate-terminal",
            "qterminal",
            "terminology",
            "wezterm",
            "foot",
            "st-256color",
            "sakura",
            "guake",
            "tilda",
        ],  # fmt: skip
        description="WM_CLASS names (case-insensitive) of terminal emulators. Decisive when a step has focus "
        "evidence; a class missing here turns real terminal typing into GUI typing (lost folds, never wrong ones).",
    )
    terminal_title_patterns: list[str] = Field(
        default=[r"^\s*(terminal|xterm|uxterm|konsole)\s*$", r"^[\w.-]+@[\w.-]+:\s*\S"],
        description="Regexes (case-insensitive) on the focused window title, used only when WM_CLASS is missing. "
        "Kept narrow: a browser tab titled 'Terminal emulator - Wikipedia' must not count.",
    )
    opening_hotkeys: list[list[str]] = Field(
        default=[["ctrl", "alt", "t"]],
        description="Key combinations that open a terminal (exact set match after alias normalisation).",
    )
    focus_leaving_hotkeys: list[list[str]] = Field(
        default=[
            ["alt", "tab"],
            ["alt", "f4"],
            ["alt", "f1"],
            ["alt", "f2"],
            ["win"],
            ["alt", "escape"],
            ["ctrl", "alt", "left"],
            ["ctrl", "alt", "right"],
            ["ctrl", "alt", "up"],
            ["ctrl", "alt", "down"],
        ],  # fmt: skip
        description="A key press/hotkey containing any of these combinations moves focus away from the terminal "
        "('win' covers super/meta/command). Mouse clicks always count as leaving.",
    )
    use_text_evidence: bool = Field(
        default=True, description="Use thought/metadata text as the weakest evidence (rule 1c)."
    )
    text_evidence_keys: list[str] = Field(
        default=["action_description", "action"],
        description="Step.metadata keys whose string values are read as text evidence besides Step.thought: the "
        "natural-language action, stored by synth.sources.agentnet as 'action_description'. The screen "
        "description ('observation_description') is deliberately absent: it says what is visible, not where keys go.",
    )
    text_terminal_patterns: list[str] = Field(
        default=[
            r"\b(in|into|inside|within|on|at)\s+(the\s+|a\s+|this\s+)?(open(ed)?\s+)?"
            r"(terminal|shell|command[- ]line|console|bash)\b",
            r"\b(terminal|shell|bash)\s+(command|prompt)\b",
        ],
        description="Regexes (case-insensitive): the step types into a terminal.",
    )
    text_opening_patterns: list[str] = Field(
        default=[
            r"\b(open|opening|launch|launching|start|starting|search|searching)\b(\s+for)?\s+"
            r"(up\s+)?(a\s+|the\s+|new\s+|another\s+)*(terminal|xterm|konsole|console)\b",
        ],
        description="Regexes (case-insensitive): the step opens or searches for a terminal. Such a step marks an "
        "opening event after it, and its own typing is not terminal typing.",
    )
    drop_opening_steps: bool = Field(
        default=True,
        description="Drop steps made only of opening hotkeys when their terminal session was fully folded.",
    )
    resolve_backspace: bool = Field(
        default=True,
        description="Apply backspaces to the current line; when False any backspace makes the span ambiguous.",
    )
    reject_partial: bool = Field(
        default=False,
        description="Reject a record with any ambiguous terminal typing instead of keeping those steps as GUI.",
    )
    command_timeout: float = Field(
        default=30.0, gt=0, description="CliAction.timeout (seconds) of every folded command at replay."
    )
    id_suffix: str = Field(
        default="-cli", min_length=1, description="Appended to the record id of the rewrite."
    )
    carry_shell_state: bool = Field(
        default=True,
        description="Prefix each folded command with the state-changing commands (cd, export, ...) its terminal "
        "session ran before, because every CliAction runs in a fresh shell (rule 7). Off: commands as typed.",
    )
    shell_state_builtins: list[str] = Field(
        default_factory=lambda: [
            "cd",
            "pushd",
            "popd",
            "export",
            "source",
            ".",
            "alias",
            "unalias",
            "umask",
            "set",
            "shopt",
            "unset",
            "declare",
        ],
        description="Commands whose effect outlives them in an interactive shell (rule 7).",
    )
    shell: str = Field(
        default="bash",
        description="Shell whose parser decides when a typed command is complete (`<shell> -n`, ~2 ms a line, "
        "cached). Must be bash-compatible: the replay sandbox runs bash.",
    )

    @field_validator("terminal_title_patterns", "text_terminal_patterns", "text_opening_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            re.compile(pattern)
        return patterns


# ---------------------------------------------------------------- keys

_ALIASES = {
    "control": "ctrl", "ctrlleft": "ctrl", "ctrlright": "ctrl", "altleft": "alt", "altright": "alt",
    "option": "alt", "shiftleft": "shift", "shiftright": "shift", "return": "enter", "esc": "escape",
    "winleft": "win", "winright": "win", "super": "win", "meta": "win", "command": "win", "cmd": "win",
}  # fmt: skip

_ENTER, _BACKSPACE, _UNSUPPORTED = object(), object(), object()
Token = str | object


def _key(name: str) -> str:
    low = name.lower()
    return _ALIASES.get(low, low)


def _is_opening(op: object, cfg: CliRewriteConfig) -> bool:
    if not isinstance(op, KeyOp) or op.op != "hotkey":
        return False
    keys = {_key(k) for k in op.keys}
    return any(keys == {_key(k) for k in combo} for combo in cfg.opening_hotkeys)


def _leaves_focus(op: object, cfg: CliRewriteConfig) -> bool:
    if isinstance(op, MouseOp):
        return op.op not in ("moveTo", "mouseUp")
    if isinstance(op, KeyOp) and op.op in ("press", "hotkey", "keyDown"):
        keys = {_key(k) for k in op.keys}
        return any({_key(k) for k in combo} <= keys for combo in cfg.focus_leaving_hotkeys)
    return False


def _launches(op: object) -> bool:
    """Could `op` be the gesture that starts an application (a click on its icon, Enter on a search hit)?"""
    if isinstance(op, MouseOp):
        return op.op in ("click", "doubleClick")
    return isinstance(op, KeyOp) and op.op in ("press", "hotkey") and _key(op.keys[-1]) == "enter"


def _typing_tokens(op: object) -> list[Token] | None:
    """What a terminal's line editor receives from `op`, or None when `op` is not typing at all."""
    if isinstance(op, TypeOp):
        out: list[Token] = []
        for ch in op.text:
            if ch in "\n\r":
                out.append(_ENTER)
            elif ch == "\b":
                out.append(_BACKSPACE)
            elif ch == "\t" or ord(ch) < 32 or ord(ch) == 127:
                # Tab completes and control characters edit: the resulting line cannot be known
                out.append(_UNSUPPORTED)
            else:
                out.append(ch)
        return out
    if isinstance(op, KeyOp) and (op.op == "press" or (op.op == "hotkey" and len(op.keys) == 1)):
        one: list[Token] = []
        for raw in op.keys:
            key = _key(raw)
            if key == "enter":
                one.append(_ENTER)
            elif key == "backspace":
                one.append(_BACKSPACE)
            elif key == "space":
                one.append(" ")
            elif len(raw) == 1 and raw.isprintable():
                one.append(raw)
            else:
                return None
        return one * (op.presses if op.op == "press" else 1)
    return None


# ---------------------------------------------------------------- shell completeness


@functools.lru_cache(maxsize=8192)
def _needs_more_input(text: str, shell: str) -> bool:
    """Would an interactive shell show its continuation prompt (PS2) after `text` is submitted?"""
    last = text.rsplit("\n", 1)[-1]
    if (len(last) - len(last.rstrip("\\"))) % 2 == 1:
        return True  # backslash-newline continues the line; `-n` accepts a lone backslash at EOF
    exe = shutil.which(shell)
    if exe is None:
        raise RuntimeError(f"rewrite_cli needs the shell {shell!r} to decide where typed commands end")
    # -n parses without executing; a bare environment keeps BASH_ENV and locale-translated messages out
    proc = subprocess.run(
        [exe, "--norc", "--noprofile", "-n"],
        input=text + "\n",
        capture_output=True,
        text=True,
        timeout=10,
        env={"PATH": os.defpath, "LC_ALL": "C"},
    )
    err = proc.stderr
    return "delimited by end-of-file" in err or (
        proc.returncode != 0 and ("unexpected end of file" in err or "unexpected EOF" in err)
    )


def _exits_shell(command: str) -> bool:
    words = command.strip().rsplit("\n", 1)[-1].split()
    return bool(words) and words[0] in ("exit", "logout")


# ---------------------------------------------------------------- span reconstruction


@dataclass
class _Session:
    opening_step: int | None  # a step made only of opening hotkeys, candidate for removal
    folds: int = 0
    ambiguous: int = 0


@dataclass
class _Span:
    shell: str
    resolve_backspace: bool
    owner: _Session | None  # the terminal session the span was typed in, if one was opened in-trajectory
    steps: list[int] = field(default_factory=list)
    evidence: set[str] = field(default_factory=set)
    buffer: str = ""
    lines: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    exited: bool = False

    @property
    def idle(self) -> bool:
        return not self.buffer and not self.lines

    def feed(self, tokens: list[Token]) -> str | None:
        """Replay one step's keystrokes; returns an ambiguity reason, or None."""
        for tok in tokens:
            if self.exited:
                return "typing_after_exit"
            if tok is _UNSUPPORTED:
                return "unsupported_key"
            if tok is _BACKSPACE:
                if not self.resolve_backspace:
                    return "backspace"
                if not self.buffer:
                    return "backspace_past_line"
                self.buffer = self.buffer[:-1]
            elif tok is _ENTER:
                self._submit()
            else:
                self.buffer += tok  # type: ignore[operator]
        return None

    def _submit(self) -> None:
        if not self.lines and not self.buffer.strip():
            self.buffer = ""  # an empty prompt line: nothing runs
            return
        self.lines.append(self.buffer)
        self.buffer = ""
        text = "\n".join(self.lines)
        if not _needs_more_input(text, self.shell):
            self.commands.append(text)
            self.lines = []
            self.exited = _exits_shell(text)


@dataclass
class _StepScan:
    tokens: list[Token]
    foldable: bool  # only terminal typing (after optional opening hotkeys)
    terminal_typing: bool  # some typing went to a terminal
    pure_opening: bool
    opens: bool
    ctx_after: bool
    label_after: str  # how the terminal focus carried past this step is known
    evidence: str | None  # how this step's typing is known to reach a terminal


def _has_focus(step: Step) -> bool:
    return step.focus is not None and bool(step.focus.wm_class or step.focus.title)


def _focus_is_terminal(step: Step, cfg: CliRewriteConfig) -> bool:
    assert step.focus is not None
    if step.focus.wm_class:
        parts = {p for p in re.split(r"[.\s,]+", step.focus.wm_class.lower()) if p}
        return bool(parts & {c.lower() for c in cfg.terminal_wm_classes})
    title = step.focus.title or ""
    return any(re.search(p, title, re.IGNORECASE) for p in cfg.terminal_title_patterns)


def _step_text(step: Step, cfg: CliRewriteConfig) -> str:
    parts = [step.thought or ""]
    parts += [v for k in cfg.text_evidence_keys if isinstance(v := step.metadata.get(k), str)]
    return "\n".join(p for p in parts if p)


def _scan(
    step: Step, action: GuiAction, ctx: bool, carried: str, pending: bool, cfg: CliRewriteConfig
) -> _StepScan:
    """Classify one GUI step.

    `ctx`/`carried`: whether a terminal had focus before the step by focus or opening evidence, and which.
    `pending`: a command is half-typed in a terminal, so unless something moved the focus the keys still go there.
    Text evidence applies to its own step only; it is never carried forward.
    """
    text = _step_text(step, cfg) if cfg.use_text_evidence else ""
    says_opening = bool(text) and any(re.search(p, text, re.IGNORECASE) for p in cfg.text_opening_patterns)
    says_terminal = bool(text) and any(re.search(p, text, re.IGNORECASE) for p in cfg.text_terminal_patterns)
    keep, label = ctx, carried  # what later steps may inherit
    if _has_focus(step):
        keep, label = _focus_is_terminal(step, cfg), "focus"
        cur = keep
    elif says_opening:
        cur = False  # the step types into a launcher or search box, not into a shell
    elif keep or pending:
        cur = True
        label = label if keep else "carried"
    else:
        cur, label = says_terminal, "text"

    tokens: list[Token] = []
    evidence: str | None = None
    foldable, terminal_typing, opens = True, False, False
    for op in action.ops:
        if _is_opening(op, cfg):
            opens, cur, keep, label = True, True, True, "opening_event"
            foldable = foldable and not tokens
            continue
        if _leaves_focus(op, cfg):
            cur, keep, foldable = False, False, False
            continue
        typed = _typing_tokens(op)
        if typed is None:
            foldable = False
        elif cur:
            terminal_typing = True
            evidence = evidence or label
            tokens += typed
        else:
            foldable = False
    if says_opening and action.ops and _launches(action.ops[-1]):
        opens, keep, label = True, True, "opening_event"
    return _StepScan(
        tokens=tokens,
        foldable=foldable and terminal_typing,
        terminal_typing=terminal_typing,
        pure_opening=all(_is_opening(op, cfg) for op in action.ops),
        opens=opens,
        ctx_after=keep,
        # an opening event stays the reason until other evidence confirms the terminal; anything else is carried
        label_after=label if label == "opening_event" else "carried",
        evidence=evidence,
    )


def _sources(step: Step) -> list[int]:
    return list(step.origin) if step.origin else [step.index]


def _joined_thought(steps: list[Step]) -> str | None:
    out: list[str] = []
    for s in steps:
        if s.thought and s.thought.strip() and s.thought not in out:
            out.append(s.thought)
    return "\n".join(out) if out else None


# ---------------------------------------------------------------- the stage


@dataclass
class _Fold:
    steps: list[int]
    command: str
    evidence: list[str]
    terminal_focused_after: bool
    session: _Session | None  # None: a terminal that was open before the trajectory started
    commands: list[str] = field(default_factory=list)
    prelude: list[str] = field(default_factory=list)  # state-changing commands the session ran before
    state_uncertain: bool = False


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
_COMPOUND = re.compile(r"[;&|\n`]|\$\(")


def _carry_shell_state(folds: dict[int, _Fold], cfg: CliRewriteConfig) -> None:
    """Rule 7: give each fold the state-changing commands its terminal session ran before it."""
    state: dict[int, list[str]] = {}  # id(session) -> commands, in order
    uncertain: set[int] = set()
    for first in sorted(folds):
        fold = folds[first]
        key = id(fold.session)
        fold.prelude = list(state.get(key, []))
        fold.state_uncertain = key in uncertain
        for command in fold.commands:
            words = command.split()
            if not words:
                continue
            changes_state = words[0] in cfg.shell_state_builtins or (
                len(words) == 1 and _ASSIGNMENT.match(words[0])
            )
            if changes_state and not _COMPOUND.search(command):
                state.setdefault(key, []).append(command)
            elif any(w in cfg.shell_state_builtins for w in re.split(r"[\s;&|()]+", command)):
                uncertain.add(key)


def rewrite_trajectory(traj: Trajectory, cfg: CliRewriteConfig) -> Trajectory | Rejected:
    """Fold every terminal-typing span of `traj` into one CliAction step (see module docstring)."""
    ctx, carried = False, "carried"  # does a terminal have the keyboard focus, and how do we know
    span: _Span | None = None
    sessions: list[_Session] = []
    session: _Session | None = None
    folds: dict[int, _Fold] = {}  # first step of the span -> fold
    ambiguous: list[tuple[list[int], str]] = []

    def give_up(steps: list[int], reason: str, owner: _Session | None) -> None:
        ambiguous.append((steps, reason))
        if owner is not None:
            owner.ambiguous += 1

    for i, step in enumerate(traj.steps):
        action = step.action
        if not isinstance(action, GuiAction):
            if span is not None:
                give_up(span.steps, "interrupted", span.owner)
                span = None
            # a step folded by an earlier rewrite carries the focus state it left behind; any other non-GUI
            # action runs outside the desktop and moves no focus
            recorded = step.metadata.get("cli_rewrite", {})
            if (
                isinstance(action, CliAction)
                and isinstance(recorded, dict)
                and "terminal_focused_after" in recorded
            ):
                ctx = bool(recorded["terminal_focused_after"])
        else:
            scan = _scan(step, action, ctx, carried, span is not None, cfg)
            if span is not None and (scan.opens or not scan.foldable):
                # typing after a new terminal opens cannot continue the pending line of the old one
                give_up(span.steps, "interrupted", span.owner)
                span = None
            if scan.opens:
                session = _Session(opening_step=i if scan.pure_opening else None)
                sessions.append(session)
            ctx, carried = scan.ctx_after, scan.label_after
            if scan.foldable:
                span = span or _Span(cfg.shell, cfg.resolve_backspace, owner=session)
                span.steps.append(i)
                span.evidence.add(scan.evidence or "carried")
                reason = span.feed(scan.tokens)
                ctx = ctx and not span.exited
                if reason is not None:
                    give_up(span.steps, reason, span.owner)
                    span = None
                elif span.idle:
                    if span.commands:
                        folds[span.steps[0]] = _Fold(
                            span.steps,
                            "\n".join(span.commands),
                            sorted(span.evidence),
                            ctx,
                            session=span.owner,
                            commands=list(span.commands),
                        )
                        if span.owner is not None:
                            span.owner.folds += 1
                    span = None
            elif scan.terminal_typing:
                give_up([i], "mixed_action", session)
        if not ctx:
            session = None
    if span is not None:
        give_up(span.steps, "unterminated", span.owner)

    if not folds or (cfg.reject_partial and ambiguous):
        reason = "ambiguous_terminal_typing" if ambiguous else "no_terminal_commands"
        detail = "; ".join(f"steps {s}: {r}" for s, r in ambiguous) or "no typing reached a terminal"
        return Rejected(record_id=traj.id, stage=STAGE, reason=reason, detail=detail)

    if cfg.carry_shell_state:
        _carry_shell_state(folds, cfg)
    removed = {
        s.opening_step
        for s in sessions
        if cfg.drop_opening_steps and s.opening_step is not None and s.folds and not s.ambiguous
    }
    return _assemble(traj, cfg, folds, removed, ambiguous)


def _assemble(
    traj: Trajectory,
    cfg: CliRewriteConfig,
    folds: dict[int, _Fold],
    removed: set[int],
    ambiguous: list[tuple[list[int], str]],
) -> Trajectory:
    steps: list[Step] = []
    removed_sources: set[int] = set(traj.metadata.get("removed_source_steps", []))
    i = 0
    while i < len(traj.steps):
        src = traj.steps[i]
        if i in removed:
            removed_sources.update(_sources(src))
            i += 1
        elif i in folds:
            fold = folds[i]
            group = [traj.steps[j] for j in fold.steps]
            origin = sorted({o for s in group for o in _sources(s)})
            steps.append(
                Step(
                    index=len(steps),
                    screenshot=group[0].screenshot,
                    observation_text=group[0].observation_text,
                    thought=_joined_thought(group),
                    action=CliAction(
                        command="\n".join([*fold.prelude, fold.command]), timeout=cfg.command_timeout
                    ),
                    next_screenshot=group[-1].next_screenshot,
                    origin=origin,
                    metadata={
                        "cli_rewrite": {
                            "evidence": fold.evidence,
                            "terminal_focused_after": fold.terminal_focused_after,
                            "typed_command": fold.command,
                            "carried_shell_state": fold.prelude,
                            **({"shell_state": "uncertain"} if fold.state_uncertain else {}),
                        }
                    },
                )
            )
            i = fold.steps[-1] + 1
        else:
            steps.append(src.model_copy(update={"index": len(steps), "origin": _sources(src)}, deep=True))
            i += 1

    interfaces = {s.interface for s in steps} - {"control"}
    mode = "cli" if interfaces == {"cli"} else "hybrid"
    metadata = {
        **traj.metadata,
        "removed_source_steps": sorted(removed_sources),
        "cli_rewrite": {
            "folded_commands": len(folds),
            "ambiguous": [
                {"source_steps": sorted({o for j in s for o in _sources(traj.steps[j])}), "reason": r}
                for s, r in ambiguous
            ],
        },
    }
    return traj.derive(
        stage=STAGE,
        version=VERSION,
        params_hash=config_hash(cfg),
        id=f"{traj.id}{cfg.id_suffix}",
        mode=mode,
        steps=steps,
        metadata=metadata,
    )


def rewrite_cli(records: Iterable[Trajectory], cfg: CliRewriteConfig) -> Iterator[Trajectory | Rejected]:
    """Stage `rewrite_cli`: one result per input record, in order (see module docstring for the rules)."""
    if shutil.which(cfg.shell) is None:
        raise RuntimeError(f"rewrite_cli needs the shell {cfg.shell!r} on PATH")
    for record in records:
        yield rewrite_trajectory(record, cfg)
