#!/usr/bin/env bash
# The GPU check, on a bare Linux x86-64 host: only this folder (npm run gpu:kit) and, for CUDA, a
# C++ compiler, CMake, the CUDA toolkit's nvcc and a cuBLAS. No Node, npm or Redis needed.
#
#   ./run.sh [--out DIR] [--shape qwen-0.5b] [--type q8_0] [--levels 1,8,32,128] [--max-tokens 128]
#            [--sequences 32] [--threads 4] [--repeats 4] [--cuda-home DIR] [--cublas DIR] [--arch 90]
#            [--cpu] [--flash-attention]
#
# --cpu defaults: --shape llama-50m --type f16 --levels 1,8 --max-tokens 16 --sequences 4 --threads 1.
# Levels of up to 32 streams run --repeats short runs a side (one request per stream, at least 4),
# alternating sides, and are judged pooled; larger levels run once (one request per stream).
# The CUDA addon is compiled without llama.cpp's FlashAttention kernels (GGML_CUDA_FA=OFF), which
# take over a third of the compile time, so that the check fits a 15-minute GPU lease; the engine
# alone and the worker run the same build. --flash-attention compiles them (as the Docker image does).
#
# It unpacks kit.tar.xz (beside it, into --work, default ./work), compiles node-llama-cpp's
# llama.cpp addon from the carried source for this host's GPU architecture (--cpu: for this CPU),
# makes a model of a real shape with seeded random weights, then runs the benchmark's llama phase:
# the engine alone, then Redis + one worker (which passes its boot self-test first) + one API,
# at each level of streams; then the engine alone once more, timing its decode calls and sampling
# (decode-batches.json), and with jobs coming and going after a burst (decode-batches-staggered.json).
# It writes DIR/gpu-check.json and DIR/gpu-check.txt (and the logs and, on CUDA,
# gpu-utilization.txt beside them), prints progress, and stops everything it started, however it
# ends.
#
# Found without being told: nvcc on PATH, in $CUDA_HOME or /usr/local/cuda*; cuBLAS beside nvcc
# or inside a Python environment's nvidia-cublas package (site-packages/nvidia/cublas), which is
# where PyTorch hosts keep it; CMake on PATH or from a Python environment's cmake package.
set -euo pipefail

kit="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$kit/results"
work="$kit/work"
backend=cuda
shape=""
type=""
levels=""
max_tokens=""
sequences=""
threads=""
repeats=4
cuda_home="${CUDA_HOME:-}"
cublas=""
arch=""
flash_attention=OFF

# The header comment above, up to its first line that is not a comment.
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --cpu) backend=cpu; shift ;;
    --shape) shape="$2"; shift 2 ;;
    --type) type="$2"; shift 2 ;;
    --levels) levels="$2"; shift 2 ;;
    --max-tokens) max_tokens="$2"; shift 2 ;;
    --sequences) sequences="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --cuda-home) cuda_home="$2"; shift 2 ;;
    --cublas) cublas="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --flash-attention) flash_attention=ON; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

started_at=$(date +%s)
say() { printf '[gpu-check %4ss] %s\n' "$(($(date +%s) - started_at))" "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)

# Defaults by backend: a real small model on the GPU; on a CPU, the ~50M shape and what 2 cores can do.
if [ "$backend" = cuda ]; then
  : "${shape:=qwen-0.5b}" "${type:=q8_0}" "${levels:=1,8,32,128}" "${max_tokens:=128}" "${sequences:=32}" "${threads:=4}"
else
  : "${shape:=llama-50m}" "${type:=f16}" "${levels:=1,8}" "${max_tokens:=16}" "${sequences:=4}" "${threads:=1}"
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/gpu-check.log"
: >"$log"
say "kit $kit, backend $backend, $cores cores; logs in $log"

# Everything started from here on is in this shell's process group's children: stop them all on the way out.
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  local children
  children=$(jobs -p)
  if [ -n "$children" ]; then kill $children 2>/dev/null || true; fi
  pkill -TERM -P $$ 2>/dev/null || true
  say "done (exit $code) in $(($(date +%s) - started_at)) s"
  exit $code
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- unpack (once per kit: a marker names the archive it came from) ----
archive="$kit/kit.tar.xz"
[ -f "$archive" ] || fail "no kit.tar.xz beside run.sh"
stamp="$(cksum <"$archive" | cut -d' ' -f1)"
if [ "$(cat "$work/.unpacked" 2>/dev/null || true)" != "$stamp" ]; then
  say "unpacking kit.tar.xz into $work"
  rm -rf "$work"
  mkdir -p "$work"
  if command -v xz >/dev/null 2>&1; then
    xz -dc "$archive" | tar -xf - -C "$work"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$archive" "$work"
  else
    fail "neither xz nor python3 is here to unpack kit.tar.xz"
  fi
  echo "$stamp" >"$work/.unpacked"
fi
app="$work/app"
export PATH="$work/node/bin:$work/redis/bin:$PATH"
say "node $(node --version), npm $(npm --version), $(redis-server --version | cut -d' ' -f1-3)"

# ---- tools for the build ----
find_cmake() {
  if command -v cmake >/dev/null 2>&1; then command -v cmake; return; fi
  local python
  for python in python3 python; do
    command -v "$python" >/dev/null 2>&1 || continue
    "$python" -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))' 2>/dev/null && return
  done
  return 1
}
cmake_bin="$(find_cmake)" || fail "no CMake: put cmake on PATH"
export PATH="$(dirname "$cmake_bin"):$PATH"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || fail "no C++ compiler (c++ or g++) on PATH"
say "$(cmake --version | head -1), $(command -v ninja >/dev/null && echo "ninja $(ninja --version)" || echo 'make')"

