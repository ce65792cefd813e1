#!/usr/bin/env bash
# npm test: set-up, then every test:
#   1. cargo fmt --check, cargo clippy, cargo test (the sans-IO core, natively)
#   2. the worker build
#   3. end-to-end tests (node --test tests/e2e) against wrangler dev instances
#      they start themselves (free port, fresh --persist-to, stopped by PID)
#   4. the official conformance suite against wrangler dev, both requirement sets
# Prints one closing line, "N passed, M failed", counting the steps.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

passed=0
failed=0
failures=()
step() {
  local name="$1"; shift
  log "── $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
    log "FAILED: $name"
  fi
}

bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

step "cargo fmt --check" cargo fmt --all -- --check
step "cargo clippy" cargo clippy --all-targets --quiet -- -D warnings
step "cargo test" cargo test --quiet
step "worker build" bash scripts/build.sh
if [ "$failed" -eq 0 ] || [ -f build/worker/shim.mjs ]; then
  # Node 22 for the tests and the tools they start.
  step "e2e tests" with_node22 node --test --test-concurrency=1 --test-reporter=spec tests/e2e/
  step "conformance 2026-07-28" with_node22 node tests/conformance/run.mjs 2026-07-28
fi

echo
if [ "$failed" -gt 0 ]; then
  log "failed steps: ${failures[*]}"
fi
# The closing line CI reads: the conformance summary above prints its own
# "Total: …" line, which must not be taken for this run's count.
echo "npm test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
