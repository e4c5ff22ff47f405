#!/usr/bin/env bash
# The kit proven on this machine, bare: only gpu-kit/ is copied into a temporary folder, and its
# run.sh runs under `env -i` with a PATH that holds the system's tools but no node, npm, npx,
# corepack or redis-* (a folder of links to /usr/bin and /bin without them). `run.sh --cpu`
# compiles the CPU addon from the carried llama.cpp source and runs the same flow as on a GPU
# host, on the ~50M shape, to the same JSON; this script checks that JSON and says how long it took.
#
#   npm run gpu:kit && npm run gpu:kit:bare-check [-- --keep] [-- run.sh options]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
keep=false
if [ "${1:-}" = --keep ]; then keep=true; shift; fi
[ -f "$repo/gpu-kit/run.sh" ] && [ -f "$repo/gpu-kit/kit.tar.xz" ] || { echo "no gpu-kit/: run \`npm run gpu:kit\` first" >&2; exit 1; }

started=$(date +%s)
scratch="$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit-bare.XXXXXX")"
finish() { if [ "$keep" = true ]; then echo "kept $scratch"; else rm -rf "$scratch"; fi; }
trap finish EXIT

cp -r "$repo/gpu-kit" "$scratch/kit"
mkdir -p "$scratch/home"
bare_bin="$scratch/bin"
mkdir -p "$bare_bin"
for dir in /usr/bin /bin; do
  for tool in "$dir"/*; do
    name="$(basename "$tool")"
    case "$name" in node | nodejs | npm | npx | corepack | redis-*) continue ;; esac
    [ -e "$bare_bin/$name" ] || ln -s "$tool" "$bare_bin/$name"
  done
done
for absent in node npm npx redis-server; do
  if env -i PATH="$bare_bin" sh -c "command -v $absent" >/dev/null 2>&1; then echo "bare PATH still finds $absent" >&2; exit 1; fi
done

echo "bare check: $scratch/kit/run.sh --cpu under env -i PATH=$bare_bin"
env -i PATH="$bare_bin" HOME="$scratch/home" TMPDIR="$scratch" LANG=C.UTF-8 \
  bash "$scratch/kit/run.sh" --cpu --out "$scratch/out" "$@"

json="$scratch/out/gpu-check.json"
[ -f "$json" ] || { echo "bare check: no gpu-check.json" >&2; exit 1; }
# The kit's own node reads the result: this machine's node may be any version, or none.
"$scratch/kit/work/node/bin/node" -e '
  const check = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const bad = check.levels.filter((level) => level.errors > 0 || !(level.engineTokensPerSecond > 0) || !(level.serviceTokensPerSecond > 0));
  if (check.levels.length === 0 || bad.length > 0) { console.error("bare check: levels failed", JSON.stringify(bad)); process.exit(1); }
' "$json"
cat "$scratch/out/gpu-check.txt"
echo "bare check passed in $(($(date +%s) - started)) s"
