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
# Results of an earlier run must not count: tap writes one .tap file per test file there.
rm -rf .tap/test-results
npm test
# Every skipped test is named; one not on the allow-list fails the run.
node scripts/check-skips.mjs
