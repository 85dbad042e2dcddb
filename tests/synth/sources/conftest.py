"""Fixtures for the source-reader tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from synth.images import ImageStore


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return ImageStore(tmp_path / "store")
