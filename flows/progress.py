"""Live progress bars for stage record streams: shown by the `switchyard` CLI, silent elsewhere.

Stages are lazy iterators consumed by `RunDir.write_stage`; wrapping one in `track` counts its results as
they are written. Outside `live()` (a Prefect worker, a test) `track` passes records through untouched.
Tasks run in threads of one process, so one module-level `Progress` serves them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

T = TypeVar("T")
_progress: Progress | None = None


@contextmanager
def live(console: Console) -> Iterator[None]:
    """Show a progress bar per tracked stage while the block runs."""
    global _progress
    columns = (SpinnerColumn(), TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=console) as progress:
        _progress = progress
        try:
            yield
        finally:
            _progress = None


def track(records: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Yield `records`, advancing a bar named `description` (total None: a running count)."""
    progress = _progress
    if progress is None:
        yield from records
        return
    bar = progress.add_task(description, total=total)
    for record in records:
        yield record
        progress.advance(bar)
    progress.update(bar, total=progress.tasks[bar].completed)
