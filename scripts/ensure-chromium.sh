#!/usr/bin/env bash
# Installs Debian's Chromium for the devtools browser test (packages/server/src/devtools-browser.test.ts)
# when it is missing; does nothing when `chromium` is already on the PATH. Non-interactive.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
SUDO=''
if [ "$(id -u)" -ne 0 ]; then SUDO='sudo'; fi
echo "== installing chromium (apt-get) for the devtools browser test"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
command -v chromium >/dev/null 2>&1 || { echo "chromium is still missing after apt-get install" >&2; exit 1; }
