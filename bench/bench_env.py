"""Benchmark the embedded desktop: reset, GUI step, CLI step and screenshot latency, and pool throughput.

    python bench/bench_env.py            # ~1 min on 2 cores; needs root and scripts/install-desktop.sh
    python bench/bench_env.py --quick    # fewer repetitions

Every number is a real measurement on this machine (median and p90 over the repetitions). A GUI step is one
key typed into xterm plus the wait until the screen settles (120 ms quiet), which dominates its latency.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synth.schema import CliAction, GuiAction, KeyOp, TypeOp  # noqa: E402
from verify.env.local import LocalDesktop, LocalDesktopConfig  # noqa: E402
from verify.env.pool import EnvPool  # noqa: E402


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    return f"median {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms   (n={len(ms)})"


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def gui_step(env: LocalDesktop, i: int) -> None:
    # alternate typing and erasing so the command line never grows
    op = TypeOp(text="x") if i % 2 == 0 else KeyOp(op="press", keys=["backspace"])
    _, result = env.step(GuiAction(ops=[op]))
    assert result.status == "ok", result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    n = 5 if args.quick else 20

    start = time.perf_counter()
    env = LocalDesktop()
    print(f"first desktop up (incl. home template build): {1000 * (time.perf_counter() - start):.0f} ms")
    try:
        print(f"reset, plain desktop          {stats(timed(env.reset, n))}")

        def reset_with_terminal() -> None:
            env.reset()
            env.open_terminal()

        print(f"reset + open xterm            {stats(timed(reset_with_terminal, n))}")
        counter = iter(range(10**9))
        print(f"GUI step (key + settle)       {stats(timed(lambda: gui_step(env, next(counter)), 2 * n))}")
        cli = CliAction(command="echo hi")
        print(f"CLI step (settle after)       {stats(timed(lambda: env.step(cli), 2 * n))}")
        env.config.settle_after_cli = False
        print(f"CLI step (no settle)          {stats(timed(lambda: env.step(cli), 2 * n))}")
        print(f"sandbox run only (echo)       {stats(timed(lambda: env.run_shell('echo hi'), 2 * n))}")
        print(f"screenshot raw                {stats(timed(env.raw_screenshot, 5 * n))}")
        print(f"screenshot PNG (level {env.config.display.png_compress_level})     "
              f"{stats(timed(env.screenshot, 2 * n))}")  # fmt: skip
    finally:
        env.close()

    steps_per_desktop = 10 if args.quick else 30
    for size in (1, 2, 3):
        with EnvPool(size, LocalDesktopConfig()) as pool:

            def worker(_: int) -> int:
                with pool.acquire() as desk:
                    desk.reset()
                    desk.open_terminal()
                    for i in range(steps_per_desktop):
                        if i % 3 == 2:
                            desk.step(CliAction(command="ls ~ > /dev/null"))
                        else:
                            gui_step(desk, i)
                return steps_per_desktop

            start = time.perf_counter()
            with ThreadPoolExecutor(size) as ex:
                total = sum(ex.map(worker, range(size)))
            elapsed = time.perf_counter() - start
            print(
                f"pool of {size}: {total} steps (2/3 GUI, 1/3 CLI) in {elapsed:5.2f} s -> {total / elapsed:5.2f} steps/s"
            )


if __name__ == "__main__":
    main()
