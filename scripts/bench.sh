#!/usr/bin/env bash
# npm run bench: set up, bundle the peer (bench/peer: Cloudflare `agents`),
# then bench/run.mjs: durable-mcp against a plain JS floor, a plain Rust
# ceiling and the peer, all on one plain `workerd serve`, driven by
# autocannon; then cold starts, many at once and what a call costs. See
# bench/run.mjs for the knobs (BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONNECTIONS,
# BENCH_ONLY, BENCH_SUITES).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bash scripts/setup.sh
bash bench/peer/build.sh
with_node22 node bench/run.mjs