# Directories of Python environments' site-packages (where pip puts nvidia-cublas and cmake).
site_packages() {
  local python
  for python in python3 python; do
    command -v "$python" >/dev/null 2>&1 || continue
    "$python" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true
  done
  ls -d /usr/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /opt/conda/lib/python3*/site-packages \
    /usr/local/lib/python3*/site-packages /root/.local/lib/python3*/site-packages 2>/dev/null || true
}

if [ "$backend" = cuda ]; then
  nvcc_bin=""
  for candidate in ${cuda_home:+"$cuda_home/bin/nvcc"} "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then nvcc_bin="$candidate"; break; fi
  done
  [ -n "$nvcc_bin" ] || fail "no nvcc: pass --cuda-home DIR (the CUDA toolkit) or put nvcc on PATH"
  cuda_home="$(cd "$(dirname "$nvcc_bin")/.." && pwd)"
  export CUDA_HOME="$cuda_home" CUDACXX="$nvcc_bin" CUDAToolkit_ROOT="$cuda_home" PATH="$cuda_home/bin:$PATH"
  say "nvcc $("$nvcc_bin" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') at $cuda_home"

  # A folder holding libcublas.so* and cublas_v2.h somewhere below it (lib/, lib64/, targets/…).
  cublas_files() {
    local lib header
    lib="$(find "$1" -maxdepth 4 -name 'libcublas.so*' 2>/dev/null | sort | head -1)"
    header="$(find "$1" -maxdepth 4 -name cublas_v2.h 2>/dev/null | head -1)"
    [ -n "$lib" ] && [ -n "$header" ] || return 1
    cublas_lib="$(dirname "$lib")"
    cublas_include="$(dirname "$header")"
  }
  if [ -n "$cublas" ]; then
    cublas_files "$cublas" || fail "--cublas $cublas holds no libcublas.so* and cublas_v2.h"
  elif ! cublas_files "$cuda_home"; then
    # pip's nvidia-cublas (what PyTorch installs): site-packages/nvidia/cublas, or nvidia/cu13 for CUDA 13 wheels.
    while read -r dir; do
      if [ -n "$dir" ] && [ -d "$dir/nvidia" ] && cublas_files "$dir/nvidia"; then cublas="$dir/nvidia"; break; fi
    done < <(site_packages)
    [ -n "$cublas" ] || fail "no cuBLAS beside nvcc or in a Python environment's nvidia-cublas package: pass --cublas DIR (holding libcublas.so* and cublas_v2.h)"
  fi
  lib_of() { ls "$cublas_lib"/"$1".so* | sort | head -1; }
  say "cuBLAS: $(lib_of libcublas), headers $cublas_include"

  if [ -z "$arch" ]; then
    command -v nvidia-smi >/dev/null 2>&1 || fail "no nvidia-smi to read the GPU's compute capability: pass --arch (e.g. 90)"
    arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')"
  fi
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader >"$out/gpu.txt" 2>/dev/null || true
  say "GPU: $(head -1 "$out/gpu.txt" 2>/dev/null || echo unknown), building for architecture $arch"

  # node-llama-cpp passes NODE_LLAMA_CPP_CMAKE_OPTION_<NAME> to CMake as -D<NAME>, and names the
  # build folder after them: the worker and the engine alone, started below with the same
  # environment, find this very build. cuBLAS from a pip package has no unversioned .so for
  # find_library: CMake is told the files.
  export NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES="$arch"
  export NODE_LLAMA_CPP_CMAKE_OPTION_GGML_CUDA_FA="$flash_attention"
  build_options="CMAKE_CUDA_ARCHITECTURES=$arch GGML_CUDA_FA=$flash_attention"
  export NODE_LLAMA_CPP_CMAKE_OPTION_CUDA_cublas_LIBRARY="$(lib_of libcublas)"
  export NODE_LLAMA_CPP_CMAKE_OPTION_CUDA_cublasLt_LIBRARY="$(lib_of libcublasLt)"
  export NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_FLAGS="-I$cublas_include"
  export NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CXX_FLAGS="-I$cublas_include"
  export LD_LIBRARY_PATH="$cublas_lib:$cuda_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  gpu=cuda
