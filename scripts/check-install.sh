#!/usr/bin/env bash
# Installs attnc from build directory $1 into $2/prefix, then builds
# examples/embed against it the way a user outside this repository would
# (find_package(attnc)) and runs it. The embed-from-install ctest entry.
set -euo pipefail
build=$1 scratch=$2
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
rm -rf "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" > /dev/null
cmake -S "$source_dir/examples/embed" -B "$scratch/embed" -G Ninja \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" > /dev/null
cmake --build "$scratch/embed" > /dev/null
"$scratch/embed/embed"
"$scratch/embed/embed-model"
