"""OSWorld result-folder reader: fixture runs (old and new line shapes) and bad runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sources_helpers import FIXTURES, split

from synth.schema import Control, Screen
from synth.sources.common import OSWorldSourceConfig
from synth.sources.osworld import read_osworld

OSWORLD = FIXTURES / "osworld"
RUNS = OSWORLD / "results" / "pyautogui" / "screenshot" / "fixture-model" / "os"
RUN_OLD = RUNS / "5812b315-e7bd-4265-b51f-863c02174c28"
RUN_NEW = RUNS / "c1f0a7e2-4b0f-4f65-9a55-2d8b9f0e6a11"


def _cfg(path: Path, **kw) -> OSWorldSourceConfig:
    return OSWorldSourceConfig(path=str(path), examples_dir=str(OSWORLD / "examples"), **kw)


def test_fixture_runs(store):
    kept, rejected = split(list(read_osworld(_cfg(OSWORLD / "results"), store)))
    assert rejected == []
    old, new = kept
    assert (
        old.source.record_id == "pyautogui/screenshot/fixture-model/os/5812b315-e7bd-4265-b51f-863c02174c28"
    )
    assert old.task_id == "5812b315-e7bd-4265-b51f-863c02174c28"
    assert old.instruction == "Create a folder named 'projects' in my home directory."  # from examples/
    assert old.metadata["task_related_apps"] == ["os", "terminal"] and old.metadata["domain"] == "os"
    assert old.screen == Screen(width=1920, height=1080)
    assert old.outcome.score == 1.0 and old.outcome.success is True and old.outcome.verifier == "osworld"

    # step_N png is the screen AFTER action N: step i sees the previous frame; the original runner saves no
    # initial frame
    assert old.steps[0].screenshot is None
    for before, after in zip(old.steps, old.steps[1:], strict=False):
        assert before.next_screenshot == after.screenshot is not None
    assert old.steps[0].action.ops[0].keys == ["ctrl", "alt", "t"]
    write, enter = old.steps[1].action.ops
    assert (write.text, write.interval, enter.keys) == ("mkdir -p ~/projects && ls ~", 0.05, ["enter"])
    assert old.steps[2].action == Control(kind="terminate", value="success")
    assert all(s.next_screenshot in store for s in old.steps)

    # newer runner: step_0.png, `response` per model call (shared by the two actions of step_num 1)
    assert new.instruction == "Turn on the dark theme in the system settings."  # instruction.txt
    assert new.steps[0].screenshot is not None and new.steps[0].screenshot in store
    assert [s.metadata["step_num"] for s in new.steps] == [1, 1, 2, 3]
    assert new.steps[0].thought.startswith("The desktop is empty")
    assert new.steps[1].thought is None
    assert new.steps[2].thought.startswith("The Home folder is open")
    click = new.steps[0].action.ops[0]
    assert (click.op, click.x, click.y) == ("click", 34.0, 1040.0)
    assert new.steps[2].action == Control(kind="wait")
    assert new.steps[3].action == Control(kind="terminate", value="failure")
    assert new.outcome.score == 0.0 and new.outcome.success is False


def test_single_run_folder_and_instruction_sources(tmp_path: Path, store):
    # without examples_dir the old run has no instruction: it is rejected, not dropped
    kept, rejected = split(list(read_osworld(OSWORLD / "results", store)))
    assert [t.task_id for t in kept] == ["c1f0a7e2-4b0f-4f65-9a55-2d8b9f0e6a11"]
    assert [(r.reason, r.record_id.rsplit("/", 1)[-1]) for r in rejected] == [
        ("missing_instruction", "5812b315-e7bd-4265-b51f-863c02174c28")
    ]
    # the instruction can also come from the run's runtime.log
    run = tmp_path / "os" / RUN_OLD.name
    shutil.copytree(RUN_OLD, run)
    (run / "runtime.log").write_text("INFO something\nINFO [Instruction]: Make a projects folder.\n")
    (traj,) = read_osworld(run, store)
    assert traj.instruction == "Make a projects folder."
    assert traj.source.record_id == f"os/{RUN_OLD.name}"


def _clone(root: Path, name: str, source: Path = RUN_NEW) -> Path:
    run = root / "os" / name
    shutil.copytree(source, run)
    return run


def _rewrite_lines(run: Path, edit) -> None:
    lines = [json.loads(line) for line in (run / "traj.jsonl").read_text().splitlines()]
    edit(lines)
    (run / "traj.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_bad_runs_each_end_as_one_reject_with_the_right_reason(tmp_path: Path, store):
    root = tmp_path / "results"
    _clone(root, "a-good")
    run = _clone(root, "b-corrupt-png")
    (run / "step_2_20240406@090010.png").write_bytes(b"\x89PNG\r\n\x1a\ngarbage")
    run = _clone(root, "c-missing-png")
    (run / "step_1_20240406@090004.png").unlink()
    run = _clone(root, "d-frobnicate")
    _rewrite_lines(run, lambda lines: lines[1].update(action="pyautogui.frobnicate(1)"))
    run = _clone(root, "e-out-of-range")
    _rewrite_lines(run, lambda lines: lines[0].update(action="pyautogui.click(5000, 10)"))
    run = _clone(root, "f-broken-json")
    with (run / "traj.jsonl").open("a") as handle:
        handle.write('{"step_num": 4, "action": \n')
    run = _clone(root, "g-empty")
    (run / "traj.jsonl").write_text("")
    run = _clone(root, "h-error-line")
    with (run / "traj.jsonl").open("a") as handle:
        handle.write(json.dumps({"Error": "Time limit exceeded in os/h-error-line"}) + "\n")
    run = _clone(root, "i-bad-result")
    (run / "result.txt").write_text("Traceback (most recent call last):\n")
    run = _clone(root, "j-dict-action")
    _rewrite_lines(run, lambda lines: lines[0].update(action={"action_type": "CLICK", "parameters": {}}))
    run = _clone(root, "k-no-result")
    (run / "result.txt").unlink()

    results = list(read_osworld(root, store))
    kept, rejected = split(results)
    assert len(results) == 11
    assert sorted(t.source.record_id for t in kept) == ["os/a-good", "os/k-no-result"]
    assert next(t for t in kept if t.source.record_id == "os/k-no-result").outcome is None
    got = {r.record_id: (r.reason, r.step_index) for r in rejected}
    assert got == {
        "os/b-corrupt-png": ("corrupt_image", 2),
        "os/c-missing-png": ("missing_image", 1),
        "os/d-frobnicate": ("unparsable_action", 1),
        "os/e-out-of-range": ("coordinate_out_of_range", 0),
        "os/f-broken-json": ("malformed_record", None),
        "os/g-empty": ("empty_trajectory", None),
        "os/h-error-line": ("run_error", None),
        "os/i-bad-result": ("malformed_record", None),
        "os/j-dict-action": ("unparsable_action", 0),
    }
    details = {r.record_id: r.detail for r in rejected}
    assert "line 5" in details["os/f-broken-json"]
    assert "step_1_20240406@090004.png" in details["os/c-missing-png"]


def test_screenshot_file_fallback_to_step_n_png(tmp_path: Path, store):
    # OSWorld's OpenCUA runner saves step_<n>.png but logs step_<n>_<timestamp>.png
    run = _clone(tmp_path, RUN_OLD.name, RUN_OLD)
    (run / "step_2_20240405@101509.png").rename(run / "step_2.png")
    (traj,) = read_osworld(_cfg(run), store)
    assert traj.steps[1].metadata["screenshot_fallback"] is True
    assert traj.steps[1].next_screenshot in store
    assert "screenshot_fallback" not in traj.steps[0].metadata
