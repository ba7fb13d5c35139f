#!/usr/bin/env python3
"""attn-run end to end, against an independent reference.

A Llama-shaped model folder as Hugging Face publishes one: text_llama/config.json
(vocabulary 32000), a real SentencePiece tokenizer.json (the tokenizer tests'
Llama 2-style one), random bf16 weights. attn-run compiles the config on its
first run (progress shown, library cached), loads the library with dlopen, and
generates greedily from a text prompt; the tokens must be those of
tools/hf_reference.py (float64 numpy, written from transformers) for the same
prompt ids. Then: the cache is reused, --stop cuts the text, and bad input is a
clear error.

Last, Mixtral-, DeepSeek-V3- and gpt-oss-shaped folders
(text_mixtral/config.json, text_deepseek/config.json,
text_gpt_oss/config.json), their tokens against the same reference.

Usage: attn_run_test.py BIN_DIR TOKENIZER_DATA PYTHON_WITH_NUMPY
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from model_folder import Checks, make_model_folder, render_chat, start_server

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
check = Checks()


def run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    return result


def main():
    bin_dir, data, python = sys.argv[1:4]
    attn_run = os.path.join(bin_dir, "attn-run")
    work = tempfile.mkdtemp(prefix="attn-run-test.")
    try:
        # First run: compiles, with progress, and says where the library is.
        model, cache, first = make_model_folder(work, bin_dir, data)
        common = ["--cache-dir", cache]
        check(first.returncode == 0, "compile-only failed: " + first.stderr)
        check("compiling" in first.stderr and "attnc: [1/" in first.stderr,
              "the first compile shows no progress: " + first.stderr)
        library = first.stdout.strip()
        check(library.startswith(cache) and os.path.exists(library),
              "no library in the cache: " + library)

        # The same library from C: attn_model_load_library.
        from_c = run([os.path.join(bin_dir, "model-library-c-test"), library,
                      os.path.join(model, "model.safetensors"), "32000"])
        check(from_c.returncode == 0, "model-library-c-test: " + from_c.stderr)

        steps = 12
        generate = [attn_run, model, "--prompt", "Hello world", "--temperature", "0",
                    "--max-new-tokens", str(steps), "--print-ids"] + common
        second = run(generate)
        check(second.returncode == 0, "attn-run failed: " + second.stderr)
        check("compiling" not in second.stderr, "the cached library was not reused")
        check("tok/s" in second.stderr, "no speed report: " + second.stderr)
        ids = json.loads(second.stderr.strip().splitlines()[-1])
        check(ids["prompt"] == [1, 22557, 1526],
              "the prompt's ids are not the tokenizer's: %s" % ids["prompt"])
        generated = ids["generated"]
        check(0 < len(generated) <= steps, "generated %s" % generated)

        reference = run([python, os.path.join(ROOT, "tools", "hf_reference.py"), model,
                         "--prompt", ",".join(map(str, ids["prompt"])),
                         "--steps", str(len(generated))])
        check(reference.returncode == 0, "hf_reference.py failed: " + reference.stderr)
        want = json.loads(reference.stdout)["tokens"]
        check(generated == want[:len(generated)],
              "greedy tokens differ from the reference:\n  attn-run  %s\n  reference %s"
              % (generated, want))
        print("attn-run: %d greedy tokens identical to tools/hf_reference.py; text: %r"
              % (len(generated), second.stdout))

        # The weights laid out by that run were kept beside the library: the
        # next start maps them and generates the same tokens; without them
        # (--no-packed-weights) the checkpoint is laid out again.
        check("weights laid out from" in second.stderr and "written to" in second.stderr,
              "the laid-out weights were not kept: " + second.stderr)
        for args, source in (([], "weights mapped from"),
                             (["--no-packed-weights"], "weights laid out from")):
            again = run(generate + args)
            check(again.returncode == 0, "attn-run failed: " + again.stderr)
            check(source in again.stderr and (args == [] or "packed" not in again.stderr),
                  "%s: expected '%s': %s" % (args, source, again.stderr))
            check(json.loads(again.stderr.strip().splitlines()[-1]) == ids,
                  "%s: other tokens: %s" % (args, again.stderr))

        # --stop: the text ends just before the stop string.
        text = second.stdout.rstrip("\n")
        if len(text) >= 4:
            stop = text[len(text) // 2:len(text) // 2 + 2]
            cut = run(generate + ["--stop", stop])
            check(cut.returncode == 0, "--stop failed: " + cut.stderr)
            check(cut.stdout.rstrip("\n") == text[:text.find(stop)],
                  "--stop %r gave %r from %r" % (stop, cut.stdout, text))
            check("stopped: stop string" in cut.stderr, "no stop reported: " + cut.stderr)

        # --chat: the prompt becomes a user message in the model's template;
        # the ids are those of the text Jinja2 renders (its "<s>" is BOS).
        chatted = run([attn_run, model, "--chat", "--system", "Be brief.", "--prompt", "Hi!",
                       "--temperature", "0", "--max-new-tokens", "4", "--print-ids"] + common)
        check(chatted.returncode == 0, "--chat failed: " + chatted.stderr)
        rendered = render_chat([{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi!"}])
        check(rendered.startswith("<s>"), "the template's text: %r" % rendered)
        plain = run([attn_run, model, "--prompt", rendered[len("<s>"):], "--temperature", "0",
                     "--max-new-tokens", "4", "--print-ids"] + common)
        chat_ids = json.loads(chatted.stderr.strip().splitlines()[-1])
        plain_ids = json.loads(plain.stderr.strip().splitlines()[-1])
        check(chat_ids == plain_ids, "--chat %s, the rendered prompt %s" % (chat_ids, plain_ids))

        # The same model as one GGUF file (tools/gguf_writer.py: the bf16
        # weights, Q and K rows paired as llama.cpp's converter writes them,
        # the tokenizer and chat template as tokenizer.ggml.* metadata):
        # compiled from the file, its tokenizer read from it, the same ids.
        gguf = os.path.join(work, "model.gguf")
        converted = run([python, os.path.join(ROOT, "tools", "gguf_writer.py"), "convert",
                         model, gguf, "--type", "bf16"])
        check(converted.returncode == 0, "gguf_writer.py failed: " + converted.stderr)
        for source in ("weights laid out from", "weights mapped from"):
            from_file = run([attn_run, gguf] + generate[2:])
            check(from_file.returncode == 0 and source in from_file.stderr,
                  "attn-run on a GGUF file (%s): %s" % (source, from_file.stderr))
            check(json.loads(from_file.stderr.strip().splitlines()[-1]) == ids,
                  "the GGUF file's ids differ from the folder's: " + from_file.stderr)
        gguf_chat = run([attn_run, gguf, "--chat", "--system", "Be brief.", "--prompt", "Hi!",
                         "--temperature", "0", "--max-new-tokens", "4", "--print-ids"] + common)
        check(gguf_chat.returncode == 0 and
              json.loads(gguf_chat.stderr.strip().splitlines()[-1]) == chat_ids,
              "--chat from the GGUF file's template: " + gguf_chat.stderr)
        print("attn-run: the model as a GGUF file gives the folder's ids")

        # Bad input: clear errors, exit status 1.
        missing = run([attn_run, os.path.join(work, "nowhere")] + common)
        check(missing.returncode == 1 and "config.json: cannot be read" in missing.stderr,
              "a folder without config.json: " + missing.stderr)
        broken = os.path.join(work, "libbroken.so")
        with open(broken, "wb") as f:
            f.write(b"not a shared library")
        bad = run([os.path.join(bin_dir, "write-random-checkpoint"), broken,
                   os.path.join(work, "x.safetensors")])
        check(bad.returncode == 1 and "cannot be loaded" in bad.stderr,
              "a broken library: " + bad.stderr)
        wrong = run([attn_run, model, "--prompt", "x", "--kv-dtype", "f8"] + common)
        check(wrong.returncode == 1 and "attnc failed" in wrong.stderr,
              "attnc's refusal is not reported: " + wrong.stderr)

        # Mixtures of experts from their folders: Mixtral's (text_mixtral:
        # 8 experts, 2 a token), DeepSeek-V3's (text_deepseek: latent
        # attention with a low-rank query, sigmoid routing in groups, a
        # shared expert) and gpt-oss's (text_gpt_oss: sinks, sliding and
        # full layers, biased experts stacked in one tensor, the clamped
        # SwiGLU): the reference's greedy tokens, then the same from the
        # packed weights (the routers, and W_uk and W_uv, among them).
        for family, name in (("text_mixtral", "Mixtral"), ("text_deepseek", "DeepSeek-V3"),
                             ("text_gpt_oss", "gpt-oss")):
            moe, moe_cache, compiled = make_model_folder(work, bin_dir, data, family)
            check(compiled.returncode == 0, name + " compile-only failed: " + compiled.stderr)
            moe_run = [attn_run, moe, "--prompt", "Hello world", "--temperature", "0",
                       "--max-new-tokens", str(steps), "--print-ids", "--cache-dir", moe_cache]
            for source in ("weights laid out from", "weights mapped from"):
                result = run(moe_run)
                check(result.returncode == 0 and source in result.stderr,
                      "%s (%s): %s" % (name, source, result.stderr))
                moe_ids = json.loads(result.stderr.strip().splitlines()[-1])
                reference = run([python, os.path.join(ROOT, "tools", "hf_reference.py"), moe,
                                 "--prompt", ",".join(map(str, moe_ids["prompt"])),
                                 "--steps", str(len(moe_ids["generated"]))])
                check(reference.returncode == 0, "hf_reference.py failed: " + reference.stderr)
                check(moe_ids["generated"] == json.loads(reference.stdout)["tokens"],
                      "%s's greedy tokens differ from the reference: %s, %s"
                      % (name, moe_ids["generated"], reference.stdout))
            print("attn-run: a %s folder's %d greedy tokens identical to the reference"
                  % (name, len(moe_ids["generated"])))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
