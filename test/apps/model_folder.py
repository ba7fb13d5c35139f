"""What the apps' tests (and bench/serve_load.py) share: a model folder, a
running attn-serve, and counted checks.

make_model_folder: a Llama-shaped Hugging Face model folder.

text_llama/config.json (vocabulary 32000), the tokenizer tests' real Llama
2-style SentencePiece tokenizer.json, and random bf16 weights written for the
library attn-run compiles (write-random-checkpoint opens it with dlopen).
"""

import json
import os
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))

# The tokenizer's config carries no chat template; the folder gets this one
# (ours, in the style of the published ones), so that --chat and
# /v1/chat/completions have one to apply.
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] "
                 "{{ m['content'] | trim }}\n{% endfor %}"
                 "{% if add_generation_prompt %}[assistant] {% endif %}")


def render_chat(messages):
    """The prompt text Jinja2 makes of CHAT_TEMPLATE, as transformers would."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))
    from chat_template_reference import environment
    return environment().from_string(CHAT_TEMPLATE).render(
        messages=messages, add_generation_prompt=True, bos_token="<s>")


def make_model_folder(work, bin_dir, data, family="text_llama"):
    """Returns (model folder, cache folder, compile-only result); `family`:
    the folder of its config.json (text_llama, text_mixtral)."""
    model = os.path.join(work, family if family != "text_llama" else "model")
    os.makedirs(model)
    shutil.copy(os.path.join(HERE, family, "config.json"), model)
    tokenizer = os.path.join(data, "node_modules", "@lenml", "tokenizer-llama2", "models")
    shutil.copy(os.path.join(tokenizer, "tokenizer.json"), model)
    with open(os.path.join(tokenizer, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config["chat_template"] = CHAT_TEMPLATE
    with open(os.path.join(model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)
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


def start_server(bin_dir, model, cache, *options, ready=True, port=0):
    """(process, base URL) of attn-serve on `port` (0: a free one); base is
    None if it never said where it listens (or, with `ready`, that it is
    ready)."""
    server = subprocess.Popen([os.path.join(bin_dir, "attn-serve"), model, "--port", str(port),
                               "--cache-dir", cache] + list(options),
                              stderr=subprocess.PIPE, text=True)
    base = None
    # It listens first (/health says 503 while it loads), then says "ready".
    for line in server.stderr:
        if " on http://" in line:
            base = line.split(" on ")[1].split()[0]
            if not ready:
                break
        if line.startswith("attn-serve: ready"):
            break
    else:
        base = None
    # Keep reading its log, so that it never blocks on a full pipe.
    threading.Thread(target=server.stderr.read, daemon=True).start()
    return server, base


class Checks:
    """Counts checks and remembers the failed ones; main() returns status()."""

    def __init__(self):
        self.count = 0
        self.failures = []

    def __call__(self, condition, message):
        self.count += 1
        if not condition:
            self.failures.append(message)
            print("FAILED:", message, file=sys.stderr)

    def status(self):
        if self.failures:
            print("%d check(s) failed" % len(self.failures), file=sys.stderr)
            return 1
        return 0
