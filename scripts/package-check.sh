#!/usr/bin/env bash
# The crates as a registry gets them: `cargo publish --dry-run` for both
# (packaged and built from the package alone), and every packaged file on
# an allow-list, so no test fixture, build output or local secret ships.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The files each crate may ship (shell patterns; `*` crosses folders).
allowed_durable_mcp=(
  .cargo_vcs_info.json Cargo.toml Cargo.toml.orig Cargo.lock
  README.md CHANGELOG.md docs/GUIDE.md docs/ARCHITECTURE.md 'src/*.rs'
)
allowed_small=(
  .cargo_vcs_info.json Cargo.toml Cargo.toml.orig Cargo.lock 'src/*.rs'
)
allowed_client=(
  .cargo_vcs_info.json Cargo.toml Cargo.toml.orig Cargo.lock
  README.md 'src/*.rs' 'src/bin/durable-mcp/templates/*'
)

# Every packaged file of a crate on its allow-list.
listed() {
  local crate="$1"; shift
  local allowed=("$@") bad=0 file pattern ok
  while IFS= read -r file; do
    ok=0
    for pattern in "${allowed[@]}"; do
      # shellcheck disable=SC2053
      [[ "$file" == $pattern ]] && ok=1 && break
    done
    if [ "$ok" -eq 0 ]; then log "$crate would ship $file, which is not on its allow-list"; bad=1; fi
  done < <(cargo package -p "$crate" --allow-dirty --list --quiet)
  [ "$bad" -eq 0 ] || return 1
}

listed durable-mcp-frontmatter "${allowed_small[@]}"
listed durable-mcp-macros "${allowed_small[@]}"
listed durable-mcp "${allowed_durable_mcp[@]}"
listed durable-mcp-client "${allowed_client[@]}"
# Published together: durable-mcp's packaged build finds the two crates it
# needs, not yet on the registry, among these packages.
cargo publish -p durable-mcp-frontmatter -p durable-mcp-macros -p durable-mcp \
  -p durable-mcp-client --dry-run --allow-dirty --quiet
log "the four crates: packaged, built from their packages, every file allowed"
