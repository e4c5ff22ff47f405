#!/usr/bin/env bash
# One remote call on a lent GPU host: print what the kit relies on, run gpu-kit/run.sh (bounded so
# the call ends inside a 600 s limit), and copy its small result files into $OUT (default /tmp/out),
# which the caller fetches. Extra arguments go to run.sh.
#
#   bash tools/gpu-kit/one-call.sh [run.sh options]     (with gpu-kit/ built: npm run gpu:kit)
set -uo pipefail
out="${OUT:-/tmp/out}"
mkdir -p "$out"
exec > >(tee "$out/device.log") 2>&1
echo "== probe $(date -u +%T)"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader
nproc; uname -r
for t in nvcc cmake ninja c++ g++ python3 xz; do printf '%s: %s\n' "$t" "$(command -v $t || echo none)"; done
ls -d /usr/local/cuda* 2>/dev/null
timeout 20 find /usr/local/cuda/ /usr/local/cuda/lib64/ /opt -maxdepth 7 -name 'libcublas.so*' 2>/dev/null | head -5
timeout 20 find /usr/local/cuda/ /opt -maxdepth 8 -name 'cublas_v2.h' 2>/dev/null | head -3
echo "== kit $(date -u +%T)"
timeout --signal=TERM 530 bash gpu-kit/run.sh --out /tmp/check --work /tmp/kitwork "$@"
rc=$?
echo "== run.sh exit $rc $(date -u +%T)"
for f in gpu-check.json gpu-check.txt gpu.txt decode-batches.json decode-batches-staggered.json gpu-utilization.txt; do [ -f "/tmp/check/$f" ] && cp "/tmp/check/$f" "$out/"; done
[ -f /tmp/check/gpu-check.log ] && tail -c 3000000 /tmp/check/gpu-check.log | gzip > "$out/gpu-check.log.gz"
[ -d /tmp/check/service-logs ] && tar czf "$out/service-logs.tgz" -C /tmp/check service-logs
exit $rc
