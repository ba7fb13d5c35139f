#!/usr/bin/env bash
# Installs the Debian packages attnc needs; does nothing when all are present.
# Both README commands and .ci/run call it. Runs as root (or via sudo when available).
set -euo pipefail

packages=(
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools  # MLIR/LLVM 19, lit, FileCheck
  libhalide14-0-dev                                       # Halide 14 (links its own LLVM 14)
  libbenchmark-dev libgtest-dev                           # Google Benchmark, GoogleTest
  nlohmann-json3-dev                                      # JSON for the runtime (safetensors headers)
  libxxhash-dev                                           # XXH3: packed-weights files (checksums, cache keys)
  libpcre2-dev libutf8proc-dev pkgconf                    # the tokenizer: regexes, Unicode normalization
  libcpp-httplib-dev                                      # attn-serve: HTTP
  prometheus-cpp-dev prometheus                           # attn-serve: /metrics; promtool checks it
  nginx python3-yaml                                      # deploy/: the load balancer in front of replicas; its Kubernetes YAML
  pocl-opencl-icd ocl-icd-libopencl1                      # an OpenCL device on the CPU: runs the GPU kernels in tests
  python3-numpy                                           # tools/hf_reference.py: whole models' independent reference
  python3-jinja2                                          # tools/chat_template_reference.py: Jinja2, as transformers renders
  clang-14 libclang-rt-14-dev                             # libFuzzer (fuzz/, scripts/run-fuzzers.sh)
  cmake ninja-build ccache g++ python3                    # build tools; lit needs a python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
