"""Helpers shared by the source-reader tests: fixture paths, PNG bytes, splitting results."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from PIL import Image

from synth.schema import Rejected, Trajectory

FIXTURES = Path(__file__).parent / "fixtures"


def png_bytes(size: tuple[int, int] = (160, 90), shade: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", size, shade).save(buffer, "PNG")
    return buffer.getvalue()


def split(results: list[Trajectory | Rejected]) -> tuple[list[Trajectory], list[Rejected]]:
    kept = [r for r in results if isinstance(r, Trajectory)]
    rejected = [r for r in results if isinstance(r, Rejected)]
    assert len(kept) + len(rejected) == len(results), "a reader yielded something that is neither"
    return kept, rejected


def reasons(rejected: list[Rejected]) -> Counter[str]:
    return Counter(r.reason for r in rejected)
