"""Task specs: the bundled suite loads, unknown names fail at load time, setup and evaluation semantics.

`test_cli_demonstrations_solve_their_tasks` replays every CLI demonstration against a temp-dir home
(no desktop): the verifier must fail on the initial state and pass after the demonstration.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fake_context import FakeContext

from verify.tasks import (
    SUITE_DIR,
    CliStep,
    SetupError,
    UnsupportedTask,
    evaluate,
    load_suite,
    load_task,
    run_setup,
)

FIXTURES = Path(__file__).parent / "fixtures"
SUITE, REJECTED = load_suite(SUITE_DIR)


def _write_task(tmp_path: Path, spec: dict, domain: str = "os") -> Path:
    path = tmp_path / "suite" / domain / f"{spec['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "suite" / "files").mkdir(exist_ok=True)
    path.write_text(json.dumps(spec))
    return path


def _spec(**evaluator_and_config) -> dict:
    config = evaluator_and_config.pop("config", [])
    evaluator = {
        "func": "check_include_exclude",
        "result": {"type": "vm_command_line", "command": "cat ~/a.txt"},
        "expected": {"type": "rule", "rules": {"include": ["yes"], "exclude": []}},
    }
    evaluator.update(evaluator_and_config)
    return {"id": "t1", "instruction": "do it", "config": config, "evaluator": evaluator}


# ---------------------------------------------------------------- the bundled suite


def test_whole_suite_loads():
    assert REJECTED == []
    assert len(SUITE) >= 40
    counts = Counter(t.domain for t in SUITE)
    assert counts["os"] >= 10 and counts["terminal"] >= 8 and counts["calc"] >= 8
    assert counts["writer"] >= 6 and counts["impress"] >= 4 and counts["multi_apps"] >= 4


def test_every_task_has_a_gui_demonstration_and_the_terminal_ones_type_commands():
    typing_into_terminal = 0
    heredocs = 0
    for task in SUITE:
        assert task.switchyard is not None and task.switchyard.demonstrations.gui, task.id
        launches_terminal = any(
            s.type == "launch" and "xterm" in s.parameters["command"] for s in task.config
        )
        writes = [
            s for s in task.switchyard.demonstrations.gui if isinstance(s, str) and "pyautogui.write(" in s
        ]
        if launches_terminal and writes:
            typing_into_terminal += 1
        if any("<<'EOF'" in s for s in writes):
            heredocs += 1
    assert typing_into_terminal >= 12
    assert heredocs >= 2


def test_both_interfaces_are_favoured_somewhere():
    favours = Counter(t.switchyard.favours for t in SUITE)
    assert favours["cli"] >= 10 and favours["gui"] >= 10


def test_shell_commands_use_the_home_not_a_literal_path():
    # Tasks run wherever the agent home is mounted: commands say ~, getters' file paths say /home/user.
    for task in SUITE:
        for step in task.config:
            if step.type == "execute":
                assert "/home/user" not in step.parameters["command"], task.id
        for step in task.switchyard.demonstrations.cli:
            assert "/home/user" not in step.cli, task.id


# ---------------------------------------------------------------- load-time rejection


def test_real_osworld_shape_is_parsed_and_download_is_rejected():
    with pytest.raises(UnsupportedTask) as err:
        load_task(FIXTURES / "osworld_os_task.json")
    assert err.value.name == "download" and err.value.reason == "needs_network"


@pytest.mark.parametrize(
    ("change", "name", "reason"),
    [
        ({"config": [{"type": "make_coffee", "parameters": {}}]}, "make_coffee", "unknown_setup_step"),
        ({"func": "no_such_metric"}, "no_such_metric", "unknown_metric"),
        ({"result": {"type": "vm_telepathy"}}, "vm_telepathy", "unknown_getter"),
        (
            {"expected": {"type": "cloud_file", "path": "https://x", "dest": "x"}},
            "cloud_file",
            "needs_network",
        ),
        ({"options": {"colour": "red"}}, "check_include_exclude", "bad_options"),
        ({"config": [{"type": "sleep", "parameters": {"seconds": 60}}]}, "sleep", "sleep_too_long"),
        ({"config": [{"type": "execute", "parameters": {"cmd": "ls"}}]}, "execute", "bad_parameters"),
        (
            {
                "config": [
                    {
                        "type": "upload_file",
                        "parameters": {"files": [{"local_path": "nope.xlsx", "path": "x"}]},
                    }
                ]
            },
            "nope.xlsx",
            "missing_file",
        ),
        (
            {"expected": {"type": "local_file", "path": "gone.txt", "dest": "gone.txt"}},
            "gone.txt",
            "missing_file",
        ),
        ({"postconfig": [{"type": "teleport", "parameters": {}}]}, "teleport", "unknown_setup_step"),
    ],
)
def test_unknown_or_unsupported_names_fail_at_load(tmp_path, change, name, reason):
    path = _write_task(tmp_path, _spec(**change))
    with pytest.raises(UnsupportedTask) as err:
        load_task(path)
    assert err.value.name == name and err.value.reason == reason
    assert name in str(err.value)


def test_load_suite_reports_rejects_with_reasons_and_keeps_the_rest(tmp_path):
    _write_task(tmp_path, _spec())
    bad = _spec(func="no_such_metric")
    bad["id"] = "t2"
    bad_path = _write_task(tmp_path, bad)
    dup_path = _write_task(tmp_path, _spec(), domain="other")
    tasks, rejected = load_suite(tmp_path / "suite")
    assert [t.id for t in tasks] == ["t1"]
    reasons = dict(rejected)
    assert "no_such_metric" in reasons[bad_path]
    assert "duplicate_id" in reasons[dup_path]


def test_extra_osworld_fields_are_tolerated(tmp_path):
    spec = _spec()
    spec["possibility_of_env_change"] = "low"
    spec["evaluator"]["something_new"] = 1
    assert load_task(_write_task(tmp_path, spec)).id == "t1"


# ---------------------------------------------------------------- setup and evaluation


def _load(tmp_path, spec) -> tuple:
    home = tmp_path / "home"
    home.mkdir()
    return load_task(_write_task(tmp_path, spec)), FakeContext(home)


def test_setup_steps_run_in_order(tmp_path):
    (tmp_path / "suite" / "files").mkdir(parents=True)
    (tmp_path / "suite" / "files" / "seed.txt").write_text("seeded\n")
    spec = _spec(
        config=[
            {
                "type": "execute",
                "parameters": {"command": "mkdir -p ~/d && echo one > ~/d/a.txt", "shell": True},
            },
            {"type": "command", "parameters": {"command": ["bash", "-c", "echo two >> ~/d/a.txt"]}},
            {
                "type": "create_file",
                "parameters": {"path": "~/d/new/b.sh", "content": "echo hi\n", "mode": "755"},
            },
            {
                "type": "upload_file",
                "parameters": {"files": [{"local_path": "seed.txt", "path": "/home/user/s.txt"}]},
            },
            {"type": "open", "parameters": {"path": "/home/user/s.txt"}},
            {"type": "launch", "parameters": {"command": "xterm -T Terminal"}},
            {"type": "sleep", "parameters": {"seconds": 0.01}},
        ]
    )
    task, ctx = _load(tmp_path, spec)
    run_setup(task, ctx)
    assert (ctx.home / "d" / "a.txt").read_text() == "one\ntwo\n"
    assert (ctx.home / "d" / "new" / "b.sh").stat().st_mode & 0o777 == 0o755
    assert (ctx.home / "s.txt").read_text() == "seeded\n"
    assert ctx.launched == [["mousepad", "/home/user/s.txt"], ["xterm", "-T", "Terminal"]]
    assert ctx.windows_waited == ["s.txt"]


def test_open_picks_the_office_app_by_extension(tmp_path):
    spec = _spec(config=[{"type": "open", "parameters": {"path": "/home/user/Documents/b.xlsx"}}])
    task, ctx = _load(tmp_path, spec)
    run_setup(task, ctx)
    assert (
        ctx.launched[0][:2] == ["soffice", "--calc"] and ctx.launched[0][-1] == "/home/user/Documents/b.xlsx"
    )
    assert ctx.windows_waited == ["b.xlsx"]


def test_a_failing_setup_command_is_an_infra_error(tmp_path):
    task, ctx = _load(tmp_path, _spec(config=[{"type": "execute", "parameters": {"command": "false"}}]))
    with pytest.raises(SetupError):
        run_setup(task, ctx)


def _two_checks(conj: str) -> dict:
    return _spec(
        func=["check_include_exclude", "check_include_exclude"],
        conj=conj,
        result=[
            {"type": "vm_command_line", "command": "cat ~/a.txt"},
            {"type": "vm_command_line", "command": "cat ~/b.txt"},
        ],
        expected=[
            {"type": "rule", "rules": {"include": ["yes"]}},
            {"type": "rule", "rules": {"include": ["yes"]}},
        ],
    )


@pytest.mark.parametrize(
    ("conj", "a", "b", "score"),
    [
        ("and", "yes", "yes", 1.0),
        ("and", "yes", "no", 0.0),
        ("or", "no", "yes", 1.0),
        ("or", "no", "no", 0.0),
    ],
)
def test_evaluate_combines_metrics_with_conj(tmp_path, conj, a, b, score):
    task, ctx = _load(tmp_path, _two_checks(conj))
    (ctx.home / "a.txt").write_text(a)
    (ctx.home / "b.txt").write_text(b)
    assert evaluate(task, ctx) == score


def test_postconfig_runs_before_the_getters(tmp_path):
    spec = _spec(postconfig=[{"type": "execute", "parameters": {"command": "echo yes > ~/a.txt"}}])
    task, ctx = _load(tmp_path, spec)
    assert evaluate(task, ctx) == 1.0


def test_evaluate_is_zero_when_the_result_file_is_missing(tmp_path):
    spec = _spec(
        func="compare_text_file", expected={"type": "vm_file", "path": "/home/user/b.txt", "dest": "b"}
    )
    spec["evaluator"]["result"] = {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a"}
    task, ctx = _load(tmp_path, spec)
    (ctx.home / "b.txt").write_text("x\n")
    assert evaluate(task, ctx) == 0.0
    (ctx.home / "a.txt").write_text("x\n")
    assert evaluate(task, ctx) == 1.0


# ---------------------------------------------------------------- the suite's CLI demonstrations, without a desktop

CLI_TASKS = [t for t in SUITE if t.switchyard.demonstrations.cli]


def test_most_cli_favoured_tasks_have_a_cli_demonstration():
    assert len(CLI_TASKS) >= 20


@pytest.mark.parametrize("task", CLI_TASKS, ids=[t.id for t in CLI_TASKS])
def test_cli_demonstrations_solve_their_tasks(tmp_path, task):
    ctx = FakeContext(tmp_path)
    run_setup(task, ctx)
    assert evaluate(task, ctx) == 0.0, "the verifier must fail on the initial state"
    for step in task.switchyard.demonstrations.cli:
        if isinstance(step, CliStep):
            result = ctx.run_shell(step.cli, timeout=step.timeout)
            assert result.returncode == 0, result.stderr
    assert evaluate(task, ctx) == 1.0


def test_gui_demonstrations_parse_into_actions():
    actions = pytest.importorskip("synth.actions")
    from verify.tasks import demo_actions

    assert actions is not None
    for task in SUITE:
        parsed = demo_actions(task, "gui")
        assert parsed and all(a.type in ("gui", "control") for a in parsed), task.id


@pytest.mark.parametrize("task", SUITE, ids=[t.id for t in SUITE])
def test_every_verifier_fails_on_the_initial_state(tmp_path, task):
    ctx = FakeContext(tmp_path)
    run_setup(task, ctx)
    assert evaluate(task, ctx) == 0.0
