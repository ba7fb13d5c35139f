"""A Llama-shaped Hugging Face model folder for the apps' tests.

text_llama/config.json (vocabulary 32000), the tokenizer tests' real Llama
2-style SentencePiece tokenizer.json, and random bf16 weights written for the
library attn-run compiles (write-random-checkpoint opens it with dlopen).
"""

import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def make_model_folder(work, bin_dir, data):
    """Returns (model folder, cache folder, compile-only result)."""
    model = os.path.join(work, "model")
    os.makedirs(model)
    shutil.copy(os.path.join(HERE, "text_llama", "config.json"), model)
    tokenizer = os.path.join(data, "node_modules", "@lenml", "tokenizer-llama2", "models")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer, name), model)
    cache = os.path.join(work, "cache")
    compiled = subprocess.run([os.path.join(bin_dir, "attn-run"), model, "--compile-only",
                               "--cache-dir", cache], capture_output=True, text=True)
    library = compiled.stdout.strip()
    if compiled.returncode == 0:
        made = subprocess.run([os.path.join(bin_dir, "write-random-checkpoint"), library,
                               os.path.join(model, "model.safetensors")],
                              capture_output=True, text=True)
        if made.returncode != 0:
            raise SystemExit("write-random-checkpoint failed: " + made.stderr)
    return model, cache, compiled
