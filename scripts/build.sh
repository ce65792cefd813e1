#!/usr/bin/env bash
# Builds the worker crates with worker-build (wasm-bindgen and wasm-opt from
# the registries: see lib.sh) into each crate's build/.
#   bash scripts/build.sh            both: the fixtures worker and the quickstart
#   bash scripts/build.sh fixtures   the fixtures worker only (what the tests serve)
#   bash scripts/build.sh quickstart the quickstart only
#   bash scripts/build.sh minimal    bench/minimal only (its size is budgeted)
# DMCP_SKIP_BUILD=1 skips it (tests build once, then start wrangler dev
# several times).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "${DMCP_SKIP_BUILD:-0}" = "1" ] && exit 0
what="${1:-all}"
# The fixtures skip wasm-opt (tests start sooner; DMCP_WASM_OPT=1, as the
# benchmark sets, keeps it); the quickstart builds as a user's crate does,
# with its own wrangler.toml build command.
build() { (cd "$1" && worker-build --release "${@:2}"); }
case "$what" in
  fixtures) if [ "${DMCP_WASM_OPT:-0}" = "1" ]; then build "$FIXTURES_DIR"; else build "$FIXTURES_DIR" --no-opt; fi ;;
  quickstart) build "$QUICKSTART_DIR" ;;
  minimal) build "$MINIMAL_DIR" ;;
  all) build "$FIXTURES_DIR" --no-opt; build "$QUICKSTART_DIR"; build "$MINIMAL_DIR" ;;
  *) echo "usage: build.sh [fixtures|quickstart|minimal|all]" >&2; exit 2 ;;
esac
