#!/usr/bin/env python3
"""Writes GGUF files for tests, from the format's published description
(ggml's docs/gguf.md; the block layouts of ggml-common.h), and decodes its
quantized blocks in float64.

File: "GGUF", uint32 version (3), uint64 tensor count, uint64 metadata count;
metadata (string key, uint32 type, value); tensor infos (string name, uint32
n_dims, uint64 ne[n_dims] with ne[0] the contiguous dimension, uint32 ggml
type, uint64 offset from the data section); padding to general.alignment
(32); the data, each tensor at an aligned offset. Strings: uint64 length,
UTF-8 bytes. Little-endian throughout.

Blocks (32 values each):
  Q8_0  float16 d, int8 q[32]:                  x = d q
  Q4_0  float16 d, uint8 qs[16]: value j < 16 in the low nibble of byte j,
        value j + 16 in its high nibble:          x = d (q - 8)
  Q4_1  float16 d, float16 m, uint8 qs[16] (as Q4_0's): x = d q + m
  Q5_0  float16 d, uint8 qh[4], uint8 qs[16]: 5-bit q, its low 4 bits as
        Q4_0's, bit 4 of value j bit j of qh (little-endian):
                                                  x = d (q - 16)
  Q5_1  float16 d, float16 m, uint8 qh[4], uint8 qs[16] (as Q5_0's):
                                                  x = d q + m
Super-blocks (256 values each):
  Q4_K  float16 d, float16 dmin, uint8 scales[12], uint8 qs[128]; 8
        sub-blocks of 32 with 6-bit sc and m: for j < 4 the low 6 bits of
        scales[j] and scales[j + 4], for j >= 4 the low and high nibbles of
        scales[j + 4] with the top 2 bits of scales[j - 4] and scales[j] as
        bits 4-5; value 64c + l (l < 32) the low nibble of qs[32c + l]
        (sub-block 2c), value 64c + 32 + l its high nibble (2c + 1):
                                                  x = d sc q - dmin m
  Q6_K  uint8 ql[128], uint8 qh[64], int8 scales[16], float16 d; 6-bit q,
        16 sub-blocks of 16 consecutive values:
        in each half h of 128 values (ql[64h..], qh[32h..]), value
        128h + 32t + l (t < 4, l < 32) has the low nibble (t < 2) or high
        nibble (t >= 2) of ql[64h + 32(t % 2) + l] as its low 4 bits and
        bits 2t, 2t + 1 of qh[32h + l] as its high 2:
                                                  x = d scales[v / 16] (q - 32)
The encoders round as ggml's reference quantizers do (Q4_0: d = the value of
largest magnitude / -8, Q5_0 the same / -16; Q8_0: d = max |x| / 127; Q4_1:
m = the least value, d = the range / 15, Q5_1 the range / 31) or more simply (Q6_K: a sub-block's scale max
|x| / 31 rounded to a multiple of d = the largest / 127; Q4_K: a
sub-block's range / 15 and its least value (at most 0) rounded to
multiples of d and dmin = the largest / 63); any valid block decodes the
same way, so only the decoders below state the format.

Usage:
  gguf_writer.py convert MODEL_DIR OUT.gguf
      [--type f32|f16|bf16|q8_0|q5_0|q5_1|q4_0|q4_1|q4_k|q6_k|q4_k_m]
      [--dequantized DIR]
    A Hugging Face llama / mistral / qwen2 / qwen3 / gemma2 / gemma3_text /
    olmo2 / phi3 folder (config.json, safetensors, and its tokenizer where it
    has tokenizer.json: vocab below) as llama.cpp's converter names and lays
    it out: arch llama for llama and mistral (Q and K rows permuted to GGML's
    interleaved RoPE pairs; Llama 3's rope_scaling as rope_freqs.weight),
    the others under their own names (Gemma's norms stored as 1 + w; Gemma's
    and OLMo 2's norms after a sublayer as post_attention_norm and
    post_ffw_norm; Phi-3's fused qkv_proj and gate_up_proj as attn_qkv and
    ffn_up, its LongRoPE factors as rope_factors_long/short.weight).
    --type quantizes the 2-D weights (the embedding and output head among
    them); norms and biases stay float32. As llama.cpp's quantizer, a
    tensor whose rows are not whole super-blocks of 256 takes Q5_0 for
    Q4_K and Q8_0 for Q6_K (and F16 where its rows are not whole blocks).
    q4_k_m is llama.cpp's mix of that name as its quantizer's rules read:
    Q4_K, but Q6_K for the output head and for attn_v (attn_qkv) and
    ffn_down in layers i of n where i < n/8, i >= 7n/8 or
    (i - n/8) % 3 == 2. --tensor-type REGEX=TYPE (repeatable, the last
    match wins) gives the tensors whose GGUF names match a type of their
    own.
    --dequantized writes DIR/model.safetensors (float32) and config.json:
    the same model with each quantized weight as its blocks decode, in
    Hugging Face's layout, for tools/hf_reference.py.
  gguf_writer.py random CONFIG OUT.gguf [--type T]
    The same from a config.json alone, with random weights.
  Both take --meta KEY=TYPE:VALUE (set a metadata key; types u8 … f64,
  bool, str) and --drop NAME (leave out a key or tensor), repeatable, and
  --head-type T (output.weight's type), and --rope-freqs V,V,... (Llama 3's
  rope_freqs.weight as given, for the reader's error tests).
  gguf_writer.py broken KIND OUT
    A small file broken as KIND says (the reader's error tests):
    magic, version, truncated, key-overflow, array-overflow, tensor-range,
    misaligned, duplicate-key, duplicate-tensor, bool, type, dims, overlap,
    alignment, arch-type.
  gguf_writer.py vocab FOLDER OUT.gguf
    The tokenizer of FOLDER (tokenizer.json, tokenizer_config.json) as GGUF
    metadata, in a file of no tensors (convert adds the same to a model).
  gguf_writer.py values OUT.gguf
    Metadata of every value type, and one tensor of each supported type with
    random blocks; prints the decoded tensors as JSON ({name: [floats]}).
"""

