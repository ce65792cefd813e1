#!/usr/bin/env bash
# npm start: set up, build, and serve http://127.0.0.1:${PORT:-8787}/mcp with
# wrangler dev, state persisted under ${PERSIST_TO:-.wrangler/state}.
#   npm start               the quickstart (examples/quickstart, its own wrangler.toml)
#   FIXTURES=1 npm start    the fixtures worker (the conformance suite's server)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bash scripts/setup.sh
persist="$(realpath -m "${PERSIST_TO:-.wrangler/state}")"
# wrangler dev runs the worker's own build command first (scripts/build.sh
# for the fixtures, worker-build for the quickstart, as for any user crate).
# It runs in the worker's directory, as a user runs it in theirs.
if [ "${FIXTURES:-0}" = "1" ]; then
  dir="$ROOT"
else
  dir="$QUICKSTART_DIR"
fi
log "serving http://127.0.0.1:${PORT:-8787}/mcp ($dir/wrangler.toml)"
cd "$dir"
exec "$ROOT/node_modules/.bin/wrangler" dev --ip 127.0.0.1 --port "${PORT:-8787}" \
  --persist-to "$persist" --show-interactive-dev-session=false "$@"
