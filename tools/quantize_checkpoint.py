#!/usr/bin/env python3
"""Rewrites a float Llama/Qwen2 checkpoint as a GPTQ or AWQ int4 checkpoint,
or a float gpt-oss checkpoint's experts as MXFP4.

For tests: the folder's config.json must already hold the quantization_config
to write (quant_method gptq with bits 4, group_size and checkpoint_format
"gptq" or "gptq_v2"; or awq with version "gemm"). Every linear layer of the
decoder blocks (q/k/v/o_proj, gate/up/down_proj) is quantized per group of
group_size inputs and output feature, asymmetric as GPTQ and AWQ store it
(scale = (max - min) / 15 over a range that includes 0, held in float16;
zero = round(-min / scale); u = clamp(round(w / scale) + zero, 0, 15)) and
packed as each format's published description says:

  GPTQ qweight int32 [in/8][out]: bits 4i..4i+3 of word (r, n) hold input
       8r + i of feature n; qzeros int32 [groups][out/8], feature 8c + j in
       bits 4j..; checkpoint_format "gptq" stores each zero point less 1
       (mod 16), "gptq_v2" as it is; scales float16 [groups][out];
       g_idx int32 [in] = k // group_size.
  AWQ  qweight int32 [in][out/8]: bits 4i.. of word (k, c) hold feature
       8c + [0, 2, 4, 6, 1, 3, 5, 7][i]; qzeros the same over [groups][out/8];
       scales float16 [groups][out].

Other tensors (embeddings, norms, biases, the output head) stay float16.

quant_method mxfp4 (gpt-oss as published): each stack of experts
mlp.experts.gate_up_proj [E][in][out] and down_proj (multiplied as x·W) is
stored as the OCP Microscaling spec (v1.0) describes MXFP4 and gpt-oss's
checkpoints lay it out: per expert, output row and block of 32 inputs, a
shared scale 2^s with s = floor(log2(max |w|)) - 2 (E2M1's largest exponent;
stored as the E8M0 byte s + 127, 0 for an all-zero block) and each w / 2^s
rounded to the nearest E2M1 value (ties to the even code), saturating at 6:
NAME_blocks uint8 [E][out][in/32][16], two codes a byte, the first input
in the low nibble; NAME_scales uint8 [E][out][in/32]. The other tensors
stay bfloat16.

The result is one model.safetensors (shards and index removed). Usage:

  /usr/bin/python3 tools/quantize_checkpoint.py MODEL_DIR [--act-order]

--act-order writes GPTQ's g_idx as desc_act checkpoints have it, each input's
group by a permutation of the inputs (the weights are left as packed: for
testing that a reader refuses or honours it).
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import BF16, read_checkpoint, write_safetensors  # noqa: E402

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def quantize(w, group):
    """u [out][in] uint8, scales float16 [groups][out], zeros [groups][out]."""
    out, n = w.shape
    g = w.reshape(out, n // group, group)
    low = np.minimum(g.min(axis=2), 0.0)
    high = np.maximum(g.max(axis=2), 0.0)
    scale = ((high - low) / 15.0).astype(np.float16)
    scale[scale == 0] = np.float16(1.0)
    s = scale.astype(np.float64)
    zero = np.clip(np.round(-low / s), 0, 15)
    u = np.clip(np.round(g / s[:, :, None]) + zero[:, :, None], 0, 15)
    return (u.reshape(out, n).astype(np.uint32), scale.T.copy(),
            zero.T.astype(np.uint32))


def pack_rows(values, order=range(8)):
    """[..., 8m] nibbles -> [..., m] uint32, value j of each 8 at nibble order.index(j)."""
    v = values.reshape(values.shape[:-1] + (values.shape[-1] // 8, 8))
    words = np.zeros(v.shape[:-1], dtype=np.uint32)
    for position, j in enumerate(order):
        words |= (v[..., j] & 15) << np.uint32(4 * position)
    return words


# E2M1's non-negative values, by code.
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def mxfp4(w):
    """x·W stack [E][in][out] -> (blocks uint8 [E][out][in/32][16], scales
    uint8 [E][out][in/32])."""
    rows = np.ascontiguousarray(w.transpose(0, 2, 1))  # [E][out][in]
    e, out, n = rows.shape
    g = rows.reshape(e, out, n // 32, 32)
    largest = np.abs(g).max(axis=-1)
    shared = np.where(largest > 0,
                      np.floor(np.log2(np.where(largest > 0, largest, 1.0))) - 2,
                      -127)
    shared = np.clip(shared, -127, 127)
    x = np.abs(g) / np.exp2(shared)[..., None]
    # The nearest code; on a tie the even one (np.argmin's first is the
    # lower, so ties break towards the lower code, then even ones kept).
    distance = np.abs(x[..., None] - E2M1)
    code = np.argmin(distance, axis=-1)
    best = np.take_along_axis(distance, code[..., None], axis=-1)[..., 0]
    upper = np.minimum(code + 1, 7)
    tie = np.isclose(np.take_along_axis(distance, upper[..., None], axis=-1)[..., 0],
                     best) & (upper != code)
    code = np.where(tie & (code % 2 == 1), upper, code)
    code = code | np.where(g < 0, 8, 0)
    code = code.astype(np.uint8).reshape(e, out, n // 32, 16, 2)
    blocks = code[..., 0] | (code[..., 1] << 4)
    return blocks.astype(np.uint8), (shared + 127).astype(np.uint8)


def write_mxfp4(folder):
    """gpt-oss's experts as MXFP4, the rest bfloat16."""
    out = {}
    for name, w in read_checkpoint(folder).items():
        if name.endswith((".mlp.experts.gate_up_proj", ".mlp.experts.down_proj")):
            out[name + "_blocks"], out[name + "_scales"] = mxfp4(w)
        else:
            out[name] = BF16(w)
    return out


