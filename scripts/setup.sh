#!/usr/bin/env bash
# Installs whatever is missing, and nothing that is already there:
# the wasm32 target, worker-build, wasm-bindgen-cli (at the Cargo.lock
# version), the npm packages (wrangler, Node 22, the MCP clients, the
# conformance suite, puppeteer-core), Debian's Chromium (for the MCP Apps
# test), a local dev key in .dev.vars and the official Python MCP SDK in a
# venv at .venv-e2e (for the Python sign-in test).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_BUILD_VERSION" ]; then
  log "installing worker-build $WORKER_BUILD_VERSION"
  cargo install worker-build --version "$WORKER_BUILD_VERSION" --locked
fi

if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $NF}')" != "$WASM_BINDGEN_VERSION" ]; then
  # worker-build would download it from GitHub, which is not reachable here;
  # the crate registry is.
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  # Not --locked: its lock file pins a webpki-roots release the registry no
  # longer serves; the resolver picks a compatible one.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

# npm ci only when the lock file changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages"
  npm ci --no-audit --no-fund
  touch node_modules/.package-lock.json
fi

# The MCP Apps test renders a view in a headless browser: Debian's Chromium,
# driven by puppeteer-core (which downloads no browser of its own).
if ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium (apt)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium; }; then
    log "could not install chromium: the MCP Apps test (tests/e2e/apps.test.mjs) will fail"
  fi
fi

# wrangler dev reads the .dev.vars beside each worker's wrangler.toml: the
# fixtures worker's at the top, the quickstart's in its directory.
for vars in .dev.vars examples/quickstart/.dev.vars; do
  [ -f "$vars" ] && continue
  log "creating a local dev key in $vars (git-ignored)"
  key="$(head -c 32 /dev/urandom | base64 | tr -d '=+/\n')"
  cat > "$vars" <<VARS
# Local secrets for wrangler dev only. Deployed workers take these from
# \`wrangler secret put\`. STATE_KEYS is a key ring: kid:secret, newest first.
STATE_KEYS=dev:$key
ALLOWED_HOSTS=localhost,127.0.0.1,[::1]
ALLOWED_ORIGINS=localhost,127.0.0.1,[::1]
VARS
done

# The official Python SDK (PyPI `mcp`, at PY_MCP_VERSION) for the Python
# sign-in test (tests/e2e/python-oauth.test.mjs), in a git-ignored venv.
PY_MCP_VERSION="2.3.0"
if [ "$(.venv-e2e/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$PY_MCP_VERSION" ]; then
  log "installing the Python MCP SDK $PY_MCP_VERSION in .venv-e2e"
  if ! { { [ -x .venv-e2e/bin/python ] || python3 -m venv .venv-e2e; } \
      && .venv-e2e/bin/python -m pip install -q --disable-pip-version-check "mcp==$PY_MCP_VERSION"; }; then
    log "could not install it: the Python sign-in test (tests/e2e/python-oauth.test.mjs) will fail"
  fi
fi
