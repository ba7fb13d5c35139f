#!/usr/bin/env bash
# Runs each libFuzzer target of build-fuzz for SECONDS (default 20) from a
# copy of its seed corpus (fuzz/corpus/<name>/; the plan fuzzer also from
# the plan attnc generated for llama_tiny), under ASan + UBSan. A crash
# leaves its input as build-fuzz/crash-*; the script then fails.
# For a campaign of hours: docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Pools larger than the machine must fail as allocations (the runtime
# answers ATTN_OUT_OF_MEMORY), not end the run as an ASan report.
export ASAN_OPTIONS=allocator_may_return_null=1
status=0
for name in description mlir safetensors plan; do
  mkdir -p "$work/$name"
  if [ -d "fuzz/corpus/$name" ]; then cp fuzz/corpus/$name/* "$work/$name/"; fi
  if [ "$name" = plan ]; then
    cp build-fuzz/test/runtime/llama_tiny.attnc/llama_tiny_plan.json "$work/$name/"
  fi
  if (cd build-fuzz && ./bin/fuzz-$name -max_total_time="$seconds" -rss_limit_mb=4096 \
        -timeout=30 -print_final_stats=1 "$work/$name" > "$work/$name.log" 2>&1); then
    echo "fuzz-$name: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$work/$name.log"), no crash"
  else
    echo "fuzz-$name FAILED:"; tail -40 "$work/$name.log"; status=1
  fi
done
exit $status
