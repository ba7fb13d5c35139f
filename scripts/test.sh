#!/usr/bin/env bash
# The README's test command (and CI's): set up, build, run every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure
