"""`EnvPool`: N embedded desktops side by side (own display, home, tmp, cookie each), leased to one user at a
time. Thread-safe, so a Prefect ThreadPoolTaskRunner (or any thread pool) can share one pool:

    pool = EnvPool(3)
    with pool.acquire() as env:          # health-checked; a broken desktop is replaced first
        obs = env.reset(task)
        ...
    pool.close()

CPU, not memory, limits the size: beyond ~3 desktops on 2 cores actions slow down (notes/desktop.md).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from verify.env.base import EnvError
from verify.env.local import LocalDesktop, LocalDesktopConfig


class EnvPool:
    """A fixed number of `LocalDesktop`s. `factory` builds one desktop (default: `LocalDesktop(config)`)."""

    def __init__(
        self,
        size: int,
        config: LocalDesktopConfig | None = None,
        *,
        factory: Callable[[], LocalDesktop] | None = None,
    ):
        if size < 1:
            raise ValueError("pool size must be at least 1")
        self.size = size
        self.config = config or LocalDesktopConfig()
        self._factory = factory or (lambda: LocalDesktop(self.config))
        self._idle: queue.Queue[LocalDesktop] = queue.Queue()
        self._all: set[LocalDesktop] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.replaced = 0  # desktops found broken at acquire() and rebuilt
        try:
            # start them concurrently: each start is mostly waiting on Xvfb and openbox
            with ThreadPoolExecutor(max_workers=size) as ex:
                for env in ex.map(lambda _: self._new(), range(size)):
                    self._idle.put(env)
        except BaseException:
            self.close()
            raise

    def _new(self) -> LocalDesktop:
        env = self._factory()
        with self._lock:
            if self._closed:
                env.close()
                raise EnvError("pool is closed")
            self._all.add(env)
        return env

    def _discard(self, env: LocalDesktop) -> None:
        with self._lock:
            self._all.discard(env)
        env.close()

    def checkout(self, timeout: float | None = None) -> LocalDesktop:
        """Take an idle, healthy desktop (waiting up to `timeout`); replaces a broken one transparently."""
        if self._closed:
            raise EnvError("pool is closed")
        try:
            env = self._idle.get(timeout=timeout)
        except queue.Empty:
            raise EnvError(f"no desktop became free within {timeout} s") from None
        if env.healthy():
            return env
        self._discard(env)
        self.replaced += 1
        try:
            return self._new()
        except BaseException:
            # keep the pool at full size for the next caller
            threading.Thread(target=self._refill, daemon=True).start()
            raise

    def _refill(self) -> None:
        with contextlib.suppress(Exception):
            self._idle.put(self._new())

    def release(self, env: LocalDesktop) -> None:
        """Return a desktop to the pool (it is reset by its next user)."""
        if self._closed:
            self._discard(env)
        else:
            self._idle.put(env)

    @contextlib.contextmanager
    def acquire(self, timeout: float | None = None) -> Iterator[LocalDesktop]:
        env = self.checkout(timeout)
        try:
            yield env
        finally:
            self.release(env)

    def close(self) -> None:
        """Close every desktop, leased or idle."""
        with self._lock:
            self._closed = True
            envs = list(self._all)
            self._all.clear()
        for env in envs:
            with contextlib.suppress(Exception):
                env.close()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
