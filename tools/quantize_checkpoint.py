#!/usr/bin/env python3
"""Rewrites a float Llama/Qwen2 checkpoint as a GPTQ or AWQ int4 checkpoint.

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

Other tensors (embeddings, norms, biases, the output head) stay float16. The
result is one model.safetensors (shards and index removed). Usage:

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
from hf_reference import read_checkpoint, write_safetensors  # noqa: E402

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


def main():
    folder = sys.argv[1]
    act_order = "--act-order" in sys.argv[2:]
    with open(os.path.join(folder, "config.json")) as f:
        q = json.load(f)["quantization_config"]
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
