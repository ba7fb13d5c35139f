#!/usr/bin/python3
"""Times the translator in PyTorch eager, beside attn-translate-bench.

The same model (tools/train_translator.py's module, weights from
examples/translate/model/translator.safetensors), the same inputs (the first
32 numerals of model/test.tsv), greedy decoding at batch 1 (one numeral at a
time) and batch 32. Two decoders: recomputing the whole prefix every step (how
train_translator.py decodes), and incremental decoding with a KV cache (self
K/V appended per step, cross K/V computed once) -- the fair comparison.
Prints tokens/s and ms per decoded token (words plus <eos>), medians of 5 runs.

Usage: /usr/bin/python3 tools/bench_translate_torch.py [--threads 2]
"""

import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_translator as tt  # noqa: E402

MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "examples", "translate", "model")


def load(model, path):
    data = open(path, "rb").read()
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    state = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensor = torch.frombuffer(bytearray(body[begin:end]), dtype=torch.float32)
        key = name[len("model."):] if name.startswith("model.") else name
        state[key] = tensor.reshape(entry["shape"])
    model.load_state_dict(state)


@torch.no_grad()
def greedy_cached(model, source):
    """Incremental decoding: each step runs one token per sequence."""
    padding = source == tt.PAD
    memory = model.encoder(source, padding)
    b = source.shape[0]
    hd = tt.D_MODEL // tt.HEADS
    dec = model.decoder

    def heads(x):
        return x.view(b, -1, tt.HEADS, hd).transpose(1, 2)

    cross = [(heads(layer.encoder_attn.k_proj(memory)),
              heads(layer.encoder_attn.v_proj(memory))) for layer in dec.layers]
    cache = [[None, None] for _ in dec.layers]
    token = torch.full((b, 1), tt.BOS)
    done = torch.zeros(b, dtype=torch.bool)
    out = []
    for step in range(tt.MAX_TARGET - 1):
        x = dec.embed_tokens(token) + dec.positions[step:step + 1]
        for i, layer in enumerate(dec.layers):
            h = layer.self_attn_layer_norm(x)
            a = layer.self_attn
            q, k, v = heads(a.q_proj(h)), heads(a.k_proj(h)), heads(a.v_proj(h))
            if cache[i][0] is not None:
                k = torch.cat([cache[i][0], k], 2)
                v = torch.cat([cache[i][1], v], 2)
            cache[i] = [k, v]
            w = (q @ k.transpose(-1, -2) / math.sqrt(hd)).softmax(-1)
            x = x + a.out_proj((w @ v).transpose(1, 2).reshape(b, 1, tt.D_MODEL))
            h = layer.encoder_attn_layer_norm(x)
            c = layer.encoder_attn
            q = heads(c.q_proj(h))
            logits = q @ cross[i][0].transpose(-1, -2) / math.sqrt(hd)
            logits = logits.masked_fill(padding[:, None, None, :], -1e30)
            x = x + c.out_proj((logits.softmax(-1) @ cross[i][1])
                               .transpose(1, 2).reshape(b, 1, tt.D_MODEL))
            h = layer.final_layer_norm(x)
            x = x + layer.fc2(torch.nn.functional.gelu(layer.fc1(h), approximate="tanh"))
        next_token = model.lm_head(dec.layer_norm(x))[:, -1].argmax(-1)
        next_token = torch.where(done, torch.full_like(next_token, tt.PAD), next_token)
        out.append(next_token)
        done |= next_token == tt.EOS
        if done.all():
            break
        token = next_token[:, None]
    rows = torch.stack(out, 1).tolist()
    return [[t for t in row if t != tt.PAD] for row in rows]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model-dir", default=MODEL_DIR)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = tt.Translator()
    load(model, os.path.join(args.model_dir, "translator.safetensors"))
    model.eval()
    numerals = [line.split("\t")[0] for line in
                open(os.path.join(args.model_dir, "test.tsv"), encoding="utf-8")][:32]
    numbers = [int(n) for n in numerals]
    print(f"torch {torch.__version__}, {args.threads} threads, 32 inputs")
    source, _, _ = tt.batch(numbers)
    same = model.greedy(source) == greedy_cached(model, source)
    print(f"cached and recomputing decoders agree: {same}")
    for name, decode in (("recompute", model.greedy),
                         ("kv-cache", lambda s: greedy_cached(model, s))):
        for batch in (1, 32):
            times, tokens = [], 0
            for _ in range(5):
                tokens = 0
                start = time.perf_counter()
                for first in range(0, len(numbers), batch):
                    source, _, _ = tt.batch(numbers[first:first + batch])
                    for row in decode(source):
                        tokens += len(row)  # words plus <eos>
                times.append(time.perf_counter() - start)
            t = statistics.median(times)
            print(f"pytorch eager {name:9s} batch {batch:2d}: {tokens / t:8.0f} tokens/s, "
                  f"{1000 * t / tokens:.3f} ms/token")


if __name__ == "__main__":
    main()
