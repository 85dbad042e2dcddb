"""Tests for synth.cli_rewrite: hand-built trajectories for each rule, an AgentNet-shaped fixture, and
hypothesis properties (accountability of every source step, ordering, idempotence)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synth.cli_rewrite import CliRewriteConfig, rewrite_cli, rewrite_trajectory
from synth.schema import (
    CliAction,
    Control,
    Focus,
    GuiAction,
    ImageRef,
    KeyOp,
    MouseOp,
    Rejected,
    ScrollOp,
    Source,
    Step,
    Trajectory,
    TypeOp,
    config_hash,
)

FIXTURE = Path(__file__).with_name("cli_rewrite_agentnet_terminal.json")
CFG = CliRewriteConfig()
REJECT_REASONS = {"no_terminal_commands", "ambiguous_terminal_typing"}

XTERM = Focus(wm_class="xterm", title="user@host: ~")
GNOME_TERM = Focus(wm_class="gnome-terminal-server.Gnome-terminal", title="user@host: ~/proj")
MOUSEPAD = Focus(wm_class="mousepad", title="Untitled 1 - Mousepad")
CALC = Focus(wm_class="libreoffice-calc", title="book.xlsx - LibreOffice Calc")


def T(text: str) -> TypeOp:
    return TypeOp(text=text)


def P(*keys: str, presses: int = 1) -> KeyOp:
    return KeyOp(op="press", keys=list(keys), presses=presses)


def H(*keys: str) -> KeyOp:
    return KeyOp(op="hotkey", keys=list(keys))


def C(x: float = 100, y: float = 100) -> MouseOp:
    return MouseOp(op="click", x=x, y=y)


def img(tag: str) -> ImageRef:
    return ImageRef(sha256=tag.rjust(64, "0"))


def S(*ops, focus: Focus | None = None, thought: str | None = None, act=None, **metadata) -> dict:
    """A step spec: GUI `ops` or a non-GUI `act`; `traj` fills index and screenshots."""
    return {"ops": ops, "focus": focus, "thought": thought, "action": act, "metadata": metadata}


def traj(*specs: dict, tid: str = "t1") -> Trajectory:
    steps = []
    for i, spec in enumerate(specs):
        action = spec["action"] or GuiAction(ops=list(spec["ops"]))
        steps.append(
            Step(
                index=i,
                screenshot=img(f"a{i}"),
                next_screenshot=img(f"a{i + 1}"),
                focus=spec["focus"],
                thought=spec["thought"],
                action=action,
                metadata=spec["metadata"],
            )
        )
    return Trajectory(
        id=tid,
        source=Source(dataset="test", record_id=tid),
        instruction="do it",
        screen={"width": 1280, "height": 720},
        steps=steps,
    )


def ok(t: Trajectory, cfg: CliRewriteConfig = CFG) -> Trajectory:
    out = rewrite_trajectory(t, cfg)
    assert isinstance(out, Trajectory), out
    return out


def commands(t: Trajectory) -> list[str]:
    return [s.action.command for s in t.steps if isinstance(s.action, CliAction)]


# ---------------------------------------------------------------- single rules


def test_single_command_with_newline_in_text():
    t = traj(S(T("ls -la /tmp\n"), focus=XTERM), S(C(), focus=MOUSEPAD))
    out = ok(t)
    assert out.id == "t1-cli"
    assert out.mode == "hybrid"
    assert [s.index for s in out.steps] == [0, 1]
    assert out.steps[0].action == CliAction(command="ls -la /tmp", timeout=CFG.command_timeout)
    assert out.steps[0].origin == [0]
    assert out.steps[1].action == t.steps[1].action and out.steps[1].origin == [1]
    assert out.provenance[-1].stage == "rewrite_cli"
    assert out.provenance[-1].parent_id == "t1"
    assert out.provenance[-1].params_hash == config_hash(CFG)
    assert t.id == "t1" and isinstance(t.steps[0].action, GuiAction)  # the input is untouched


def test_command_split_over_three_typing_steps_then_enter():
    t = traj(
        S(T("grep -rn "), focus=XTERM, thought="start the search"),
        S(T("TODO "), focus=XTERM, thought="the pattern"),
        S(T("src/"), focus=XTERM),
        S(P("return"), focus=XTERM, thought="run it"),
    )
    out = ok(t)
    assert out.mode == "cli"
    assert len(out.steps) == 1
    step = out.steps[0]
    assert step.action.command == "grep -rn TODO src/"
    assert step.origin == [0, 1, 2, 3]
    assert step.screenshot == t.steps[0].screenshot
    assert step.next_screenshot == t.steps[3].next_screenshot
    assert step.thought == "start the search\nthe pattern\nrun it"
    assert step.metadata["cli_rewrite"]["evidence"] == ["focus"]


def test_heredoc_typed_line_by_line_folds_into_one_working_command(tmp_path):
    t = traj(
        S(T("cat > notes.txt <<'EOF'\n"), focus=XTERM),
        S(T("first $HOME line\n"), focus=XTERM),
        S(T("second line\n"), focus=XTERM),
        S(T("EOF"), focus=XTERM),
        S(P("enter"), focus=XTERM),
        S(T("wc -l notes.txt\n"), focus=XTERM),
    )
    out = ok(t)
    assert commands(out) == ["cat > notes.txt <<'EOF'\nfirst $HOME line\nsecond line\nEOF", "wc -l notes.txt"]
    assert [s.origin for s in out.steps] == [[0, 1, 2, 3, 4], [5]]
    # the folded command really does what the typing did
    subprocess.run(["bash", "-c", out.steps[0].action.command], cwd=tmp_path, check=True)
    assert (tmp_path / "notes.txt").read_text() == "first $HOME line\nsecond line\n"


def test_compound_command_continues_until_bash_is_satisfied():
    t = traj(
        S(T("for f in a b; do\n"), focus=XTERM),
        S(T('  echo "$f" |\n'), focus=XTERM),
        S(T("tr a-z A-Z\n"), focus=XTERM),
        S(T("done\n"), focus=XTERM),
        S(T("echo 'multi\n"), focus=XTERM),
        S(T("line' \\\n"), focus=XTERM),
        S(T("  && echo )\n"), focus=XTERM),  # a genuine syntax error is still what was submitted
    )
    out = ok(t)
    assert commands(out) == [
        'for f in a b; do\n  echo "$f" |\ntr a-z A-Z\ndone',
        "echo 'multi\nline' \\\n  && echo )",
    ]


@pytest.mark.parametrize(
    ("focus", "text"),
    [(MOUSEPAD, "ls -la\n"), (CALC, "=SUM(A1:A3)\n"), (Focus(title="Terminal emulator - Wikipedia"), "ls\n")],
)
def test_typing_into_an_application_is_not_rewritten(focus, text):
    # focus evidence is decisive even against a thought that claims a terminal
    t = traj(S(T(text), focus=focus, thought="Type the command in the terminal"), S(P("enter"), focus=focus))
    out = rewrite_trajectory(t, CFG)
    assert isinstance(out, Rejected)
    assert out.reason == "no_terminal_commands" and out.record_id == "t1" and out.stage == "rewrite_cli"


def test_wm_class_parts_and_prompt_titles_count_as_terminals():
    t = traj(S(T("pwd\n"), focus=GNOME_TERM), S(T("id\n"), focus=Focus(title="alice@box: ~/src")))
    assert commands(ok(t)) == ["pwd", "id"]


def test_ctrl_alt_t_then_commands_drops_the_opening_step():
    t = traj(
        S(H("ctrl", "alt", "t"), thought="open a terminal"),
        S(T("mkdir -p ~/proj\n")),
        S(T("cd ~/proj && touch a.txt\n")),
    )
    out = ok(t)
    assert commands(out) == ["mkdir -p ~/proj", "cd ~/proj && touch a.txt"]
    assert [s.origin for s in out.steps] == [[1], [2]]
    assert out.metadata["removed_source_steps"] == [0]
    assert out.mode == "cli"
    assert out.steps[0].metadata["cli_rewrite"]["evidence"] == ["opening_event"]


def test_keep_opening_step_when_configured():
    t = traj(S(H("ctrl", "alt", "t")), S(T("ls\n")))
    out = ok(t, CliRewriteConfig(drop_opening_steps=False))
    assert [s.origin for s in out.steps] == [[0], [1]]
    assert out.steps[0].action == t.steps[0].action
    assert out.metadata["removed_source_steps"] == []


def test_opening_hotkey_inside_the_typing_step_is_folded_with_it():
    t = traj(S(H("ctrl", "alt", "t"), T("uname -a\n")), S(C()))
    out = ok(t)
    assert commands(out) == ["uname -a"] and out.steps[0].origin == [0]


@pytest.mark.parametrize("leave", [H("alt", "tab"), C(), P("win"), MouseOp(op="doubleClick", x=5, y=5)])
def test_focus_leaving_ends_the_terminal_session(leave):
    t = traj(S(H("ctrl", "alt", "t")), S(T("ls\n")), S(leave), S(T("hello world\n")))
    out = ok(t)
    assert commands(out) == ["ls"]
    assert out.steps[-1].action == GuiAction(ops=[T("hello world\n")])


def test_exit_closes_the_terminal():
    t = traj(S(H("ctrl", "alt", "t")), S(T("exit\n")), S(T("hello\n")))
    out = ok(t)
    assert commands(out) == ["exit"]
    assert out.steps[-1].action == GuiAction(ops=[T("hello\n")])


def test_opening_a_terminal_after_typing_in_the_same_action_is_not_folded():
    t = traj(S(T("ls\n"), H("ctrl", "alt", "t"), T("pwd\n"), focus=XTERM))
    out = rewrite_trajectory(t, CFG)
    assert isinstance(out, Rejected) and out.reason == "ambiguous_terminal_typing"


def test_mixed_trajectory_keeps_gui_steps_unchanged():
    t = traj(
        S(C(300, 200), focus=CALC),
        S(T("42\n"), focus=CALC),
        S(H("ctrl", "alt", "t"), focus=CALC),
        S(T("python3 -c 'print(6*7)'\n"), focus=XTERM),
        S(H("alt", "tab"), focus=XTERM),
        S(H("ctrl", "s"), focus=CALC),
        S(act=Control(kind="terminate", value="success")),
    )
    out = ok(t)
    assert out.mode == "hybrid"
    assert [s.origin for s in out.steps] == [[0], [1], [3], [4], [5], [6]]
    assert out.metadata["removed_source_steps"] == [2]
    for s in out.steps:
        if not isinstance(s.action, CliAction):
            src = t.steps[s.origin[0]]
            assert (s.action, s.thought, s.screenshot, s.focus) == (
                src.action,
                src.thought,
                src.screenshot,
                src.focus,
            )


def test_multiple_commands_in_one_action_stay_one_step():
    t = traj(S(T("cd /tmp\nls\n"), focus=XTERM), S(T("pwd\n"), focus=XTERM))
    out = ok(t)
    # the second step runs in a fresh shell: the session's `cd` is carried in front of it (rule 7)
    assert commands(out) == ["cd /tmp\nls", "cd /tmp\npwd"]
    assert len(out.steps) == 2


def test_shell_state_of_a_session_is_carried_into_later_commands():
    t = traj(
        S(T("cd ~/repo\n"), focus=XTERM),
        S(T("export LANG=C\n"), focus=XTERM),
        S(T("ls *.py > files.txt\n"), focus=XTERM),
    )
    out = ok(t)
    assert commands(out) == [
        "cd ~/repo",
        "cd ~/repo\nexport LANG=C",
        "cd ~/repo\nexport LANG=C\nls *.py > files.txt",
    ]
    assert out.steps[2].metadata["cli_rewrite"]["typed_command"] == "ls *.py > files.txt"
    assert commands(ok(t, CliRewriteConfig(carry_shell_state=False))) == [
        "cd ~/repo",
        "export LANG=C",
        "ls *.py > files.txt",
    ]


def test_state_changed_inside_a_compound_command_is_flagged_not_guessed():
    out = ok(traj(S(T("cd /tmp && ls\n"), focus=XTERM), S(T("pwd\n"), focus=XTERM)))
    assert commands(out) == ["cd /tmp && ls", "pwd"]
    assert out.steps[1].metadata["cli_rewrite"]["shell_state"] == "uncertain"


def test_single_key_presses_are_typed_characters():
    t = traj(S(P("l"), P("S"), P("space"), P("-", "a"), H("enter"), focus=XTERM))
    assert commands(ok(t)) == ["lS -a"]


def test_backspaces_edit_the_current_line():
    t = traj(
        S(T("lss"), focus=XTERM), S(P("backspace"), P("enter"), focus=XTERM), S(T("ls\b\bpwd\n"), focus=XTERM)
    )
    assert commands(ok(t)) == ["ls", "pwd"]


def test_backspace_past_the_line_is_ambiguous_and_stays_gui():
    t = traj(S(T("ls\n"), focus=XTERM), S(P("backspace", presses=2), focus=XTERM), S(T("pwd\n"), focus=XTERM))
    out = ok(t)
    assert commands(out) == ["ls", "pwd"]
    assert out.steps[1].action == t.steps[1].action
    assert out.metadata["cli_rewrite"]["ambiguous"] == [
        {"source_steps": [1], "reason": "backspace_past_line"}
    ]


def test_backspace_resolution_can_be_switched_off():
    t = traj(S(T("lss"), P("backspace"), P("enter"), focus=XTERM))
    out = rewrite_trajectory(t, CliRewriteConfig(resolve_backspace=False))
    assert isinstance(out, Rejected) and out.reason == "ambiguous_terminal_typing"


def test_tab_completion_and_mixed_actions_stay_gui():
    t = traj(
        S(T("ls\n"), focus=XTERM),
        S(T("cd Doc\t"), focus=XTERM),
        S(T("\n"), focus=XTERM),
        S(T("whoami\n"), C(), focus=XTERM),
    )
    out = ok(t)
    assert commands(out) == ["ls"]
    assert [a["reason"] for a in out.metadata["cli_rewrite"]["ambiguous"]] == [
        "unsupported_key",
        "mixed_action",
    ]
    assert [s.action for s in out.steps[1:]] == [s.action for s in t.steps[1:]]


def test_unterminated_command_at_the_end():
    t = traj(S(T("ls\n"), focus=XTERM), S(T("echo unfinished"), focus=XTERM))
    out = ok(t)
    assert commands(out) == ["ls"]
    assert out.metadata["cli_rewrite"]["ambiguous"] == [{"source_steps": [1], "reason": "unterminated"}]
    strict = rewrite_trajectory(t, CliRewriteConfig(reject_partial=True))
    assert isinstance(strict, Rejected) and strict.reason == "ambiguous_terminal_typing"
    only = rewrite_trajectory(traj(S(T("echo unfinished"), focus=XTERM)), CFG)
    assert isinstance(only, Rejected) and only.reason == "ambiguous_terminal_typing"


def test_interrupted_span_stays_gui():
    t = traj(
        S(T("echo 'a"), focus=XTERM),
        S(ScrollOp(op="scroll", amount=-3), focus=XTERM),
        S(T("b'\n"), focus=XTERM),
    )
    out = rewrite_trajectory(t, CFG)
    # 'b'\n' alone opens a quote the shell never sees closed: nothing can be folded
    assert isinstance(out, Rejected) and out.reason == "ambiguous_terminal_typing"


def test_empty_enter_in_a_terminal_is_kept():
    t = traj(S(P("enter"), focus=XTERM), S(T("date\n"), focus=XTERM))
    out = ok(t)
    assert out.steps[0].action == t.steps[0].action and commands(out) == ["date"]


def test_text_evidence_without_focus():
    t = traj(
        S(
            T("df -h\n"),
            thought="I will check disk usage.",
            action_description="Type df -h into the terminal and press Enter.",
        ),
        S(
            T("du -sh ."),
            thought="Next, the folder size.",
            action_description="Type du -sh . in the terminal.",
        ),
        S(P("enter"), thought="Run it."),  # completes the pending command although its text says nothing
        S(T("df -h\n"), thought="Type the same in the search bar."),  # text is not carried forward
    )
    out = ok(t)
    assert commands(out) == ["df -h", "du -sh ."]
    assert [s.origin for s in out.steps] == [[0], [1, 2], [3]]
    assert out.steps[0].metadata["cli_rewrite"]["evidence"] == ["text"]
    assert out.steps[2].action == t.steps[3].action
    assert not isinstance(rewrite_trajectory(t, CliRewriteConfig(use_text_evidence=False)), Trajectory)


def test_origins_of_an_already_derived_trajectory_are_propagated():
    t = traj(S(C()), S(T("ls"), focus=XTERM), S(P("enter"), focus=XTERM))
    t.steps[0].origin, t.steps[1].origin, t.steps[2].origin = [0, 1], [2], [3, 4]
    t.metadata["removed_source_steps"] = [5]
    out = ok(t)
    assert [s.origin for s in out.steps] == [[0, 1], [2, 3, 4]]
    assert out.metadata["removed_source_steps"] == [5]


def test_agentnet_shaped_fixture():
    data = json.loads(FIXTURE.read_text())
    t = Trajectory.model_validate(data["trajectory"])
    out = ok(t)
    # the launcher search ('terminal' typed into Activities, Enter on the hit) stays GUI; the shell work folds
    assert commands(out) == [
        "mkdir -p ~/reports && cd ~/reports",
        "cat > notes.txt <<EOF\n- quarterly summary\n- budget review\nEOF",
    ]
    assert [s.origin for s in out.steps] == [[0], [1], [2], [3, 4], [5, 6, 7, 8], [9]]
    assert [s.action for s in out.steps[:3]] == [s.action for s in t.steps[:3]]
    assert out.mode == "hybrid"


def test_stage_yields_one_result_per_record_in_order():
    records = [
        traj(S(T("ls\n"), focus=XTERM), tid="a"),
        traj(S(T("hi\n"), focus=MOUSEPAD), tid="b"),
        traj(S(H("ctrl", "alt", "t")), S(T("pwd\n")), tid="c"),
    ]
    results = list(rewrite_cli(iter(records), CFG))
    assert [type(r).__name__ for r in results] == ["Trajectory", "Rejected", "Trajectory"]
    assert [r.id if isinstance(r, Trajectory) else r.record_id for r in results] == ["a-cli", "b", "c-cli"]


def test_rewriting_twice_changes_nothing_further():
    t = traj(S(H("ctrl", "alt", "t")), S(T("ls\n")), S(T("echo 'x")), S(C()), S(T("pwd\n"), focus=XTERM))
    again = rewrite_trajectory(ok(t), CFG)
    assert isinstance(again, Rejected) and again.reason in REJECT_REASONS


def test_opening_step_is_kept_when_its_session_has_ambiguous_typing():
    # dropping step 0 would leave step 1 without terminal evidence, and a second rewrite would then fold step 2 alone
    t = traj(
        S(H("ctrl", "alt", "t")),
        S(T("echo 'x")),
        S(T("ls\n"), focus=XTERM),
        S(ScrollOp(op="scroll", amount=-1)),
        S(T("pwd\n")),
    )
    out = ok(t)
    assert commands(out) == ["pwd"]
    assert out.metadata["removed_source_steps"] == []
    assert out.steps[0].action == t.steps[0].action
    again = rewrite_trajectory(out, CFG)
    assert isinstance(again, Rejected) and again.reason == "ambiguous_terminal_typing"


def test_folded_step_carries_the_terminal_focus_to_a_second_rewrite():
    t = traj(S(T("pwd\n"), focus=XTERM), S(T("echo 'x")), S(T("ls\n"), focus=XTERM), S(C()))
    out = ok(t)
    assert commands(out) == ["pwd"]
    assert out.steps[0].metadata["cli_rewrite"]["terminal_focused_after"] is True
    again = rewrite_trajectory(out, CFG)
    assert isinstance(again, Rejected) and again.reason == "ambiguous_terminal_typing"


def test_searching_for_a_terminal_is_not_terminal_typing():
    t = traj(
        S(H("ctrl", "alt", "t")),
        S(T("ls\n")),
        S(T("terminal"), thought="Search for the terminal app to open a second one."),
        S(P("enter")),
    )
    out = ok(t)
    assert commands(out) == ["ls"]
    assert [s.action for s in out.steps[1:]] == [s.action for s in t.steps[2:]]


def test_bash_is_available():
    assert shutil.which("bash"), "the rewrite decides command ends with `bash -n`"


# ---------------------------------------------------------------- properties

_CLEAN = [
    "ls",
    "echo hi",
    " -la",
    "\n",
    "x\n",
    "cat > f <<EOF\n",
    "EOF\n",
    "for i in 1; do\n",
    "done\n",
    "a \\\n",
]
_ODD = ["'", "\b", "\t", "exit\n", ""]
_TYPING = st.builds(
    T,
    st.lists(st.sampled_from(_CLEAN * 4 + _ODD), min_size=1, max_size=3).map("".join),
)
_OTHER_OPS = st.sampled_from(
    [
        P("enter"),
        P("backspace"),
        P("tab"),
        P("a"),
        P("space"),
        P("win"),
        P("escape"),
        H("ctrl", "alt", "t"),
        H("alt", "tab"),
        H("ctrl", "c"),
        H("enter"),
        C(),
        MouseOp(op="moveTo", x=1, y=1),
        ScrollOp(op="scroll", amount=-2),
        KeyOp(op="keyDown", keys=["shift"]),
    ]  # fmt: skip
)
_OPS = st.one_of(_TYPING, _TYPING, st.just(P("enter")), _OTHER_OPS)
_GUI_OPS = st.one_of(
    st.lists(_OPS, min_size=1, max_size=3),
    st.lists(_TYPING, min_size=1, max_size=2),
    st.just([H("ctrl", "alt", "t")]),
)
_THOUGHTS = [None, None, "Type it in the terminal.", "Open the terminal.", "Click OK.", "search for terminal"]
_STEP = st.builds(
    dict,
    ops=_GUI_OPS,
    focus=st.sampled_from([None, None, None, XTERM, XTERM, MOUSEPAD, Focus(title="Terminal")]),
    thought=st.sampled_from(_THOUGHTS),
    action=st.sampled_from(
        [None] * 12 + [CliAction(command="echo direct"), CliAction(command="exit"), Control(kind="wait")]
    ),
    metadata=st.sampled_from(
        [{}, {}, {"action": "Press Enter in the terminal."}, {"action": "Open a new terminal"}]
    ),
)


def _sources(step: Step) -> set[int]:
    return set(step.origin) if step.origin else {step.index}


def _check_invariants(t: Trajectory, out: Trajectory | Rejected) -> None:
    if isinstance(out, Rejected):
        assert out.reason in REJECT_REASONS and out.record_id == t.id
        return
    sources = [o for s in out.steps for o in s.origin]
    removed = out.metadata["removed_source_steps"]
    # nothing lost, nothing duplicated
    assert sorted(sources + removed) == sorted({o for s in t.steps for o in _sources(s)})
    # origins are ordered and disjoint
    flat = [o for s in out.steps for o in s.origin]
    assert flat == sorted(flat) and len(flat) == len(set(flat))
    assert len(out.steps) <= len(t.steps)
    assert [s.index for s in out.steps] == list(range(len(out.steps)))
    assert any(isinstance(s.action, CliAction) and "cli_rewrite" in s.metadata for s in out.steps)
    assert out.mode == ("cli" if {s.interface for s in out.steps} - {"control"} == {"cli"} else "hybrid")
    by_source = {s.index: s for s in t.steps}
    for s in out.steps:
        parts = [by_source[o] for o in s.origin]
        if len(parts) > 1 or "cli_rewrite" in s.metadata:
            assert isinstance(s.action, CliAction) and all(isinstance(p.action, GuiAction) for p in parts)
        else:  # an unchanged step
            assert (s.action, s.thought, s.focus, s.screenshot) == (
                parts[0].action,
                parts[0].thought,
                parts[0].focus,
                parts[0].screenshot,
            )
    # steps typed into a non-terminal window always survive unchanged
    for src in t.steps:
        if src.focus == MOUSEPAD and not any(isinstance(o, KeyOp) and o.op == "hotkey" for o in _ops(src)):
            assert [src.index] in [s.origin for s in out.steps]
    # idempotence: a second rewrite folds nothing further
    again = rewrite_trajectory(out, CFG)
    assert isinstance(again, Rejected) and again.reason in REJECT_REASONS, again


def _ops(step: Step) -> list:
    return step.action.ops if isinstance(step.action, GuiAction) else []


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=2, max_size=10))
def test_properties_hold_for_random_trajectories(specs):
    t = traj(*specs)
    _check_invariants(t, rewrite_trajectory(t, CFG))


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=2, max_size=14))
def test_properties_hold_for_many_long_random_trajectories(specs):
    """The invariants over 5,000 longer trajectories (~30 s): `python -m pytest -m slow`."""
    t = traj(*specs)
    _check_invariants(t, rewrite_trajectory(t, CFG))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=1, max_size=8), st.data())
def test_properties_hold_with_inherited_origins(specs, data):
    t = traj(*specs)
    # an earlier stage folded source steps: give each step a run of fresh, increasing source indices
    widths = data.draw(st.lists(st.integers(1, 3), min_size=len(t.steps), max_size=len(t.steps)))
    start = 0
    for step, width in zip(t.steps, widths, strict=True):
        step.origin = list(range(start, start + width))
        start += width
    out = rewrite_trajectory(t, CFG)
    if isinstance(out, Trajectory):
        assert sorted(
            [o for s in out.steps for o in s.origin] + out.metadata["removed_source_steps"]
        ) == list(range(start))
