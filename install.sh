#!/usr/bin/env bash
# Installs switchyard with its test tools, and the real desktop it replays in (Xvfb, openbox, xterm, LibreOffice,
# bubblewrap; Debian/Ubuntu packages). Run as root or with sudo. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/install-desktop.sh
python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
