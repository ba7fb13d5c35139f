#!/usr/bin/env bash
# Installs the GGUF tests' independent readers into DIR (default
# build/llamacpp-data), from the npm registry, versions pinned: llama.cpp as
# node-llama-cpp ships it prebuilt for x86-64 Linux (its other platforms'
# and GPU builds left out; no install scripts run) and @huggingface/gguf, a
# GGUF parser of its own. Does nothing when DIR has them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build/llamacpp-data}"
packages=(node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 @huggingface/gguf@0.4.6)
stamp="$dir/.installed-$(md5sum < "$0" | cut -c1-12)"
[ -f "$stamp" ] && exit 0

source "$root/scripts/npm-ready.sh"
mkdir -p "$dir"
echo '{"private": true}' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --ignore-scripts \
  --omit=optional "${packages[@]}"
touch "$stamp"
