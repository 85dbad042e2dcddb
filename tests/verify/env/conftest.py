"""Shared fixtures for the environment tests: tests marked `desktop` in this directory are skipped cleanly
where root or the desktop packages (scripts/install-desktop.sh) are missing, and each module shares one
desktop (starting one costs ~0.4 s, a reset ~0.2 s)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

NEEDS = ["Xvfb", "openbox", "xterm", "xdotool", "bwrap", "xhost", "prlimit", "setpriv"]
_missing = [tool for tool in NEEDS if shutil.which(tool) is None]
_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    if not _missing and os.geteuid() == 0:
        return
    skip = pytest.mark.skip(
        reason=f"needs root and scripts/install-desktop.sh (missing: {_missing or 'none'})"
    )
    for item in items:
        if item.get_closest_marker("desktop") and _HERE in Path(item.fspath).parents:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def desktop():
    from verify.env.local import LocalDesktop

    env = LocalDesktop()
    try:
        yield env
    finally:
        env.close()
