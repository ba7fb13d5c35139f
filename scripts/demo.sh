#!/usr/bin/env bash
# The README's demo command: set up, build, run examples/hello.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/bin/hello
