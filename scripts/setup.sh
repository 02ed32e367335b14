#!/usr/bin/env bash
# Installs what a fresh machine lacks: Debian chromium, nats-server, ffmpeg and systemd (when root) and the
# npm dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# Fleet shipping tests and bench/ship.ts run a real JetStream server (the Debian package has it built in).
[ -x /usr/sbin/nats-server ] || command -v nats-server >/dev/null || need_apt+=(nats-server)
# Recording export and its tests encode video with ffmpeg.
command -v ffmpeg >/dev/null || need_apt+=(ffmpeg)
# The systemd unit's tests run systemd-analyze (security exposure score, unit verification).
command -v systemd-analyze >/dev/null || need_apt+=(systemd)
# open --launch's test follows its link with curl, as the stand-in xdg-open and as another user.
command -v curl >/dev/null || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need_apt[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: missing Debian packages. Run this one command, then retry: sudo apt-get install -y ${need_apt[*]}" >&2
    exit 1
  fi
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund
else
  npm run -s build
fi
