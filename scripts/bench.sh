#!/usr/bin/env bash
# npm run bench: set up, build, then bench/run.mjs (durable-mcp against a
# plain Worker on the same workerd, ratios reported). BENCH_N sets the count.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bash scripts/setup.sh
bash scripts/build.sh fixtures
with_node22 node bench/run.mjs