else
  gpu=false
  build_options="CPU"
fi

# ---- compile the addon from the carried source (once per work folder and backend) ----
built="$work/.built-$backend-${arch:-cpu}-fa-$flash_attention"
if [ ! -f "$built" ]; then
  say "compiling llama.cpp's addon for $backend with $cores cores (output in $log)"
  build_started=$(date +%s)
  (cd "$app" && node node_modules/node-llama-cpp/dist/cli/cli.js source build --gpu "$gpu" --noUsageExample) >>"$log" 2>&1 ||
    { tail -40 "$log" >&2; fail "the addon did not compile"; }
  echo "$(($(date +%s) - build_started))" >"$built"
  say "compiled in $(cat "$built") s"
fi

# ---- a model of a real shape ----
model="$app/models/$shape-$type.gguf"
say "making the $shape model ($type)"
(cd "$app" && node kit/make-tiny-model.js --shape "$shape" --type "$type" --out "$model") | tee -a "$log"

# ---- the GPU's utilisation and memory each second, on the clock `say` prints (stopped by cleanup) ----
if [ "$backend" = cuda ] && command -v nvidia-smi >/dev/null 2>&1; then
  echo "# seconds since start, GPU utilisation %, memory used MiB" >"$out/gpu-utilization.txt"
  while sleep 1; do
    echo "$(($(date +%s) - started_at)), $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)"
  done >>"$out/gpu-utilization.txt" &
fi

# ---- engine alone against the whole service ----
# Many short alternating runs, pooled: one long run a side lets a moment's drift decide the ratio.
repeat_up_to=32
level_plan=$(echo "$levels" | tr ',' '\n' | awk '{ r = $1; if (r < 4) r = 4; printf "%s%s:%d", (NR > 1 ? "," : ""), $1, r }')
say "benchmark: levels $levels streams ($repeats runs a side up to $repeat_up_to), $max_tokens tokens per answer, $sequences sequences, $threads threads"
rm -rf "$app/bench/results"
(cd "$app" && node --experimental-websocket kit/run-bench.js --only=llama --api-processes=1 --model-path "$model" --gpu "$gpu" \
  --llama-levels="$level_plan" --max-tokens="$max_tokens" --sequences="$sequences" --threads="$threads" \
  --repeats="$repeats" --repeat-up-to="$repeat_up_to") 2>&1 | tee -a "$log"
result="$(ls "$app"/bench/results/*.json 2>/dev/null | head -1)"
[ -n "$result" ] || fail "the benchmark wrote no results"
cp -r "$app/test-artifacts/bench/logs" "$out/service-logs" 2>/dev/null || true

node "$app/kit/summarize-run.js" --bench "$result" --backend "$backend" --shape "$shape" --type "$type" --gpu-info "$out/gpu.txt" \
  --build-seconds "$(cat "$built")" --build-options "$build_options" --elapsed-seconds "$(($(date +%s) - started_at))" --json "$out/gpu-check.json" --text "$out/gpu-check.txt"

# ---- where the engine's own time goes (decode calls, tokens per decode, sampling), streams up to the sequences ----
# decode_probe NAME LABEL LEVELS [OPTION...]: the engine alone, timed inside, into $out/NAME.json;
# its lines go to gpu-check.txt after LABEL. A probe that fails is said; the check's results stand.
decode_probe() {
  local name="$1" label="$2" probe_at="$3"
  shift 3
  say "engine alone, timed inside: decode calls and sampling at $probe_at streams${label:+ ($label)}"
  (cd "$app" && node kit/decode-batches.js --model-path="$model" --gpu="$gpu" --levels="$probe_at" --sequences="$sequences" \
    --threads="$threads" --max-tokens="$max_tokens" --out="$out/$name.json" "$@") 2>&1 |
    tee -a "$log" | grep '^c=' | sed "s/^/${label:+$label }/" >>"$out/gpu-check.txt" ||
    say "the $name probe failed (see $log); the check's results stand without it"
}
probe_levels=$(echo "$levels" | tr ',' '\n' | awk -v max="$sequences" '$1 <= max' | paste -sd, -)
decode_probe decode-batches "" "$probe_levels"
# The same as jobs come and go after a burst (which sequences new jobs land on), above one stream.
staggered_levels=$(echo "$probe_levels" | tr ',' '\n' | awk '$1 > 1' | paste -sd, -)
[ -z "$staggered_levels" ] || decode_probe decode-batches-staggered staggered "$staggered_levels" --arrivals=staggered --batching=shared
cat "$out/gpu-check.txt"
say "wrote $out/gpu-check.json and gpu-check.txt"
