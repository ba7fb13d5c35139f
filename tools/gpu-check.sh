#!/usr/bin/env bash
# The GPU checks, as one script for a machine with an NVIDIA GPU (at most ~8
# minutes): builds the GPU programs if they are not built yet, then
#   1. gpu-ptx-test       every kernel family's PTX through ptxas (sm_80, sm_90)
#   2. gpu-numerics-test  prefill, decode and a projection on the device
#                         against double references
#   3. cuda-library-test  an attnc --target=...,cuda library: its CUDA
#                         wrappers against its CPU ones; cuda-zoo-test the
#                         same for every attention variant
#   4. cuda-model-test    whole models through the runtime on the device
#                         (weights, KV caches, activations there) against
#                         the same models on the CPU; attn-generate --check
#                         --device (examples/generate's model on the GPU:
#                         cache vs recomputation), then its prompt and
#                         decode throughput on the GPU and on the CPU
#   5. attn-gpu-bench     prefill and decode GFLOP/s, GB/s and % of the
#                         device's fp32 peak and measured triad
# Results go to stdout and, with OUT set, to $OUT/gpu-check.log.
#   tools/gpu-check.sh [build-dir]       (default: build)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
log=${OUT:-/tmp}/gpu-check.log
exec > >(tee "$log") 2>&1

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv 2>/dev/null ||
  echo "nvidia-smi: not available"
programs=(gpu-ptx-test gpu-numerics-test cuda-library-test cuda-zoo-test
  cuda-model-test attn-generate attn-gpu-bench)
missing=0
for p in "${programs[@]}"; do [ -x "$build/bin/$p" ] || missing=1; done
if [ "$missing" = 1 ]; then
  if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
    echo "gpu-check: $build/bin lacks ${programs[*]} and cmake/ninja are not installed here"
    exit 1
  fi
  [ -f "$build/build.ninja" ] ||
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  timeout 300 ninja -C "$build" "${programs[@]}" || exit 1
fi

status=0
timeout 120 "$build/bin/gpu-ptx-test" || status=1
timeout 120 "$build/bin/gpu-numerics-test" || status=1
timeout 60 "$build/bin/cuda-library-test" || status=1
timeout 60 "$build/bin/cuda-zoo-test" || status=1
timeout 120 "$build/bin/cuda-model-test" || status=1
timeout 120 "$build/bin/attn-generate" --check --device || status=1
timeout 120 "$build/bin/attn-generate" --device --context 512 --context 4096 || status=1
timeout 120 "$build/bin/attn-generate" --context 512 --context 4096 || status=1
timeout 240 "$build/bin/attn-gpu-bench" --benchmark_min_time=0.2 \
  --benchmark_counters_tabular=true || status=1
echo "gpu-check: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