import argparse
import json
import os
import re
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import read_checkpoint, write_safetensors  # noqa: E402

# Metadata value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
          F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
# ggml tensor types: number, values a block, bytes a block.
GGML = {"f32": (0, 1, 4), "f16": (1, 1, 2), "q4_0": (2, 32, 18),
        "q4_1": (3, 32, 20), "q5_0": (6, 32, 22), "q5_1": (7, 32, 24),
        "q8_0": (8, 32, 34), "q4_k": (12, 256, 144),
        "q6_k": (14, 256, 210), "bf16": (30, 1, 2)}


def string(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def value(kind, v):
    if kind == STRING:
        return string(v)
    if kind == ARRAY:
        element, items = v
        return struct.pack("<IQ", element, len(items)) + b"".join(
            value(element, item) for item in items)
    return struct.pack(SCALAR[kind], v)


def write(path, metadata, tensors, alignment=32, version=3):
    """metadata: [(key, type, value)] (arrays: (element type, items));
    tensors: [(name, type name, ne list, bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata)))
    for key, kind, v in metadata:
        out += string(key) + struct.pack("<I", kind) + value(kind, v)
    offset, blobs = 0, []
    for name, kind, ne, blob in tensors:
        out += string(name) + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", GGML[kind][0], offset)
        blobs.append((offset, blob))
        offset += len(blob) + (-len(blob) % alignment)
    out += b"\0" * (-len(out) % alignment)
    start = len(out)
    for at, blob in blobs:
        out += b"\0" * (start + at - len(out)) + blob
    with open(path, "wb") as f:
        f.write(out)


def f16(x):
    return np.asarray(x, dtype=np.float32).astype("<f2")


def bf16_bits(x):
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype("<u2")


def encode(x, kind):
    """The bytes of x (float array, rows of whole blocks) as `kind`."""
    x = np.asarray(x, dtype=np.float32)
    if kind == "f32":
        return x.astype("<f4").tobytes()
    if kind == "f16":
        return f16(x).tobytes()
    if kind == "bf16":
        return bf16_bits(x).tobytes()
    if kind == "q6_k":
        return encode_q6_k(x.reshape(-1, 256))
    if kind == "q4_k":
        return encode_q4_k(x.reshape(-1, 256))
    if kind == "q4_1":
        blocks = x.reshape(-1, 32)
        m = blocks.min(axis=1)
        d = f16((blocks.max(axis=1) - m) / 15).astype(np.float32)
        m = f16(m).astype(np.float32)
        safe = np.where(d != 0, d, 1)
        q = np.where(d[:, None] != 0, np.round((blocks - m[:, None]) / safe[:, None]), 0)
        q = np.clip(q, 0, 15).astype(np.uint8)
        out = np.empty((len(blocks), 20), np.uint8)
        out[:, :2] = f16(d).view(np.uint8).reshape(-1, 2)
        out[:, 2:4] = f16(m).view(np.uint8).reshape(-1, 2)
        out[:, 4:] = q[:, :16] | (q[:, 16:] << 4)
        return out.tobytes()
    if kind in ("q5_0", "q5_1"):
        return encode_q5(x.reshape(-1, 32), kind)
    blocks = x.reshape(-1, 32)
    if kind == "q8_0":
        d = np.abs(blocks).max(axis=1) / 127
        safe = np.where(d != 0, d, 1)
        q = np.where(d[:, None] != 0, np.round(blocks / safe[:, None]), 0).astype(np.int8)
        out = np.empty((len(blocks), 34), np.uint8)
        out[:, :2] = f16(d).view(np.uint8).reshape(-1, 2)
        out[:, 2:] = q.view(np.uint8)
        return out.tobytes()
    # q4_0
    extreme = blocks[np.arange(len(blocks)), np.argmax(np.abs(blocks), axis=1)]
    d = extreme / -8
    safe = np.where(d != 0, d, 1)
    q = np.where(d[:, None] != 0, np.minimum(15, np.floor(blocks / safe[:, None] + 8.5)), 8)
    q = q.astype(np.uint8)
    out = np.empty((len(blocks), 18), np.uint8)
    out[:, :2] = f16(d).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def encode_q5(blocks, kind):
    if kind == "q5_0":
        extreme = blocks[np.arange(len(blocks)), np.argmax(np.abs(blocks), axis=1)]
        d = f16(extreme / -16).astype(np.float32)
        safe = np.where(d != 0, d, 1)
        q = np.where(d[:, None] != 0, np.minimum(31, np.floor(blocks / safe[:, None] + 16.5)), 16)
        head = f16(d).view(np.uint8).reshape(-1, 2)
    else:
        m = blocks.min(axis=1)
        d = f16((blocks.max(axis=1) - m) / 31).astype(np.float32)
        m = f16(m).astype(np.float32)
        safe = np.where(d != 0, d, 1)
        q = np.where(d[:, None] != 0, np.round((blocks - m[:, None]) / safe[:, None]), 0)
        head = np.concatenate([f16(d).view(np.uint8).reshape(-1, 2),
                               f16(m).view(np.uint8).reshape(-1, 2)], axis=1)
    q = np.clip(q, 0, 31).astype(np.uint32)
    high = ((q >> 4) << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
    q = (q & 15).astype(np.uint8)
    out = np.concatenate([head, high.astype("<u4").view(np.uint8).reshape(-1, 4),
                          q[:, :16] | (q[:, 16:] << 4)], axis=1)
    return out.tobytes()


def decode_q5(blocks, kind):
    d = blocks[:, :2].copy().view("<f2").astype(np.float64)       # [n][1]
    at = 2 if kind == "q5_0" else 4
    high = blocks[:, at:at + 4].copy().view("<u4").astype(np.int64)  # [n][1]
    qs = blocks[:, at + 4:].astype(np.int64)
    q = np.concatenate([qs & 15, qs >> 4], axis=1) | (((high >> np.arange(32)) & 1) << 4)
    if kind == "q5_0":
        return (d * (q - 16)).reshape(-1)
    return (d * q + blocks[:, 2:4].copy().view("<f2").astype(np.float64)).reshape(-1)


def encode_q6_k(blocks):
    sub = blocks.reshape(len(blocks), 16, 16)
    s = np.abs(sub).max(axis=2) / 31                       # [n][16]
    d = f16(s.max(axis=1) / 127).astype(np.float32)        # [n]
    safe_d = np.where(d != 0, d, 1)
    sc = np.where(d[:, None] != 0, np.round(s / safe_d[:, None]), 0)
    sc = np.clip(sc, -128, 127).astype(np.int8)
    step = d[:, None] * sc                                 # [n][16]
    safe = np.where(step != 0, step, 1)[:, :, None]
    q = np.where(step[:, :, None] != 0, np.round(sub / safe), 0)
    q = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(len(blocks), 256)
    out = np.zeros((len(blocks), 210), np.uint8)
    for h in range(2):
        part = q[:, 128 * h:128 * (h + 1)]
        quarter = [part[:, 32 * t:32 * (t + 1)] for t in range(4)]
        out[:, 64 * h:64 * h + 32] = (quarter[0] & 15) | ((quarter[2] & 15) << 4)
        out[:, 64 * h + 32:64 * h + 64] = (quarter[1] & 15) | ((quarter[3] & 15) << 4)
        out[:, 128 + 32 * h:128 + 32 * (h + 1)] = sum(
            (quarter[t] >> 4) << (2 * t) for t in range(4))
    out[:, 192:208] = sc.view(np.uint8)
    out[:, 208:210] = f16(d).view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def encode_q4_k(blocks):
    sub = blocks.reshape(len(blocks), 8, 32)
    lo = np.minimum(sub.min(axis=2), 0)                    # [n][8], <= 0
    scale = (sub.max(axis=2) - lo) / 15
    d = f16(scale.max(axis=1) / 63).astype(np.float32)
    dmin = f16(-lo.min(axis=1) / 63).astype(np.float32)
    sc = np.clip(np.round(scale / np.where(d != 0, d, 1)[:, None]), 0, 63).astype(np.uint8)
    m = np.clip(np.round(-lo / np.where(dmin != 0, dmin, 1)[:, None]), 0, 63).astype(np.uint8)
    step = d[:, None] * sc
    least = -(dmin[:, None] * m)
    q = np.where(step[:, :, None] != 0,
                 np.round((sub - least[:, :, None]) / np.where(step != 0, step, 1)[:, :, None]), 0)
    q = np.clip(q, 0, 15).astype(np.uint8).reshape(len(blocks), 256)
    out = np.zeros((len(blocks), 144), np.uint8)
    out[:, :2] = f16(d).view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = f16(dmin).view(np.uint8).reshape(-1, 2)
    packed = np.zeros((len(blocks), 12), np.uint8)
    for j in range(4):
        packed[:, j] = (sc[:, j] & 63) | ((sc[:, j + 4] >> 4) << 6)
        packed[:, j + 4] = (m[:, j] & 63) | ((m[:, j + 4] >> 4) << 6)
        packed[:, j + 8] = (sc[:, j + 4] & 15) | ((m[:, j + 4] & 15) << 4)
    out[:, 4:16] = packed
    for c in range(4):
        out[:, 16 + 32 * c:16 + 32 * (c + 1)] = (
            q[:, 64 * c:64 * c + 32] | (q[:, 64 * c + 32:64 * c + 64] << 4))
    return out.tobytes()


def decode_q4_k(blocks):
    d = blocks[:, :2].copy().view("<f2").astype(np.float64)       # [n][1]
    dmin = blocks[:, 2:4].copy().view("<f2").astype(np.float64)
    packed = blocks[:, 4:16].astype(np.int64)
    sc, m = np.empty((len(blocks), 8)), np.empty((len(blocks), 8))
    for j in range(8):
        if j < 4:
            sc[:, j], m[:, j] = packed[:, j] & 63, packed[:, j + 4] & 63
        else:
            sc[:, j] = (packed[:, j + 4] & 15) | ((packed[:, j - 4] >> 6) << 4)
            m[:, j] = (packed[:, j + 4] >> 4) | ((packed[:, j] >> 6) << 4)
    qs = blocks[:, 16:144].astype(np.int64)
    q = np.empty((len(blocks), 256))
    for c in range(4):
        q[:, 64 * c:64 * c + 32] = qs[:, 32 * c:32 * c + 32] & 15
        q[:, 64 * c + 32:64 * c + 64] = qs[:, 32 * c:32 * c + 32] >> 4
    scale = np.repeat(d * sc, 32, axis=1)
    least = np.repeat(dmin * m, 32, axis=1)
    return (scale * q - least).reshape(-1)


def decode_q6_k(blocks):
    ql, qh = blocks[:, :128].astype(np.int64), blocks[:, 128:192].astype(np.int64)
    sc = blocks[:, 192:208].copy().view(np.int8).astype(np.float64)
    d = blocks[:, 208:210].copy().view("<f2").astype(np.float64)  # [n][1]
    q = np.empty((len(blocks), 256), np.int64)
    for h in range(2):
        for t in range(4):
            low = ql[:, 64 * h + 32 * (t % 2):64 * h + 32 * (t % 2) + 32]
            low = low & 15 if t < 2 else low >> 4
            high = (qh[:, 32 * h:32 * h + 32] >> (2 * t)) & 3
            q[:, 128 * h + 32 * t:128 * h + 32 * t + 32] = low | (high << 4)
    return (d * np.repeat(sc, 16, axis=1) * (q - 32)).reshape(-1)


def decode(blob, kind, count):
    """float64 values of `count` elements stored as `kind`."""
    data = np.frombuffer(blob, dtype=np.uint8)
    if kind == "f32":
        return np.frombuffer(blob, "<f4")[:count].astype(np.float64)
    if kind == "f16":
        return np.frombuffer(blob, "<f2")[:count].astype(np.float64)
    if kind == "bf16":
        bits = np.frombuffer(blob, "<u2")[:count].astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    values, size = GGML[kind][1:]
    blocks = data[:count // values * size].reshape(-1, size)
    if kind == "q6_k":
        return decode_q6_k(blocks)
    if kind == "q4_k":
        return decode_q4_k(blocks)
    if kind in ("q5_0", "q5_1"):
        return decode_q5(blocks, kind)
    if kind == "q4_1":
        m = blocks[:, 2:4].copy().view("<f2").astype(np.float64)
        qs = blocks[:, 4:]
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float64)
        return (blocks[:, :2].copy().view("<f2").astype(np.float64) * q + m).reshape(-1)
    d = blocks[:, :2].copy().view("<f2").astype(np.float64)  # [blocks][1]
    if kind == "q8_0":
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float64)
        return (d * q).reshape(-1)
    qs = blocks[:, 2:]
    q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float64)
    return (d * (q - 8)).reshape(-1)


def permute(w, heads):
    """llama.cpp's converter's row order for Q and K: within each head,
    rotate_half's halves (row j and j + d/2) become adjacent pairs
    (rows 2j, 2j + 1), GGML's interleaved RoPE."""
    rows = w.shape[0]
    return (w.reshape(heads, 2, rows // heads // 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3",
        "gemma2": "gemma2", "gemma3_text": "gemma3", "olmo2": "olmo2", "phi3": "phi3"}
GEMMA = ("gemma2", "gemma3")
# Norms after each sublayer, under Gemma's names (OLMo 2 has no others).
POST_NORMS = GEMMA + ("olmo2",)
NAMES = [("model.embed_tokens", "token_embd"), ("model.norm", "output_norm"),
         ("lm_head", "output")]
BLOCK_NAMES = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"),
               ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
               ("self_attn.o_proj", "attn_output"), ("self_attn.qkv_proj", "attn_qkv"),
               ("self_attn.q_norm", "attn_q_norm"), ("mlp.gate_up_proj", "ffn_up"),
               ("self_attn.k_norm", "attn_k_norm"),
               ("post_attention_layernorm", "ffn_norm"), ("mlp.gate_proj", "ffn_gate"),
               ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")]


# Gemma's sandwich norms and OLMo 2's post-norms (looked up before BLOCK_NAMES).
GEMMA_BLOCK_NAMES = [("post_attention_layernorm", "post_attention_norm"),
                     ("pre_feedforward_layernorm", "ffn_norm"),
                     ("post_feedforward_layernorm", "post_ffw_norm")]


def gguf_name(name, arch):
    stem, _, suffix = name.rpartition(".")
    for hf, gg in NAMES:
        if stem == hf:
            return f"{gg}.{suffix}"
    parts = stem.split(".")
    if parts[:2] == ["model", "layers"]:
        rest = ".".join(parts[3:])
        for hf, gg in (GEMMA_BLOCK_NAMES if arch in POST_NORMS else []) + BLOCK_NAMES:
            if rest == hf:
                return f"blk.{parts[2]}.{gg}.{suffix}"
    raise SystemExit(f"gguf_writer.py: no GGUF name for {name}")


def hyperparameters(config):
    mt = config["model_type"]
    if mt not in ARCH:
        raise SystemExit(f"gguf_writer.py: model_type {mt} is not written")
    scaling = config.get("rope_scaling") or {}
    rule = scaling.get("rope_type", scaling.get("type"))
    if scaling and not (mt == "llama" and llama3_scaling(config)) and not (
            mt == "gemma3_text" and rule == "linear") and not (mt == "phi3" and rule == "longrope"):
        raise SystemExit("gguf_writer.py: rope_scaling other than Llama 3's "
                         "(or Gemma 3's linear, Phi-3's longrope) is not written")
    if mt in ("qwen2", "qwen3") and (config.get("use_sliding_window")
                                     or "sliding_attention" in config.get("layer_types", [])):
        raise SystemExit(f"gguf_writer.py: {mt}'s sliding window has no GGUF key")
    arch = ARCH[mt]
    d, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or d // heads
    meta = [("general.architecture", STRING, arch),
            ("general.name", STRING, "attnc test model"),
            (f"{arch}.context_length", U32, config["max_position_embeddings"]),
            (f"{arch}.embedding_length", U32, d),
            (f"{arch}.block_count", U32, config["num_hidden_layers"]),
            (f"{arch}.feed_forward_length", U32, config["intermediate_size"]),
            (f"{arch}.attention.head_count", U32, heads),
            (f"{arch}.attention.head_count_kv", U32,
             config.get("num_key_value_heads", heads)),
            (f"{arch}.rope.freq_base", F32, float(config.get("rope_theta", 10000))),
            (f"{arch}.attention.layer_norm_rms_epsilon", F32, float(config["rms_norm_eps"])),
            (f"{arch}.rope.dimension_count", U32,
             int(head_dim * config.get("partial_rotary_factor", 1.0)))]
    if head_dim != d // heads:
        meta += [(f"{arch}.attention.key_length", U32, head_dim),
                 (f"{arch}.attention.value_length", U32, head_dim)]
    if config.get("sliding_window") and mt == "mistral":
        meta.append((f"{arch}.attention.sliding_window", U32, config["sliding_window"]))
    if arch in GEMMA:
        meta += gemma_hyperparameters(config, arch, head_dim)
    if arch == "phi3":
        meta += phi3_hyperparameters(config)
    return arch, meta


def phi3_hyperparameters(config):
    """Phi-3's keys as llama.cpp's converter writes them: the pretrained
    context, the window (0: none) and, with LongRoPE, its attention factor
    (the config's, else sqrt(1 + ln s / ln L0) for s = the context over
    L0, as transformers computes it); the factors are tensors
    (phi3_tensors)."""
    positions = config["max_position_embeddings"]
    original = config.get("original_max_position_embeddings") or positions
    meta = [("phi3.rope.scaling.original_context_length", U32, original),
            ("phi3.attention.sliding_window", U32, config.get("sliding_window") or 0)]
    scaling = config.get("rope_scaling") or {}
    if scaling:
        s = positions / original
        factor = scaling.get("attention_factor") or (
            np.sqrt(1 + np.log(s) / np.log(original)) if s > 1 else 1.0)
        meta.append(("phi3.rope.scaling.attn_factor", F32, float(factor)))
    return meta


def gemma_hyperparameters(config, arch, head_dim):
    """Gemma's keys as llama.cpp's converter writes them: the local layers
    as a period (layer i local unless i % period == period - 1) where they
    have one, else a bool per layer, and Gemma 3's local RoPE base; refusing
    what llama.cpp fixes otherwise (it reads no query_pre_attn_scalar)."""
    if config.get("query_pre_attn_scalar", head_dim) != head_dim:
        raise SystemExit("gguf_writer.py: query_pre_attn_scalar other than "
                         "head_dim has no GGUF key")
    n = config["num_hidden_layers"]
    types = config.get("layer_types")
    if types:
        local = [t == "sliding_attention" for t in types]
    elif arch == "gemma2":
        local = [i % 2 == 0 for i in range(n)]
    else:
        pattern = config.get("sliding_window_pattern", 6)
        local = [(i + 1) % pattern != 0 for i in range(n)]
    periods = [p for p in range(1, n + 2) if local == [i % p < p - 1 for i in range(n)]]
    meta = [(f"{arch}.attention.sliding_window", U32, config["sliding_window"]),
            (f"{arch}.attention.sliding_window_pattern", U32, periods[0]) if periods else
            (f"{arch}.attention.sliding_window_pattern", ARRAY, (BOOL, local))]
    if arch == "gemma3":
        meta.append((f"{arch}.rope.freq_base_swa", F32,
                     float(config.get("rope_local_base_freq", 10000))))
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if config.get(key) is not None:
            if arch != "gemma2":
                raise SystemExit(f"gguf_writer.py: {key} has no {arch} GGUF key")
            meta.append((f"{arch}.{key}", F32, float(config[key])))
    scaling = config.get("rope_scaling") or {}
    if scaling:
        meta += [(f"{arch}.rope.scaling.type", STRING, "linear"),
                 (f"{arch}.rope.scaling.factor", F32, float(scaling["factor"]))]
    return meta


def llama3_scaling(config):
    """The config's rope_scaling if it is Llama 3's (rope_type llama3)."""
    scaling = config.get("rope_scaling") or {}
    return scaling if scaling.get("rope_type", scaling.get("type")) == "llama3" else None


def rope_freqs(config):
    """Llama 3's RoPE as llama.cpp's converter writes it: rope_freqs.weight
    [head_dim / 2], each channel pair's frequency divisor (transformers'
    llama3 rule: 1 where the wavelength is under original / high_freq_factor,
    `factor` where it is over original / low_freq_factor, and between them
    1 / ((1 - s) / factor + s) with s = (original / wavelength - low) /
    (high - low))."""
    scaling = llama3_scaling(config)
    heads = config["num_attention_heads"]
    dim = config.get("head_dim") or config["hidden_size"] // heads
    base = float(config.get("rope_theta", 10000))
    factor, low, high = (float(scaling[k]) for k in
                         ("factor", "low_freq_factor", "high_freq_factor"))
    original = float(scaling["original_max_position_embeddings"])
    divisors = []
    for i in range(0, dim, 2):
        wavelength = 2 * np.pi * base ** (i / dim)
        if wavelength < original / high:
            divisors.append(1.0)
        elif wavelength > original / low:
            divisors.append(factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            divisors.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(divisors, dtype=np.float32)


MIXES = ("q4_k_m",)
# llama.cpp's quantizer's type for a tensor whose rows are not whole
# super-blocks.
K_FALLBACK = {"q4_k": "q5_0", "q6_k": "q8_0"}


def tensor_type(g, kind, config, overrides=()):
    """The type a mix (or the last --tensor-type match) gives 2-D tensor g,
    or kind."""
    t = kind
    if kind == "q4_k_m":
        n = config["num_hidden_layers"]
        t = "q4_k"
        m = re.match(r"blk\.(\d+)\.(attn_v|attn_qkv|ffn_down)\.weight$", g)
        if m:
            i = int(m.group(1))
            if i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2:
                t = "q6_k"
        if g == "output.weight":
            t = "q6_k"
    for pattern, override in overrides:
        if re.search(pattern, g):
            t = override
    return t


def tensors_of(config, weights, kind, head=None, freqs=None, overrides=()):
    """[(gguf name, type, ne, bytes)] and {hf name: float64 as stored}."""
    arch, _ = hyperparameters(config)
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads", heads)
    # LlamaConfig, Qwen2Config, Qwen3Config; Gemma's tie by default
    tied = config.get("tie_word_embeddings", arch in GEMMA)
    out, stored = [], {}
    for name, w in weights.items():
        if name.endswith("rotary_emb.inv_freq") or (tied and name == "lm_head.weight"):
            continue
        w = np.asarray(w, dtype=np.float32)
        g = gguf_name(name, arch)
        if arch == "llama" and (".attn_q." in g or ".attn_k." in g):
            w = permute(w, heads if ".attn_q." in g else kv)
        # Gemma's norms multiply by (1 + w): stored so, in float32.
        offset = np.float32(1) if arch in GEMMA and g.endswith("norm.weight") else None
        if offset is not None:
            w = w + offset
        t = tensor_type(g, kind, config, overrides) if w.ndim == 2 else "f32"
        if t not in GGML:
            t = "f32"
        if t in GGML and w.shape[-1] % GGML[t][1]:
            t = K_FALLBACK.get(t, "f16")
        if t in GGML and w.shape[-1] % GGML[t][1]:
            t = "f16"
        if head and g == "output.weight":
            t = head
        blob = encode(w, t)
        back = decode(blob, t, w.size).reshape(w.shape)
        if arch == "llama" and (".attn_q." in g or ".attn_k." in g):
            # the inverse of permute: HF row order again
            n = heads if ".attn_q." in g else kv
            back = back.reshape(n, back.shape[0] // n // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)
        if offset is not None:
            back = back.astype(np.float64) - 1  # the reference's 1 + w is the stored value
        stored[name] = back
        out.append((g, t, list(reversed(w.shape)), blob))
    if llama3_scaling(config):
        freqs = rope_freqs(config) if freqs is None else np.array(freqs, dtype=np.float32)
        out.append(("rope_freqs.weight", "f32", [freqs.size], encode(freqs, "f32")))
    scaling = config.get("rope_scaling") or {}
    if arch == "phi3" and scaling:
        for which in ("long", "short"):
            factors = np.array(scaling[which + "_factor"], dtype=np.float32)
            out.append((f"rope_factors_{which}.weight", "f32", [factors.size],
                        encode(factors, "f32")))
    return out, stored


KINDS = {"u8": U8, "i8": I8, "u16": U16, "i16": I16, "u32": U32, "i32": I32,
         "f32": F32, "bool": BOOL, "str": STRING, "u64": U64, "i64": I64, "f64": F64}


def edited(meta, changes, drops):
    """meta with each KEY=TYPE:VALUE of `changes` set (replacing a key of
    that name) and each key of `drops` removed."""
    for change in changes:
        key, _, typed = change.partition("=")
        kind, _, text = typed.partition(":")
        v = (text if kind == "str" else text == "true" if kind == "bool"
             else float(text) if kind.startswith("f") else int(text))
        meta = [m for m in meta if m[0] != key] + [(key, KINDS[kind], v)]
    return [m for m in meta if m[0] not in drops]


# Byte-level BPE split patterns, as tokenizer.json files state them, and
# the tokenizer.ggml.pre names llama.cpp gives them.
PRE_PATTERNS = {
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "gpt-4o": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}


def stages(node, key):
    """A tokenizer.json stage and, for a Sequence, its parts."""
    if not node:
        return []
    return node.get(key, [node])


def vocabulary(folder):
    """The tokenizer.ggml.* metadata of a folder's tokenizer.json and
    tokenizer_config.json: "llama" for SentencePiece-style BPE with byte
    fallback (scores: minus the rank of the first merge making a token, so
    ordering tokens by score orders their merges as the file does), "gpt2"
    for byte-level BPE. Token types: 1 normal, 2 unknown, 3 control (special
    added tokens), 4 user-defined (other added tokens), 5 unused (ids no
    token has), 6 byte (<0xXX>)."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    config = {}
    if os.path.exists(os.path.join(folder, "tokenizer_config.json")):
        with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
    model = tok["model"]
    if model.get("type") != "BPE":
        raise SystemExit("gguf_writer.py: only BPE tokenizers are written")
    sentencepiece = bool(model.get("byte_fallback"))
    added = {a["id"]: a for a in tok.get("added_tokens", [])}
    size = max(list(model["vocab"].values()) + list(added)) + 1
    tokens, types = [None] * size, [1] * size
    for text, i in model["vocab"].items():
        tokens[i] = text
    for i, a in added.items():
        tokens[i] = a["content"]
        types[i] = 3 if a.get("special") else 4
    for i, text in enumerate(tokens):
        if text is None:
            tokens[i], types[i] = f"[PAD{i}]", 5
        elif sentencepiece and i not in added and len(text) == 6 and text.startswith("<0x"):
            types[i] = 6
    ids = {t: i for i, t in enumerate(tokens)}
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    meta = [("tokenizer.ggml.model", STRING, "llama" if sentencepiece else "gpt2"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens))]
    if sentencepiece:
        if model.get("unk_token") in ids:
            types[ids[model["unk_token"]]] = 2
            meta.append(("tokenizer.ggml.unknown_token_id", U32, ids[model["unk_token"]]))
        first = {}
        for rank, m in enumerate(merges):
            left, right = m.split(" ", 1)
            first.setdefault(left + right, rank)
        scores = [-float(first[t]) if t in first else -1e9 for t in tokens]
        meta.append(("tokenizer.ggml.scores", ARRAY, (F32, scores)))
        prefix = any(n.get("type") == "Prepend" and n.get("prepend") == "\u2581"
                     for n in stages(tok.get("normalizer"), "normalizers")) or any(
            p.get("type") == "Metaspace" and p.get("prepend_scheme", "always") != "never"
            for p in stages(tok.get("pre_tokenizer"), "pretokenizers"))
        meta.append(("tokenizer.ggml.add_space_prefix", BOOL, prefix))
    else:
        meta.append(("tokenizer.ggml.merges", ARRAY, (STRING, merges)))
        splits = [p["pattern"].get("Regex") for p in stages(tok.get("pre_tokenizer"), "pretokenizers")
                  if p.get("type") == "Split"]
        byte_level = [p for p in stages(tok.get("pre_tokenizer"), "pretokenizers")
                      if p.get("type") == "ByteLevel"]
        if not splits and byte_level and byte_level[0].get("use_regex", True):
            pre = "gpt-2"
        else:
            pre = next((name for name, pattern in PRE_PATTERNS.items() if splits == [pattern]), None)
            if pre is None:
                raise SystemExit(f"gguf_writer.py: no tokenizer.ggml.pre for the split patterns {splits}")
        meta.append(("tokenizer.ggml.pre", STRING, pre))
    meta.append(("tokenizer.ggml.token_type", ARRAY, (I32, types)))

    def special(key):
        v = config.get(key + "_token")
        v = v.get("content") if isinstance(v, dict) else v
        return ids.get(v) if isinstance(v, str) else None
    bos, eos = special("bos"), special("eos")
    add_bos = add_eos = None
    for proc in stages(tok.get("post_processor"), "processors"):
        if proc.get("type") == "TemplateProcessing":
            single = [p["SpecialToken"]["id"] for p in proc["single"] if "SpecialToken" in p]
            seq = [i for i, p in enumerate(proc["single"]) if "Sequence" in p][0]
            add_bos = seq > 0 and ids.get(single[0]) == bos
            add_eos = seq < len(proc["single"]) - 1 and ids.get(single[-1]) == eos
    if isinstance(config.get("add_bos_token"), bool):
        add_bos = config["add_bos_token"]
    if isinstance(config.get("add_eos_token"), bool):
        add_eos = config["add_eos_token"]
    for key, value in (("bos", bos), ("eos", eos), ("padding", special("pad"))):
        if value is not None:
            meta.append((f"tokenizer.ggml.{key}_token_id", U32, value))
    meta.append(("tokenizer.ggml.add_bos_token", BOOL, bool(add_bos)))
    meta.append(("tokenizer.ggml.add_eos_token", BOOL, bool(add_eos)))
    if isinstance(config.get("chat_template"), str):
        meta.append(("tokenizer.chat_template", STRING, config["chat_template"]))
    return meta


def convert(config, weights, path, kind, dequantized=None, changes=(), drops=(), folder=None,
            head=None, freqs=None, overrides=()):
    arch, meta = hyperparameters(config)
    if folder and os.path.exists(os.path.join(folder, "tokenizer.json")):
        meta += vocabulary(folder)
    meta = edited(meta, changes, drops)
    tensors, stored = tensors_of(config, weights, kind, head, freqs, overrides)
    tensors = [t for t in tensors if t[0] not in drops]
    write(path, meta, tensors)
    if dequantized:
        os.makedirs(dequantized, exist_ok=True)
        cfg = dict(config, torch_dtype="float32")
        with open(os.path.join(dequantized, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        write_safetensors(os.path.join(dequantized, "model.safetensors"),
                          {k: v.astype(np.float32) for k, v in stored.items()})


def random_weights(config, seed=7):
    rng = np.random.default_rng(seed)
    d, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or d // heads
    kv = config.get("num_key_value_heads", heads)
    f, vocab = config["intermediate_size"], config["vocab_size"]
    mt = config["model_type"]
    w = {"model.embed_tokens.weight": rng.uniform(-1, 1, (vocab, d)),
         "model.norm.weight": 1 + 0.1 * rng.uniform(-1, 1, d)}
    if not config.get("tie_word_embeddings", False):
        w["lm_head.weight"] = rng.uniform(-1, 1, (vocab, d)) / np.sqrt(d)
    for n in range(config["num_hidden_layers"]):
        p = f"model.layers.{n}."
        shapes = {"self_attn.q_proj": (heads * head_dim, d),
                  "self_attn.k_proj": (kv * head_dim, d),
                  "self_attn.v_proj": (kv * head_dim, d),
                  "self_attn.o_proj": (d, heads * head_dim),
                  "mlp.gate_proj": (f, d), "mlp.up_proj": (f, d), "mlp.down_proj": (d, f)}
        if mt == "phi3":  # Q|K|V and gate|up fused
            shapes = {"self_attn.qkv_proj": ((heads + 2 * kv) * head_dim, d),
                      "self_attn.o_proj": (d, heads * head_dim),
                      "mlp.gate_up_proj": (2 * f, d), "mlp.down_proj": (d, f)}
        for stem, shape in shapes.items():
            w[p + stem + ".weight"] = rng.uniform(-1, 1, shape) * 1.5 / np.sqrt(shape[1])
        if mt == "qwen2":
            for stem in ("q_proj", "k_proj", "v_proj"):
                w[p + f"self_attn.{stem}.bias"] = 0.1 * rng.uniform(-1, 1, shapes["self_attn." + stem][0])
        # Gemma's norms multiply by (1 + w): its stored w near 0.
        one = 0 if mt in ("gemma2", "gemma3_text") else 1
        if mt in ("qwen3", "gemma3_text"):
            for stem in ("q_norm", "k_norm"):
                w[p + f"self_attn.{stem}.weight"] = one + 0.1 * rng.uniform(-1, 1, head_dim)
        if mt == "olmo2":  # QK-norm over the whole projection
            for stem, size in (("q_norm", heads * head_dim), ("k_norm", kv * head_dim)):
                w[p + f"self_attn.{stem}.weight"] = 1 + 0.1 * rng.uniform(-1, 1, size)
        norms = ["input_layernorm", "post_attention_layernorm"]
        if not one:
            norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        if mt == "olmo2":  # norms after each sublayer only
            norms = ["post_attention_layernorm", "post_feedforward_layernorm"]
        for stem in norms:
            w[p + stem + ".weight"] = one + 0.1 * rng.uniform(-1, 1, d)
    if mt in ("gemma2", "gemma3_text"):
        w["model.norm.weight"] -= 1
    return w


def broken(kind, path):
    """Small files, each with one defect the reader must name."""
    good_meta = [("general.architecture", STRING, "llama")]
    tensor = [("t", "f32", [8], np.zeros(8, np.float32).tobytes())]
    if kind == "magic":
        with open(path, "wb") as f:
            f.write(b"GGUX" + b"\0" * 28)
        return
    if kind == "version":
        write(path, good_meta, tensor, version=1)
        return
    if kind == "alignment":
        write(path, good_meta + [("general.alignment", U32, 24)], tensor)
        return
    if kind == "duplicate-key":
        write(path, good_meta + good_meta, tensor)
        return
    if kind == "duplicate-tensor":
        write(path, good_meta, tensor + tensor)
        return
    if kind == "arch-type":
        write(path, [("general.architecture", U32, 7)], tensor)
        return
    write(path, good_meta, tensor)
    data = bytearray(open(path, "rb").read())
    key_at = 24  # the first key's length
    value_at = key_at + 8 + len("general.architecture") + 4  # its string's length
    name_at = value_at + 8 + len("llama")  # the tensor name's length
    dims_at = name_at + 8 + 1
    if kind == "truncated":
        data = data[:len(data) - 5]
    elif kind == "key-overflow":
        data[key_at:key_at + 8] = struct.pack("<Q", 2**63)
    elif kind == "array-overflow":
        data[value_at - 4:value_at] = struct.pack("<I", ARRAY)
        data[value_at:value_at + 12] = struct.pack("<IQ", U64, 2**62)
    elif kind == "tensor-range":
        data[dims_at + 4:dims_at + 12] = struct.pack("<Q", 1 << 20)
    elif kind == "dims":
        data[dims_at:dims_at + 4] = struct.pack("<I", 9)
    elif kind == "type":
        data[dims_at + 12:dims_at + 16] = struct.pack("<I", 5)
    elif kind == "misaligned":
        data[dims_at + 16:dims_at + 24] = struct.pack("<Q", 4)
    elif kind == "overlap":
        write(path, good_meta, tensor + [("u", "f32", [8], tensor[0][3])])
        data = bytearray(open(path, "rb").read())
        at = data.rfind(b"u") + 1 + 4 + 8 + 4  # u's offset field
        data[at:at + 8] = struct.pack("<Q", 0)
    elif kind == "bool":
        data[value_at - 4:value_at] = struct.pack("<I", BOOL)
        data[value_at] = 2
    else:
        raise SystemExit(f"gguf_writer.py: no broken kind {kind}")
    with open(path, "wb") as f:
        f.write(data)


def values(path):
    rng = np.random.default_rng(3)
    meta = [("u8", U8, 200), ("i8", I8, -100), ("u16", U16, 60000), ("i16", I16, -30000),
            ("u32", U32, 4000000000), ("i32", I32, -2000000000), ("f32", F32, 0.25),
            ("bool", BOOL, True), ("string", STRING, "héllo"),
            ("array", ARRAY, (STRING, ["a", "", "ccc"])),
            ("nested", ARRAY, (ARRAY, [(I32, [1, 2]), (I32, [])])),
            ("u64", U64, 2**64 - 1), ("i64", I64, -2**62), ("f64", F64, -1.5),
            ("general.alignment", U32, 64)]
    tensors, decoded = [], {}
    for kind in ("f32", "f16", "bf16", "q8_0", "q5_0", "q4_0", "q6_k", "q4_1", "q4_k"):
        x = rng.normal(size=(3, 256)).astype(np.float32)
        blob = encode(x, kind)
        tensors.append((kind, kind, [256, 3], blob))
        decoded[kind] = decode(blob, kind, x.size).tolist()
    write(path, meta, tensors, alignment=64)
    json.dump(decoded, sys.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["convert", "random", "broken", "values", "vocab"])
    parser.add_argument("source")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--type", default="f32", choices=sorted(GGML) + list(MIXES))
    parser.add_argument("--tensor-type", action="append", default=[], metavar="REGEX=TYPE",
                        help="a type of their own for the tensors whose GGUF names match")
    parser.add_argument("--dequantized")
    parser.add_argument("--rope-freqs", type=lambda t: [float(v) for v in t.split(",")])
    parser.add_argument("--head-type", choices=sorted(GGML),
                        help="output.weight's type (default: --type's)")
    parser.add_argument("--meta", action="append", default=[], metavar="KEY=TYPE:VALUE",
                        help="set a metadata key (types: " + ", ".join(KINDS) + ")")
    parser.add_argument("--drop", action="append", default=[], metavar="NAME",
                        help="leave out a metadata key or tensor")
    a = parser.parse_args()
    overrides = []
    for item in a.tensor_type:
        pattern, _, t = item.rpartition("=")
        if not pattern or t not in GGML:
            parser.error("--tensor-type takes REGEX=TYPE with a TYPE of " + ", ".join(sorted(GGML)))
        overrides.append((pattern, t))
    if a.command == "vocab":
        write(a.out, vocabulary(a.source), [])
    elif a.command == "broken":
        broken(a.source, a.out)
    elif a.command == "values":
        values(a.source)
    elif a.command == "convert":
        with open(os.path.join(a.source, "config.json")) as f:
            config = json.load(f)
        convert(config, read_checkpoint(a.source), a.out, a.type, a.dequantized,
                a.meta, a.drop, a.source, a.head_type, a.rope_freqs, overrides)
    else:
        with open(a.source) as f:
            config = json.load(f)
        convert(config, random_weights(config), a.out, a.type, a.dequantized,
                a.meta, a.drop, head=a.head_type, freqs=a.rope_freqs, overrides=overrides)


if __name__ == "__main__":
    main()
