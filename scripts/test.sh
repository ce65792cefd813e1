#!/usr/bin/env bash
# npm test: set-up, then every test:
#   1. cargo fmt --check and cargo clippy, natively and for the Worker
#      target (style gates)
#   2. cargo test --workspace: the sans-IO core, the fixtures worker through
#      the test server, the quickstart's tests, the guide's doctests; then
#      both crates packaged as a registry gets them (scripts/package-check.sh)
#   3. the worker builds: the fixtures worker, the quickstart (which the
#      MCP Apps test serves) and bench/minimal; the quickstart's and
#      bench/minimal's wasm held to their size budget
#      (scripts/wasm-budget.json, +2 % at most)
#   4. end-to-end tests (node --test tests/e2e) against wrangler dev instances
#      they start themselves (free port, fresh --persist-to, stopped by PID),
#      the quickstart copied out of the repo and built as a user would
#   5. the official conformance suite against wrangler dev
# Ends with one line, "durable-mcp: N passed, M failed", counting tests (cargo
# tests, e2e tests, required conformance scenarios) plus the gates.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

counts="$(mktemp)"
trap 'rm -f "$counts"' EXIT
failures=()

# A gate: one pass or one fail.
gate() {
  local name="$1"; shift
  log "── $name"
  if "$@"; then echo "1 0" >>"$counts"; else echo "0 1" >>"$counts"; failures+=("$name"); log "FAILED: $name"; fi
}

# A test step whose output is parsed for its own counts by `parse`.
suite() {
  local name="$1" parse="$2"; shift 2
  log "── $name"
  local out; out="$(mktemp)"
  "$@" 2>&1 | tee "$out"
  local status=${PIPESTATUS[0]}
  "$parse" "$out" >>"$counts"
  if [ "$status" -ne 0 ]; then
    failures+=("$name")
    # A failing step must count as failed even if its report did not parse.
    grep -q . <("$parse" "$out" | awk '$2 > 0') || echo "0 1" >>"$counts"
    log "FAILED: $name"
  fi
  rm -f "$out"
}

cargo_counts() { grep -E '^test result:' "$1" | sed -E 's/.* ([0-9]+) passed; ([0-9]+) failed.*/\1 \2/'; }
node_counts() {
  local p f
  p=$(grep -E '^ℹ pass [0-9]+' "$1" | awk '{print $3}' | tail -1)
  f=$(grep -E '^ℹ fail [0-9]+' "$1" | awk '{print $3}' | tail -1)
  echo "${p:-0} ${f:-0}"
}
conformance_counts() {
  grep -E '^conformance .*: [0-9]+ required scenarios passed, [0-9]+ failed' "$1" |
    sed -E 's/.*: ([0-9]+) required scenarios passed, ([0-9]+) failed.*/\1 \2/'
}

if ! bash scripts/setup.sh; then
  echo "durable-mcp: 0 passed, 1 failed"
  exit 1
fi
# Again, now that setup installed what lib.sh points at (on a fresh clone
# node_modules did not exist yet: WASM_OPT_BIN was left unset, and a worker
# a test builds with worker-build would try to download wasm-opt).
source "$(dirname "$0")/lib.sh"

gate "cargo fmt --check" cargo fmt --all -- --check
gate "cargo clippy" cargo clippy --workspace --all-targets --quiet -- -D warnings
# The Worker glue is compiled for wasm32 only: lint it there too.
gate "cargo clippy (wasm32)" cargo clippy --workspace --exclude durable-mcp-client --target wasm32-unknown-unknown --quiet -- -D warnings
suite "cargo test" cargo_counts cargo test --workspace
gate "crates package (cargo publish --dry-run, allow-listed files)" bash scripts/package-check.sh
gate "worker build" bash scripts/build.sh all
gate "wasm size budget" with_node22 node scripts/wasm-budget.mjs
if [ -f "$FIXTURES_DIR/build/worker/shim.mjs" ]; then
  # Node 22 for the tests and the tools they start.
  suite "e2e tests" node_counts with_node22 node --test --test-concurrency=1 --test-reporter=spec 'tests/e2e/*.test.mjs' 'tests/e2e/oauth/*.test.mjs'
  suite "conformance 2026-07-28" conformance_counts with_node22 node tests/conformance/run.mjs 2026-07-28
  suite "conformance 2025-11-25" conformance_counts with_node22 node tests/conformance/run.mjs 2025-11-25
fi
suite "conformance client 2026-07-28" conformance_counts with_node22 node tests/conformance/client.mjs 2026-07-28
suite "conformance client 2025-11-25" conformance_counts with_node22 node tests/conformance/client.mjs 2025-11-25

read -r passed failed < <(awk '{p += $1; f += $2} END {print p+0, f+0}' "$counts")
echo
[ ${#failures[@]} -gt 0 ] && log "failed: ${failures[*]}"
# The conformance summary above prints its own "Total: …" line; this is the
# count for the whole run.
echo "durable-mcp: $passed passed, $failed failed"
[ ${#failures[@]} -eq 0 ]
