#!/usr/bin/env python3
"""The same GGUF file in attnc and in llama.cpp.

Model folders as Hugging Face publishes them (test/apps/model_folder.py: the
Llama 2-style SentencePiece tokenizer, random bf16 weights): a Llama
(text_llama: Q and K rows paired in the file, as llama.cpp's converter writes
them), a Llama 3 (text_llama3: its rope_scaling as the file's rope_freqs.weight,
which attnc reads as per-pair frequency divisors) and a Qwen3 (text_qwen3:
QK-norm, head_dim 64/4 != 32, tied head), a Gemma 3 (text_gemma3: norms
stored as 1 + w, sandwich norms, QK-norm, five local layers of six with a
window of 8, linear RoPE scaling on the global ones), an OLMo 2 (text_olmo2:
norms after each sublayer only, QK-norm over the whole projection), a Phi-3
(text_phi3: Q|K|V and gate|up fused, 12 of 16 channels rotating, LongRoPE's
short factors and its attention factor past a pretrained context of 512 —
llama.cpp picks the long factors by its context size of 256, transformers
by the sequence's length, so the two agree below 256 tokens) and a Gemma 2
(text_gemma2: soft-caps 50 and 30, every other layer local; its seed's
greedy path keeps the two best logits 7.6e-2 apart, where llama.cpp's fp16
GELU table, ~1e-3 relative, cannot part them), each written by
tools/gguf_writer.py as one GGUF file in F32, BF16, Q8_0 and Q4_0 (the Llama
in Q4_1 and Q5_0 too, the Qwen3 in Q4_K_M, whose rows of 64 are not whole
super-blocks: Q5_0 and Q8_0 as llama.cpp's quantizer falls back; Gemma 2 in
F32 and BF16), and a
Llama of rows that hold whole 256-value super-blocks (text_llama_k) in Q6_K
and Q4_K, and in Q4_0 and Q4_K with the head in Q6_K (as llama.cpp's quantizer
writes most files: KIND+HEAD), and in Q4_K_M (llama.cpp's mix: Q4_K, but Q6_K
for the head and for layer 1's V and down projections). attn-run
compiles the file, reads its weights and tokenizer and decodes greedily from a
text prompt; llama.cpp (node-llama-cpp's prebuilt CPU build, tools/gguf-peer.mjs)
decodes the same prompt ids from the same file; tools/hf_reference.py (float64)
runs the values the file stores (gguf_writer.py --dequantized). Each of attnc
and llama.cpp must give the reference's greedy tokens up to the first step
whose two best reference logits lie within TIE of each other (both compute
from rounded activations — llama.cpp in Q8_0/Q8_1/Q8_K blocks, attnc in
bf16 products or int16/int8 per group — so such a near tie of random
weights' logits may go either way, and the sequences part there), and at
attnc and llama.cpp the same tokens as each other up to that step — for the
F32 and BF16 files all STEPS of them (float weights on both sides: no tie has
parted them). The BF16 file's tokens must also be attn-run's on the folder
itself (its config.json: Llama 3's rule computed from its keys, not read from
the file).

Usage: gguf_llamacpp_test.py BIN_DIR TOKENIZER_DATA PYTHON_WITH_NUMPY LLAMACPP_DATA
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from model_folder import Checks, make_model_folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
check = Checks()
STEPS = 12
# Logits closer than this are a tie (bf16 products: 3e-2 in hf-reference-test;
# llama.cpp's Q8_K activations measured 1e-2 off).
TIE = 3e-2


def agreed(tokens, reference):
    """Steps of `tokens` equal to the reference's greedy tokens, and whether
    the first step that differs is a near tie of the reference's logits."""
    same = 0
    while same < len(tokens) and tokens[same] == reference["tokens"][same]:
        same += 1
    if same == len(tokens):
        return same, True
    best = sorted(reference["logits"][same], reverse=True)[:2]
    return same, best[0] - best[1] < TIE


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def main():
    bin_dir, data, python, peer = sys.argv[1:5]
    work = tempfile.mkdtemp(prefix="gguf-llamacpp-test.")
    environment = dict(os.environ, NODE_PATH=os.path.join(peer, "node_modules"))
    try:
        for family, kinds in (("text_llama", ("f32", "bf16", "q8_0", "q4_0", "q4_1", "q5_0")),
                              ("text_llama3", ("f32", "bf16", "q8_0", "q4_0")),
                              ("text_qwen3", ("f32", "bf16", "q8_0", "q4_0", "q4_k_m")),
                              ("text_gemma3", ("f32", "bf16", "q8_0", "q4_0")),
                              ("text_gemma2", ("f32", "bf16")),
                              ("text_olmo2", ("f32", "bf16", "q8_0", "q4_0")),
                              ("text_phi3", ("f32", "bf16", "q8_0", "q4_0", "q4_k_m")),
                              ("text_llama_k", ("q6_k", "q4_k", "q4_0+q6_k",
                                                "q4_k+q6_k", "q4_k_m"))):
            folder, cache, compiled = make_model_folder(work, bin_dir, data, family)
            check(compiled.returncode == 0, family + ": compile-only failed: " + compiled.stderr)
            # attnc on the folder (its bf16 weights, which the BF16 file holds).
            direct = run([os.path.join(bin_dir, "attn-run"), folder, "--prompt", "Hello world",
                          "--temperature", "0", "--max-new-tokens", str(STEPS),
                          "--print-ids", "--cache-dir", cache])
            check(direct.returncode == 0, "attn-run %s: %s" % (folder, direct.stderr))
            for kind in kinds:
                gguf = os.path.join(work, "%s-%s.gguf" % (family, kind))
                stored = os.path.join(work, "%s-%s.stored" % (family, kind))
                blocks, _, head = kind.partition("+")
                written = run([python, os.path.join(ROOT, "tools", "gguf_writer.py"), "convert",
                               folder, gguf, "--type", blocks, "--dequantized", stored]
                              + (["--head-type", head] if head else []))
                check(written.returncode == 0, "gguf_writer.py: " + written.stderr)
                ours = run([os.path.join(bin_dir, "attn-run"), gguf, "--prompt", "Hello world",
                            "--temperature", "0", "--max-new-tokens", str(STEPS),
                            "--print-ids", "--cache-dir", cache])
                check(ours.returncode == 0, "attn-run %s: %s" % (gguf, ours.stderr))
                if ours.returncode != 0:
                    continue
                ids = json.loads(ours.stderr.strip().splitlines()[-1])
                check(ids["prompt"] == [1, 22557, 1526],
                      "the file's tokenizer gave %s" % ids["prompt"])
                if kind == "bf16" and direct.returncode == 0:
                    folder_ids = json.loads(direct.stderr.strip().splitlines()[-1])
                    check(folder_ids["generated"] == ids["generated"],
                          "%s: the folder gave %s, its BF16 file %s"
                          % (family, folder_ids["generated"], ids["generated"]))
                theirs = run(["node", os.path.join(ROOT, "tools", "gguf-peer.mjs"), "greedy", gguf,
                              ",".join(map(str, ids["prompt"])), str(len(ids["generated"]))],
                             env=environment)
                check(theirs.returncode == 0, "llama.cpp on %s: %s" % (gguf, theirs.stderr))
                if theirs.returncode != 0:
                    continue
                tokens = json.loads(theirs.stdout)["tokens"]
                computed = run([python, os.path.join(ROOT, "tools", "hf_reference.py"), stored,
                                "--prompt", ",".join(map(str, ids["prompt"])),
                                "--steps", str(STEPS)])
                check(computed.returncode == 0, "hf_reference.py: " + computed.stderr)
                if computed.returncode != 0:
                    continue
                reference = json.loads(computed.stdout)
                ours_same, ours_tie = agreed(ids["generated"], reference)
                theirs_same, theirs_tie = agreed(tokens, reference)
                shared = min(ours_same, theirs_same)
                whole = kind in ("f32", "bf16")
                check(ours_tie and theirs_tie and len(tokens) == STEPS
                      and ids["generated"][:shared] == tokens[:shared]
                      and (not whole or ids["generated"] == tokens),
                      "%s %s: reference %s, attnc %s, llama.cpp %s"
                      % (family, kind, reference["tokens"], ids["generated"], tokens))
                print("%s %s: attnc %d and llama.cpp %d of %d greedy tokens as the reference's "
                      "(then a near tie)" % (family, kind, ours_same, theirs_same, STEPS)
                      if shared < STEPS else
                      "%s %s: attnc and llama.cpp %d of %d greedy tokens as the reference's"
                      % (family, kind, shared, STEPS))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
