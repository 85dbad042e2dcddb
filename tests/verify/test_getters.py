"""Getters read agent files through `host_path`, run commands in the (here: temp-dir) sandbox, pass rules on."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_context import FakeContext

from verify.getters import GETTERS, local_file, rule, vm_command_error, vm_command_line, vm_file


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    return FakeContext(tmp_path)


def test_vm_file_maps_agent_paths_and_reports_missing_files(ctx):
    (ctx.home / "docs").mkdir()
    (ctx.home / "docs" / "a.txt").write_text("hi")
    assert vm_file(ctx, {"path": "/home/user/docs/a.txt", "dest": "a.txt"}) == ctx.home / "docs" / "a.txt"
    assert vm_file(ctx, {"path": "/home/user/docs/missing.txt", "dest": "m"}) is None


def test_vm_file_multi_returns_the_picked_files(ctx):
    for name in ("a", "b", "c"):
        (ctx.home / name).write_text(name)
    spec = {
        "multi": True,
        "path": ["/home/user/a", "/home/user/b", "/home/user/nope"],
        "dest": ["a", "b", "n"],
    }
    assert vm_file(ctx, {**spec, "gives": [0, 2]}) == [ctx.home / "a", None]
    assert vm_file(ctx, {**spec, "gives": [1]}) == ctx.home / "b"
    assert vm_file(ctx, spec) == ctx.home / "a"  # OSWorld's default: gives = [0]


def test_vm_file_refuses_paths_outside_the_home(ctx):
    with pytest.raises(ValueError):
        vm_file(ctx, {"path": "/etc/passwd", "dest": "passwd"})


def test_vm_command_line_and_error_return_the_streams(ctx):
    spec = {"type": "vm_command_line", "command": "echo out; echo err >&2", "shell": True}
    assert vm_command_line(ctx, spec) == "out\n"
    assert vm_command_error(ctx, spec) == "err\n"
    assert vm_command_line(ctx, {"command": ["printf", "%s-%s", "a b", "c"]}) == "a b-c"


def test_rule_and_local_file(ctx, tmp_path):
    assert rule(ctx, {"type": "rule", "rules": {"include": ["x"]}}) == {"include": ["x"]}
    bundled = tmp_path / "gold.txt"
    assert local_file(ctx, {"path": str(bundled), "dest": "gold.txt"}) == Path(bundled)


def test_network_getters_are_not_registered():
    assert "cloud_file" not in GETTERS
    assert set(GETTERS) >= {"vm_file", "vm_command_line", "vm_command_error", "rule", "local_file"}