def main():
    folder = sys.argv[1]
    act_order = "--act-order" in sys.argv[2:]
    with open(os.path.join(folder, "config.json")) as f:
        q = json.load(f)["quantization_config"]
    if q["quant_method"] == "mxfp4":
        out = write_mxfp4(folder)
        for entry in os.listdir(folder):
            if entry.endswith(".safetensors") or entry == "model.safetensors.index.json":
                os.remove(os.path.join(folder, entry))
        write_safetensors(os.path.join(folder, "model.safetensors"), out)
        return
    method, group = q["quant_method"], q["group_size"]
    assert q["bits"] == 4 and method in ("gptq", "awq")
    v1 = method == "gptq" and q.get("checkpoint_format", "gptq") == "gptq"
    out = {}
    for name, w in read_checkpoint(folder).items():
        base = name[:-len(".weight")]
        if not (name.endswith(".weight") and base.split(".")[-1] in LINEAR):
            out[name] = w.astype(np.float16)
            continue
        u, scales, zeros = quantize(w, group)  # u [out][in]
        if method == "gptq":
            stored = (zeros - 1) & 15 if v1 else zeros
            # [out][in/8] packed along the inputs, stored [in/8][out].
            out[base + ".qweight"] = np.ascontiguousarray(pack_rows(u).T).view(np.int32)
            out[base + ".qzeros"] = pack_rows(stored).view(np.int32)
            inputs = np.arange(u.shape[1])
            if act_order:
                inputs = np.random.default_rng(0).permutation(u.shape[1])
            out[base + ".g_idx"] = (inputs // group).astype(np.int32)
        else:
            # [in][out] packed along the features in AWQ's order.
            out[base + ".qweight"] = pack_rows(np.ascontiguousarray(u.T), AWQ_ORDER).view(np.int32)
            out[base + ".qzeros"] = pack_rows(zeros, AWQ_ORDER).view(np.int32)
        out[base + ".scales"] = scales
    for entry in os.listdir(folder):
        if entry.endswith(".safetensors") or entry == "model.safetensors.index.json":
            os.remove(os.path.join(folder, entry))
    write_safetensors(os.path.join(folder, "model.safetensors"), out)



if __name__ == "__main__":
    main()
