#!/usr/bin/env bash
# Installs Debian's Chromium for the devtools browser test (packages/server/src/devtools-browser.test.ts)
# when it is missing; does nothing when `chromium` is already on the PATH. Non-interactive. `npm test` runs it
# first (the `pretest` script), so the README's test command sets up what the tests need.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
SUDO=''
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium is missing and cannot be installed here (needs apt-get as root); the devtools browser test will fail until it is on the PATH" >&2
    exit 0
  fi
  SUDO='sudo'
fi
echo "== installing chromium (apt-get) for the devtools browser test"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
command -v chromium >/dev/null 2>&1 || { echo "chromium is still missing after apt-get install" >&2; exit 1; }
