"""The bundled suite on a real desktop: each verifier fails after reset and passes after the demonstration.

Needs `verify.env.local.LocalDesktop` and the apt packages from install.sh. Every task, with its GUI and its
CLI demonstration, runs by default (~85 s on 2 cores, one desktop):

    python -m pytest tests/verify/test_task_suite_desktop.py -q
"""

from __future__ import annotations

import pytest

from verify.tasks import SUITE_DIR, TaskSpec, demo_actions, load_suite

SUITE, _ = load_suite(SUITE_DIR)
CASES = [(t, mode) for t in SUITE for mode in ("gui", "cli") if getattr(t.switchyard.demonstrations, mode)]


@pytest.fixture(scope="module")
def desktop():
    local = pytest.importorskip("verify.env.local")
    env = local.LocalDesktop()
    yield env
    env.close()


def _solve(env, task: TaskSpec, mode: str) -> None:
    env.reset(task)
    assert env.evaluate() == 0.0, "the verifier must fail on the initial state"
    for action in demo_actions(task, mode):
        _, result = env.step(action)
        assert result.status == "ok", f"{action}: {result}"
    assert env.evaluate() == 1.0


@pytest.mark.desktop
@pytest.mark.parametrize(("task", "mode"), CASES, ids=[f"{t.id}-{m}" for t, m in CASES])
def test_demonstration_solves_task(desktop, task, mode):
    _solve(desktop, task, mode)
