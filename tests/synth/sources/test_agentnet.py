"""AgentNet / AgentNetBench reader: fixture records, the published OpenCUA example line, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sources_helpers import FIXTURES, png_bytes, split

from synth.schema import Control, GuiAction, ImageRef, Rejected, Screen, Trajectory
from synth.sources.agentnet import convert_record, read_agentnet
from synth.sources.common import AgentNetSourceConfig

AGENTNET = FIXTURES / "agentnet"


def test_fixture_records_become_absolute_pixel_trajectories(store):
    kept, rejected = split(list(read_agentnet(AGENTNET / "agentnet_sample.jsonl", store)))
    assert rejected == []
    assert [t.source.record_id for t in kept] == [
        "20240927101500_fixture-terminal-listing",
        "20240927113000_fixture-calc-scroll",
    ]
    term, calc = kept
    # screen = the first screenshot's size (160x90); x=0.0125, y=0.9 -> (2, 81) pixels
    assert term.screen == Screen(width=160, height=90)
    assert term.steps[0].action == GuiAction.model_validate({"ops": [{"op": "click", "x": 2.0, "y": 81.0}]})
    assert term.steps[1].action.ops[0].op == "write" and term.steps[1].action.ops[0].text == "ls -la"
    assert term.steps[3].action == Control(kind="terminate", value="success")
    move, scroll = calc.steps[1].action.ops
    assert (move.op, move.x, move.y) == ("moveTo", 80.0, 45.0)
    assert (scroll.op, scroll.amount) == ("scroll", -3)

    # natural-language fields survive: thought on the step, descriptions in metadata
    step = term.steps[1]
    assert step.thought == "The terminal is focused, so I can type the listing command."
    assert step.metadata["observation_description"].startswith("A terminal window with a bash prompt")
    assert step.metadata["action_description"] == "Type 'ls -la' into the terminal."
    assert step.metadata["last_step_correct"] is True and step.metadata["reflection"]
    assert calc.steps[1].metadata["last_step_correct"] is False

    # frames: next_screenshot of step i is the screenshot of step i+1, and every frame is in the store
    for traj in kept:
        for before, after in zip(traj.steps, traj.steps[1:], strict=False):
            assert before.next_screenshot == after.screenshot
        assert traj.steps[-1].next_screenshot is None
        assert all(step.screenshot in store for step in traj.steps)
    assert len({s.screenshot.sha256 for s in term.steps}) == 4

    assert term.outcome.success is True and calc.outcome.success is False
    assert term.instruction == "list the files in the home folder in a terminal"
    assert term.metadata["natural_language_task"].startswith("Could you show me")
    assert term.metadata["alignment_score"] == 9
    assert [p.stage for p in term.provenance] == ["ingest"]


def test_instruction_field_and_screen_override(store):
    cfg = AgentNetSourceConfig(
        path=str(AGENTNET / "agentnet_sample.jsonl"),
        instruction_field="natural_language_task",
        screen=Screen(width=1920, height=1080),
        limit=1,
    )
    (traj,) = read_agentnet(cfg, store)
    assert traj.instruction.startswith("Could you show me")
    assert traj.metadata["instruction"] == "list the files in the home folder in a terminal"
    assert traj.screen == Screen(width=1920, height=1080)
    op = traj.steps[0].action.ops[0]
    assert (op.x, op.y) == (24.0, 972.0)


def test_agentnetbench_file_links_frames_only_across_consecutive_steps(store):
    (traj,) = read_agentnet(AGENTNET / "bench", store)
    assert traj.instruction == "Search for 'george orwell' in the browser and open the first result."
    assert traj.metadata["user_task_description"].startswith("Please search the web")
    assert [s.metadata["source_index"] for s in traj.steps] == [2, 3, 5]
    assert traj.steps[0].next_screenshot == traj.steps[1].screenshot
    assert traj.steps[1].next_screenshot is None  # step_num 3 -> 5: the frame after 3 is not in the file
    assert traj.steps[2].metadata["milestone"] is True
    assert traj.steps[0].metadata["action_description"] == "Click the search box in the middle of the page."
    assert traj.steps[1].thought == "Now I type the query."
    op = traj.steps[0].action.ops[0]
    assert op.x == pytest.approx(0.3271 * 160) and op.y == pytest.approx(0.2694 * 90)


def test_published_opencua_example_line(store):
    """The verbatim raw_example.jsonl of xlang-ai/OpenCUA (frames replaced by same-size placeholders)."""
    (traj,) = read_agentnet(
        FIXTURES / "opencua_raw" / "raw_example.jsonl",
        store,
        AgentNetSourceConfig(path="unused", image_dir=str(FIXTURES / "opencua_raw" / "images")),
    )
    assert traj.source.record_id == "task_example_0"
    assert traj.screen == Screen(width=1276, height=718)
    assert len(traj.steps) == 15
    move, drag = traj.steps[3].action.ops
    assert (move.op, drag.op, drag.button) == ("moveTo", "dragTo", "left")
    assert move.x == pytest.approx(0.4546 * 1276) and drag.y == pytest.approx(0.2773 * 718)
    assert traj.steps[1].action.ops[0].op == "rightClick"
    assert traj.steps[-1].action == Control(kind="terminate", value="success")
    assert traj.outcome is None  # the raw (pre-CoT) shape has no task_completed


def _good_step(image: str, code: str = "pyautogui.click(x=0.5, y=0.5)") -> dict:
    return {"index": 0, "image": image, "value": {"code": code, "thought": "t", "observation": "o"}}


def test_bad_records_each_end_as_one_reject_with_the_right_reason(tmp_path: Path, store):
    images = tmp_path / "images"
    images.mkdir()
    (images / "ok.png").write_bytes(png_bytes())
    (images / "ok2.png").write_bytes(png_bytes(shade=80))
    (images / "big.png").write_bytes(png_bytes(size=(320, 180)))
    (images / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really a png")

    def record(task_id: str, *steps: dict, **extra) -> str:
        return json.dumps({"task_id": task_id, "instruction": "do it", "traj": list(steps), **extra})

    lines = [
        record("good", _good_step("ok.png"), _good_step("ok2.png", "computer.terminate(status='success')")),
        record("corrupt", _good_step("ok.png"), _good_step("corrupt.png")),
        record("missing", _good_step("ok.png"), _good_step("nowhere.png")),
        record("frobnicate", _good_step("ok.png", "pyautogui.frobnicate(1)")),
        record("out_of_range", _good_step("ok.png"), _good_step("ok2.png", "pyautogui.click(x=1.7, y=0.5)")),
        '{"task_id": "broken", "traj": [',
        record("empty"),
        record("sizes", _good_step("ok.png"), _good_step("big.png")),
        json.dumps(["not", "an", "object"]),
        json.dumps({"instruction": "no id", "traj": [_good_step("ok.png")]}),
        record("no_code", {"index": 0, "image": "ok.png", "value": {"thought": "t"}}),
        "",  # blank lines are not records
    ]
    data = tmp_path / "bad.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")

    results = list(read_agentnet(data, store))
    kept, rejected = split(results)
    assert len(results) == 11, "every non-blank line must end as exactly one Trajectory or Rejected"
    assert [t.source.record_id for t in kept] == ["good"]
    by_id = {r.record_id: r for r in rejected}
    expected = {
        "corrupt": ("corrupt_image", 1),
        "missing": ("missing_image", 1),
        "frobnicate": ("unparsable_action", 0),
        "out_of_range": ("coordinate_out_of_range", 1),
        "bad.jsonl:6": ("malformed_record", None),
        "empty": ("empty_trajectory", None),
        "sizes": ("inconsistent_screen_size", 1),
        "bad.jsonl:9": ("malformed_record", None),
        "bad.jsonl:10": ("malformed_record", None),
        "no_code": ("unparsable_action", 0),
    }
    assert {k: (r.reason, r.step_index) for k, r in by_id.items()} == expected
    assert all(r.stage == "ingest" for r in rejected)
    # details name the line and, for step problems, the step
    assert (
        by_id["missing"].detail.startswith("bad.jsonl:3: step 1:")
        and "nowhere.png" in by_id["missing"].detail
    )
    assert "x=1.7" in by_id["out_of_range"].detail
    assert "frobnicate" in by_id["frobnicate"].detail


def test_default_image_folder_is_images_next_to_the_file(tmp_path: Path, store):
    shutil.copytree(AGENTNET, tmp_path / "agentnet")
    kept, rejected = split(list(read_agentnet(tmp_path / "agentnet" / "agentnet_sample.jsonl", store)))
    assert len(kept) == 2 and not rejected
    shutil.rmtree(tmp_path / "agentnet" / "images")
    kept, rejected = split(list(read_agentnet(tmp_path / "agentnet" / "agentnet_sample.jsonl", store)))
    assert not kept and {r.reason for r in rejected} == {"missing_image"}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
_step = st.fixed_dictionaries(
    {
        "index": _json | st.integers(0, 5),
        "image": _json,
        "value": _json
        | st.dictionaries(st.sampled_from(["code", "thought", "observation", "action"]), _json),
    }
)
_record = st.dictionaries(
    st.sampled_from(["task_id", "instruction", "traj", "steps", "task_completed"]),
    _json | st.lists(_step, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(raw=_json | _record)
def test_any_json_value_becomes_exactly_one_result(raw):
    ref = ImageRef(sha256="0" * 64, width=100, height=50)
    result = convert_record(
        raw, where="f.jsonl:1", cfg=AgentNetSourceConfig(path="x"), load_image=lambda image, i: ref
    )
    assert isinstance(result, Trajectory | Rejected)
    if isinstance(result, Rejected):
        assert result.stage == "ingest" and result.reason and result.detail.startswith("f.jsonl:1")
