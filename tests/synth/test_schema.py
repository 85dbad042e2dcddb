"""The canonical record: exact JSON round trips, interface classes from types, provenance, strictness."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from synth.schema import (
    CliAction,
    Control,
    Focus,
    GuiAction,
    KeyOp,
    MouseOp,
    Outcome,
    Rejected,
    Screen,
    ScrollOp,
    Source,
    Step,
    StepResult,
    ToolCall,
    Trajectory,
    TypeOp,
    config_hash,
)

coordinate = st.floats(min_value=0, max_value=1919, allow_nan=False)
ops = st.one_of(
    st.builds(
        MouseOp, op=st.sampled_from(["click", "doubleClick", "moveTo", "dragTo"]), x=coordinate, y=coordinate
    ),
    st.builds(ScrollOp, op=st.sampled_from(["scroll", "hscroll"]), amount=st.integers(-20, 20)),
    st.builds(
        KeyOp,
        op=st.sampled_from(["press", "hotkey"]),
        keys=st.lists(st.sampled_from(["ctrl", "a", "enter"]), min_size=1, max_size=3),
    ),
    st.builds(TypeOp, text=st.text(max_size=40)),
)
actions = st.one_of(
    st.builds(GuiAction, ops=st.lists(ops, min_size=1, max_size=4)),
    st.builds(CliAction, command=st.text(min_size=1, max_size=60), timeout=st.floats(0.1, 600)),
    st.builds(
        ToolCall,
        name=st.text(min_size=1, max_size=10),
        arguments=st.dictionaries(st.text(max_size=5), st.integers()),
    ),
    st.builds(
        Control, kind=st.sampled_from(["wait", "terminate", "answer"]), value=st.none() | st.text(max_size=10)
    ),
)


def _trajectory(steps) -> Trajectory:
    return Trajectory(
        id="t-1",
        source=Source(dataset="agentnet", record_id="r-1"),
        instruction="Count the files",
        screen=Screen(width=1920, height=1080),
        steps=steps,
    )


@given(st.lists(actions, max_size=6))
def test_json_round_trip_is_exact(step_actions):
    steps = [
        Step(index=i, action=a, focus=Focus(wm_class="xterm"), result=StepResult(stdout="x"), origin=[i])
        for i, a in enumerate(step_actions)
    ]
    record = _trajectory(steps)
    again = Trajectory.from_json(record.to_json())
    assert again == record
    assert again.to_json() == record.to_json()


def test_interface_comes_from_the_action_type_not_its_text():
    # a pyautogui heredoc run through bash is still a shell command to the record; GUI is only GuiAction
    assert Step(index=0, action=CliAction(command="python3 <<'PY'\nimport pyautogui\nPY")).interface == "cli"
    assert Step(index=0, action=GuiAction(ops=[TypeOp(text="ls -la\n")])).interface == "gui"
    assert Step(index=0, action=ToolCall(name="bash")).interface == "tool"
    assert Step(index=0, action=Control(kind="wait")).interface == "control"


def test_unknown_fields_and_ops_are_refused():
    with pytest.raises(ValidationError):
        Step(index=0, action=CliAction(command="ls"), screenshotz=None)
    with pytest.raises(ValidationError):
        GuiAction.model_validate({"ops": [{"op": "teleport", "x": 1, "y": 2}]})
    with pytest.raises(ValidationError):
        GuiAction(ops=[])


def test_derive_appends_provenance_and_leaves_the_parent_untouched():
    parent = _trajectory([Step(index=0, action=CliAction(command="ls"))])
    child = parent.derive(stage="rewrite_cli", version="1", params_hash="abc", id="t-1-cli", mode="cli")
    assert child.provenance[-1].parent_id == "t-1" and child.mode == "cli"
    assert parent.provenance == [] and parent.mode == "gui"
    child.steps[0].metadata["x"] = 1
    assert parent.steps[0].metadata == {}


def test_config_hash_is_stable_and_sensitive():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash(Outcome(score=1.0)) != config_hash(Outcome(score=0.5))


def test_rejected_carries_a_machine_readable_reason():
    reject = Rejected(record_id="t-1", stage="ingest", reason="corrupt_image", detail="step 2", step_index=2)
    assert Rejected.model_validate_json(reject.model_dump_json()) == reject
