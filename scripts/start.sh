#!/usr/bin/env bash
# Sets up a fresh machine and starts the daemon with a local headless Chromium on the embedded store.
# Extra arguments go to `browser-telemetry serve` (e.g. --open https://example.com).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Everything the daemon creates (data dir, token, log, uploads spool) is private to its user.
umask 077
# Few malloc arenas keep native memory (LevelDB, zlib) small; see docs/operations.md "Runtime flags".
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}
# The same V8 flags as the browser-telemetry shebang (src/cli.ts; see docs/operations.md "Runtime flags").
exec node --max-semi-space-size=2 --single-threaded --no-memory-reducer dist/src/cli.js serve "$@"
