#!/usr/bin/env bash
# npm start: set up, build, and serve http://127.0.0.1:${PORT:-8787}/mcp with
# wrangler dev, state persisted under .wrangler/state.
# FIXTURES=1 also serves the conformance fixtures.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bash scripts/setup.sh
bash scripts/build.sh
log "serving http://127.0.0.1:${PORT:-8787}/mcp"
exec npx wrangler dev --ip 127.0.0.1 --port "${PORT:-8787}" \
  --persist-to "${PERSIST_TO:-.wrangler/state}" \
  --var "FIXTURES:${FIXTURES:-0}" --show-interactive-dev-session=false "$@"
