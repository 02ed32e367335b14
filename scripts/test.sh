#!/usr/bin/env bash
# Sets up a fresh machine, type-checks everything (src, collectors, test, bench) and runs the whole
# test suite (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Tests and benchmarks are type-checked too (tsconfig.check.json); a type error fails CI before the suite runs.
npm run typecheck
# ESLint (type-aware rules) and Prettier's check: a finding fails CI like a failing test.
npm run lint
npm test
