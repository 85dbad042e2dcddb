"""Several desktops side by side, shared by threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from synth.schema import CliAction
from verify.env.pool import EnvPool

pytestmark = pytest.mark.desktop


def test_pool_of_two_serves_threads_with_separate_desktops():
    with EnvPool(2) as pool:

        def episode(i: int) -> tuple[str, str, str]:
            with pool.acquire(timeout=60) as env:
                env.reset()
                _, result = env.step(CliAction(command=f"echo {i} > ~/mine.txt; ls ~; echo $DISPLAY"))
                assert result.status == "ok"
                return env.display_name, str(env.home), env.host_path("/home/user/mine.txt").read_text()

        with ThreadPoolExecutor(4) as ex:
            runs = list(ex.map(episode, range(6)))
        assert {text for _, _, text in runs} == {f"{i}\n" for i in range(6)}
        assert len({display for display, _, _ in runs}) == 2
        assert len({home for _, home, _ in runs}) == 2


def test_broken_desktop_is_replaced_on_acquire():
    with EnvPool(1) as pool:
        with pool.acquire() as env:
            first = env
            env.display._xvfb.kill()
            env.display._xvfb.wait()
        with pool.acquire() as env:
            assert env is not first and env.healthy()
            assert env.reset().screenshot_png
        assert pool.replaced == 1
