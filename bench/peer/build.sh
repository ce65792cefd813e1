#!/usr/bin/env bash
# Bundles the two peer workers into dist/<name>/<name>.js for workerd.capnp.
# Usage: bash bench/peer/build.sh   (from anywhere)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$HERE"

# The peers have their own lockfile, apart from the project's node_modules.
[ -d node_modules/agents ] || npm ci --no-audit --no-fund

# wrangler only bundles here (--dry-run): no account, no network, no metrics.
export CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
for name in stateless session; do
  rm -rf "dist/$name"
  node "$ROOT/node_modules/wrangler/bin/wrangler.js" deploy --dry-run \
    --outdir "dist/$name" --config "wrangler.$name.toml" >/dev/null
  # Plain workerd has cloudflare:workers and node:* but not the edge-only
  # cloudflare:* modules (cloudflare:email, ...): a bundle still importing
  # one would fail to load, so catch it here rather than at serve time.
  bad=$(grep -oE '"cloudflare:[a-z_-]+"' "dist/$name/$name.js" | sort -u | grep -v '"cloudflare:workers"' || true)
  if [ -n "$bad" ]; then
    echo "dist/$name/$name.js imports modules workerd lacks: $bad (stub them via [alias])" >&2
    exit 1
  fi
  echo "built dist/$name/$name.js ($(wc -c <"dist/$name/$name.js") bytes)"
done
