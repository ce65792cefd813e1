#!/usr/bin/env bash
# Builds the worker into build/ with worker-build (wasm-bindgen from the crate
# registry, no wasm-opt). DMCP_SKIP_BUILD=1 skips it (tests build once, then
# start wrangler dev several times).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "${DMCP_SKIP_BUILD:-0}" = "1" ] && exit 0
WASM_BINDGEN_BIN="$(command -v wasm-bindgen)" worker-build --release --no-opt
