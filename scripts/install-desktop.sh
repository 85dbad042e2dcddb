#!/usr/bin/env bash
# Install the system packages the embedded desktop (verify/env/local.py) needs on Debian/Ubuntu.
# Run as root. --no-install-recommends keeps LibreOffice at ~350 MB instead of ~800 MB.
#   xvfb openbox xterm xdotool x11-utils x11-xserver-utils(xhost) xauth : the display, WM, terminal, input
#   bubblewrap                          : the sandbox; util-linux provides prlimit and setpriv
#   libreoffice-calc/writer/impress     : the office apps tasks use; mousepad: a text editor
# The agent user (switchyard-agent) is created on first use by verify/env/sandbox.py.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y --no-install-recommends \
  xvfb openbox xterm xdotool x11-utils x11-xserver-utils xauth bubblewrap util-linux \
  libreoffice-calc libreoffice-writer libreoffice-impress mousepad
