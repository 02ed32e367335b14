#!/usr/bin/env bash
# Sets up a fresh machine and starts the daemon with a local headless Chromium on the embedded store.
# Extra arguments go to `browser-telemetry serve` (e.g. --open https://example.com).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/src/cli.js serve "$@"
