#!/usr/bin/env python3
"""An independent reference of the Hugging Face decoder architectures attnc runs.

Reads a model folder as Hugging Face publishes it (config.json, and
model.safetensors or model.safetensors.index.json with its shards, tensors in
F32, F16 or BF16; GPTQ and AWQ int4 layers dequantized as those formats
define them), runs the forward pass of its model_type in float64 with
numpy, written from transformers' modeling code (LlamaForCausalLM,
MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM,
Gemma3ForCausalLM, Phi3ForCausalLM, Olmo2ForCausalLM, GPT2LMHeadModel,
MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM,
DeepseekV3ForCausalLM and DeepSeek-V2's layout, GptOssForCausalLM), not from attnc's, and
decodes greedily from a prompt. Prints JSON:

  {"tokens": [the greedy tokens], "logits": [[each step's logits]]}

Step 0's logits are those after the whole prompt; step i's after the prompt and
i generated tokens. With --prompt-logits, also "prompt_logits": the logits
after each prompt token (the last row is step 0's). Usage (Debian's
python3-numpy):

  /usr/bin/python3 tools/hf_reference.py MODEL_DIR --prompt 1,2,3 --steps 32
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np


# --- checkpoints ------------------------------------------------------------

def read_safetensors(path):
    """{name: float64 array} of one .safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = memoryview(data)[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = body[begin:end]
        dtype = entry["dtype"]
        if dtype == "F32":
            values = np.frombuffer(raw, dtype="<f4")
        elif dtype == "F16":
            values = np.frombuffer(raw, dtype="<f2")
        elif dtype == "BF16":  # the top half of a float32
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32)
        elif dtype == "I32":  # GPTQ's and AWQ's packed words, kept as bits
            tensors[name] = np.frombuffer(raw, dtype="<u4").reshape(entry["shape"])
            continue
        elif dtype == "U8":  # MXFP4's packed codes and scale exponents
            tensors[name] = np.frombuffer(raw, dtype=np.uint8).reshape(entry["shape"])
            continue
        else:
            raise SystemExit(f"{path}: {name}: unsupported dtype {dtype}")
        tensors[name] = values.astype(np.float64).reshape(entry["shape"])
    return tensors


class BF16:
    """A float array to be stored as bfloat16 (write_safetensors): each
    float32 rounded to its top 16 bits, to nearest even."""

    def __init__(self, values):
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
        self.bits = (rounded >> np.uint32(16)).astype("<u2")
        self.shape = np.shape(values)


def write_safetensors(path, tensors, metadata=None):
    """{name: numpy array of float32, float16, int32 or uint8, or BF16} as a
    .safetensors file (u64 header length, JSON header, raw little-endian
    data), in the given order; `metadata`: the header's __metadata__."""
    header, blobs, offset = {}, [], 0
    kinds = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(np.int32): "I32", np.dtype(np.uint8): "U8"}
    for name, array in tensors.items():
        if isinstance(array, BF16):
            kind, blob = "BF16", array.bits.tobytes()
        else:
            kind = kinds[array.dtype]
            blob = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_checkpoint(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        tensors = {}
        for shard in shards:
            tensors.update(read_safetensors(os.path.join(folder, shard)))
        return tensors
    return read_safetensors(os.path.join(folder, "model.safetensors"))


def nibbles(words, order=range(8)):
    """uint32 [..., m] -> [..., 8m]: value j of each 8 from nibble order.index(j)."""
    out = np.zeros(words.shape + (8,), dtype=np.int64)
    for position, j in enumerate(order):
        out[..., j] = (words >> np.uint32(4 * position)) & 15
    return out.reshape(words.shape[:-1] + (words.shape[-1] * 8,))


# OCP Microscaling FP4 (E2M1): the value of each 4-bit code (sign, 2
# exponent bits, 1 mantissa bit; exponent bias 1, no infinities or NaN).
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                 -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def dequantize_mxfp4(w):
    """gpt-oss's MXFP4 experts as published: each NAME_blocks uint8
    [E][rows][in/32][16] (two E2M1 codes a byte, the low nibble first) and
    NAME_scales uint8 [E][rows][in/32] (E8M0: 2^(s - 127), 255 is NaN)
    become NAME [E][in][rows], value · 2^(s - 127) transposed, as
    transformers' dequantization gives the GptOssExperts parameter."""
    for name in [n for n in w if n.endswith("_blocks")]:
        base = name[:-len("_blocks")]
        blocks, scales = w.pop(name), w.pop(base + "_scales")
        codes = np.stack([blocks & 15, blocks >> 4], axis=-1)  # [..., 16, 2]
        values = E2M1[codes.reshape(blocks.shape[:-1] + (32,))]
        exponent = scales.astype(np.float64) - 127.0
        exponent[scales == 255] = np.nan
        values = values * np.exp2(exponent)[..., None]
        e, rows = blocks.shape[:2]
        w[base] = values.reshape(e, rows, -1).transpose(0, 2, 1)
    return w


def dequantize(config, w):
    """Replaces each GPTQ / AWQ layer's qweight, qzeros, scales (and g_idx) by
    its float weight [out][in], W = (u - z) * s, as the formats are published:
    GPTQ packs 8 inputs an int32 along the input dimension, and checkpoint_format
    "gptq" stores each zero point less 1; AWQ (version gemm) packs 8 output
    features an int32 in the order 0 2 4 6 1 3 5 7. g_idx gives each input's
    group. The output head (or the embedding it is tied to) these
    checkpoints keep in floats stays as stored, as transformers runs it."""
    q = config["quantization_config"]
    group = q["group_size"]
    awq = q["quant_method"] == "awq"
    order = [0, 2, 4, 6, 1, 3, 5, 7] if awq else range(8)
    v1 = not awq and q.get("checkpoint_format", "gptq") == "gptq"
    for name in [n for n in w if n.endswith(".qweight")]:
        base = name[:-len(".qweight")]
        scales = w.pop(base + ".scales")  # [groups][out]
        zeros = nibbles(w.pop(base + ".qzeros"), order)  # [groups][out]
        if v1:
            zeros = (zeros + 1) & 15
        if awq:
            u = nibbles(w.pop(name), order)  # [in][out]
            g_idx = np.arange(u.shape[0]) // group
        else:
            u = nibbles(w.pop(name).T.copy()).T  # [in][out]
            g_idx = w.pop(base + ".g_idx").astype(np.int64)
        w[base + ".weight"] = ((u - zeros[g_idx]) * scales[g_idx]).T
    return w


def quantize_rows(m, bits, group=None):
    """Each row of m [rows][in] as attnc's kernels hold it, dequantized
    (float32 math, as attnc's loader): int8 symmetric per row or per `group`
    inputs (s = max|w| / 127, q = clamp(round-half-even(w / s), -127, 127)),
    or int4 symmetric per `group` inputs (s = max|w| / 7, q in [-8, 7]; a
    scale below the smallest normal float is 0)."""
    m = m.astype(np.float32)
    width = group or m.shape[1]
    limit, low = (127, -127) if bits == 8 else (7, -8)
    out = np.empty(m.shape, dtype=np.float64)
    for begin in range(0, m.shape[1], width):  # the last group may be partial
        g = m[:, begin:begin + width]
        s = (np.abs(g).max(axis=1, keepdims=True) / np.float32(limit)).astype(np.float32)
        if bits == 4:
            s[s < np.float32(1.17549435e-38)] = 0
        safe = np.where(s == 0, np.float32(1), s)
        q = np.clip(np.rint(g / safe), low, limit) * (s != 0)
        out[:, begin:begin + width] = q * s.astype(np.float64)
    return out


def quantize_like_attnc(config, w, spec):
    """The checkpoint's linear weights as attnc quantizes them at load with
    --weight-dtype (spec "int8", or "int8:G" / "int4:G" for groups of G
    inputs), so that
    the reference runs the model attnc runs: every linear weight but a
    mixture's router (which attnc keeps in bf16) and the embedding table
    (which stays in floats; a tied head is quantized apart from it). A latent
    layer's kv_b_proj as attnc splits it: each head's W_uk transposed (a row
    per latent channel over its no-RoPE channels), its W_uv as stored."""
    bits = 8 if spec.startswith("int8") else 4
    group = int(spec.split(":")[1]) if ":" in spec else None
    heads = config.get("num_attention_heads")
    for name in list(w):
        t = w[name]
        if (t.ndim != 2 or name.endswith("mlp.gate.weight")
                or "embed_tokens" in name):
            continue
        if name.endswith("kv_b_proj.weight"):
            nope, vdim = config["qk_nope_head_dim"], config["v_head_dim"]
            up = t.reshape(heads, nope + vdim, -1).copy()
            for h in range(heads):
                up[h, :nope] = quantize_rows(up[h, :nope].T, bits, group).T
                up[h, nope:] = quantize_rows(up[h, nope:], bits, group)
            w[name] = up.reshape(t.shape)
        else:
            w[name] = quantize_rows(t, bits, group)
    if config.get("tie_word_embeddings"):
        w["attnc quantized head"] = quantize_rows(
            w["model.embed_tokens.weight"], bits, group)
    return w


# --- building blocks --------------------------------------------------------

def activation(name):
    if name in ("silu", "swish"):
        return lambda x: x / (1.0 + np.exp(-x))
    if name == "relu":
        return lambda x: np.maximum(x, 0.0)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + np.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "gelu":
        erf = np.vectorize(math.erf)
        return lambda x: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    raise SystemExit(f"unsupported activation {name}")


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def layer_norm(x, weight, bias, eps):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def yarn_mscale(factor, mscale=1.0):
    """YaRN's magnitude correction 0.1·mscale·ln(factor) + 1 (1 for factor <= 1)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def yarn_attention_factor(config):
    """_compute_yarn_parameters' scaling of cos and sin."""
    scaling = config["rope_scaling"]
    if scaling.get("attention_factor") is not None:
        return scaling["attention_factor"]
    factor = scaling["factor"]
    mscale, all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")
    if mscale and all_dim:
        return yarn_mscale(factor, mscale) / yarn_mscale(factor, all_dim)
    return yarn_mscale(factor)


def inverse_frequencies(config, dim, long=False):
    """modeling_rope_utils: default, linear, llama3, yarn and longrope rules
    (longrope: the short factors, or with `long` the long ones)."""
    base = config.get("rope_theta", 10000.0)
    inv = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    scaling = config.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        llama = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv = np.where(medium, smoothed, llama)
    elif kind == "longrope":
        factors = scaling["long_factor" if long else "short_factor"]
        inv = inv / np.array(factors, dtype=np.float64)
    elif kind == "yarn":
        # Each frequency blends its interpolated (divided by factor) and
        # extrapolated values by a ramp over the dimensions whose rotations
        # over the original context fall between beta_slow and beta_fast.
        factor = scaling["factor"]
        original = (scaling.get("original_max_position_embeddings")
                    or config["max_position_embeddings"])

        def dimension(rotations):
            return (dim * math.log(original / (rotations * 2 * math.pi))
                    / (2 * math.log(base)))

        low = dimension(scaling.get("beta_fast") or 32)
        high = dimension(scaling.get("beta_slow") or 1)
        if scaling.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        extrapolation = 1 - ramp
        inv = inv / factor * (1 - extrapolation) + inv * extrapolation
    elif kind != "default":
        raise SystemExit(f"unsupported rope_scaling {kind}")
    return inv


def longrope_attention_factor(config):
    """_compute_longrope_parameters' scaling of cos and sin."""
    scaling = config["rope_scaling"]
    original = config.get("original_max_position_embeddings")
    if original:
        factor = config["max_position_embeddings"] / original
    else:
        original = config["max_position_embeddings"]
        factor = scaling["factor"]
    if scaling.get("attention_factor") is not None:
        return scaling["attention_factor"]
    return 1.0 if factor <= 1.0 else math.sqrt(
        1 + math.log(factor) / math.log(original))


def rotate(x, positions, inv):
    """rotate_half RoPE of x [heads][tokens][dim] at positions [tokens]."""
    freqs = np.outer(positions, inv)
    emb = np.concatenate([freqs, freqs], axis=-1)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * np.cos(emb) + rotated * np.sin(emb)


def attend(q, k, v, scale, window=None, softcap=None, sinks=None):
    """Causal (optionally windowed) attention; q [hq][t][d], k/v [hkv][t][d];
    softcap: scores become softcap·tanh(scores/softcap) (Gemma 2); sinks
    [hq]: a logit per head that joins each row's softmax and brings no
    value (gpt-oss)."""
    groups = q.shape[0] // k.shape[0]
    k = np.repeat(k, groups, axis=0)
    v = np.repeat(v, groups, axis=0)
    scores = q @ k.transpose(0, 2, 1) * scale
    if softcap:
        scores = softcap * np.tanh(scores / softcap)
    t = q.shape[1]
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    visible = j <= i
    if window:
        visible &= i - j < window  # Mistral's / Qwen2's sliding window
    scores = np.where(visible, scores, -np.inf)
    if sinks is not None:
        sink = np.broadcast_to(np.asarray(sinks, dtype=np.float64)[:, None, None],
                               scores.shape[:2] + (1,))
        scores = np.concatenate([scores, sink], axis=-1)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    if sinks is not None:
        p = p[..., :-1]
    return p @ v


# --- architectures ----------------------------------------------------------

def linear(w, name, y):
    """nn.Linear `name` of the checkpoint `w` on y: y·Wᵀ (+ bias)."""
    out = y @ w[name + ".weight"].T
    bias = w.get(name + ".bias")
    return out if bias is None else out + bias


def output_head(config, w):
    """The head [vocab][hidden]: the embedding where tied, else lm_head, or
    the head as attnc quantized it (quantize_like_attnc) for --weight-dtype."""
    head = w.get("attnc quantized head")
    if head is None:
        head = (w["model.embed_tokens.weight"] if config.get("tie_word_embeddings")
                else w["lm_head.weight"])
    return head


def mixture_of_experts(config, w, p, h, act):
    """A sparse MoE block on h [t][hidden]: each token's router logits,
    softmax over all experts, the num_experts_per_tok most probable (the
    lower expert first among equals), their probabilities as weights,
    renormalized to sum 1 for Mixtral and where Qwen3-MoE's norm_topk_prob
    says; the output is the weighted sum of the chosen experts' SwiGLU
    MLPs. Mixtral names them block_sparse_moe.{gate, experts.E.w1/w3/w2},
    Qwen3-MoE mlp.{gate, experts.E.gate_proj/up_proj/down_proj}. Qwen2-MoE
    (Qwen1.5-MoE, Qwen2-57B-A14B) adds a shared expert every token runs,
    mlp.shared_expert.*, an MLP of shared_expert_intermediate_size whose
    output is scaled by sigmoid(h · mlp.shared_expert_gate) before it joins
    the sum."""
    mixtral = config["model_type"] == "mixtral"
    qwen2 = config["model_type"] == "qwen2_moe"
    k = config.get("num_experts_per_tok", 2 if mixtral else 4 if qwen2 else 8)
    normalize = True if mixtral else config.get("norm_topk_prob", False)
    base = p + ("block_sparse_moe." if mixtral else "mlp.")
    names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    logits = h @ w[base + "gate.weight"].T
    out = np.zeros_like(h)
    for i in range(h.shape[0]):
        probs = np.exp(logits[i] - logits[i].max())
        probs /= probs.sum()
        chosen = np.argsort(-probs, kind="stable")[:k]
        weights = probs[chosen] / (probs[chosen].sum() if normalize else 1.0)
        for e, weight in zip(chosen, weights):
            gate, up, down = (w[f"{base}experts.{e}.{n}.weight"] for n in names)
            out[i] += weight * ((act(h[i] @ gate.T) * (h[i] @ up.T)) @ down.T)
    if qwen2:
        gate, up, down = (w[f"{base}shared_expert.{n}.weight"] for n in names)
        shared = (act(h @ gate.T) * (h @ up.T)) @ down.T
        scale = 1.0 / (1.0 + np.exp(-(h @ w[base + "shared_expert_gate.weight"].T)))
        out += scale * shared
    return out


def sparse_layers(config):
    """Which layers' MLP is a mixture of experts: every Mixtral layer; for
    Qwen3-MoE and Qwen2-MoE those not in mlp_only_layers whose index + 1 is a multiple of
    decoder_sparse_step (none with num_experts 0); no other family's."""
    layers = config["num_hidden_layers"]
    if config["model_type"] == "mixtral":
        return [True] * layers
    if config["model_type"] not in ("qwen3_moe", "qwen2_moe"):
        return [False] * layers
    only = set(config.get("mlp_only_layers") or [])
    step = config.get("decoder_sparse_step", 1)
    experts = config.get("num_experts",
                         60 if config["model_type"] == "qwen2_moe" else 128)
    return [i not in only and experts > 0 and (i + 1) % step == 0
            for i in range(layers)]


def llama_logits(config, w, tokens):
    """LlamaForCausalLM and its Mistral / Mixtral / Qwen2 / Qwen3 /
    Qwen3-MoE variants: logits [t][vocab]. Qwen3 adds an RMS norm of each
    query and key head (q_norm, k_norm: [head_dim] weights, rms_norm_eps)
    before RoPE; Mixtral and Qwen3-MoE replace MLPs by mixtures of experts
    (mixture_of_experts)."""
    kind = config["model_type"]
    hidden = config["hidden_size"]
    hq = config["num_attention_heads"]
    hkv = config.get("num_key_value_heads") or hq
    d = config.get("head_dim") or hidden // hq
    eps = config.get("rms_norm_eps", 1e-6)
    act = activation(config.get("hidden_act", "silu"))
    window = None
    if kind in ("mistral", "mixtral"):
        window = config.get("sliding_window")
    first_windowed = 0
    layers = config["num_hidden_layers"]
    qwen = kind in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe")
    if qwen and config.get("use_sliding_window"):
        window = config.get("sliding_window")
        first_windowed = config.get("max_window_layers", 28)
    # transformers >= 4.53: layer_types, where given, says which layers slide.
    sliding = [layer >= first_windowed for layer in range(layers)]
    if qwen and config.get("layer_types"):
        sliding = [kind_ == "sliding_attention" for kind_ in config["layer_types"]]
    qk_norm = kind in ("qwen3", "qwen3_moe")
    sparse = sparse_layers(config)
    inv = inverse_frequencies(config, d)
    t = len(tokens)
    positions = np.arange(t, dtype=np.float64)
    x = w["model.embed_tokens.weight"][tokens]

    def project(name, y):
        return linear(w, name, y)

    for layer in range(layers):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = project(p + "self_attn.q_proj", h).reshape(t, hq, d).transpose(1, 0, 2)
        k = project(p + "self_attn.k_proj", h).reshape(t, hkv, d).transpose(1, 0, 2)
        v = project(p + "self_attn.v_proj", h).reshape(t, hkv, d).transpose(1, 0, 2)
        if qk_norm:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rotate(q, positions, inv), rotate(k, positions, inv)
        layer_window = window if sliding[layer] else None
        o = attend(q, k, v, 1.0 / math.sqrt(d), layer_window)
        x = x + project(p + "self_attn.o_proj", o.transpose(1, 0, 2).reshape(t, hq * d))
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if sparse[layer]:
            x = x + mixture_of_experts(config, w, p, h, act)
            continue
        gated = act(project(p + "mlp.gate_proj", h)) * project(p + "mlp.up_proj", h)
        x = x + project(p + "mlp.down_proj", gated)
    x = rms_norm(x, w["model.norm.weight"], eps)
    return x @ output_head(config, w).T


def olmo2_logits(config, w, tokens):
    """Olmo2ForCausalLM: Llama's projections and MLP, but q_norm and k_norm
    are RMS norms of the whole query projection [heads·head_dim] and the
    whole key projection [kv_heads·head_dim] (before the heads are split and
    rotated), and each sublayer's output is normalized (post_attention_
    layernorm, post_feedforward_layernorm) before it joins the residual
    stream; no norm before a sublayer. rms_norm_eps defaults to 1e-5."""
    hidden = config["hidden_size"]
    hq = config["num_attention_heads"]
    hkv = config.get("num_key_value_heads") or hq
    d = config.get("head_dim") or hidden // hq
    eps = config.get("rms_norm_eps", 1e-5)
    act = activation(config.get("hidden_act", "silu"))
    inv = inverse_frequencies(config, d)
    t = len(tokens)
    positions = np.arange(t, dtype=np.float64)
    x = w["model.embed_tokens.weight"][tokens]

    def project(name, y):
        return linear(w, name, y)

    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        q = rms_norm(project(p + "self_attn.q_proj", x),
                     w[p + "self_attn.q_norm.weight"], eps)
        k = rms_norm(project(p + "self_attn.k_proj", x),
                     w[p + "self_attn.k_norm.weight"], eps)
        v = project(p + "self_attn.v_proj", x)
        q = q.reshape(t, hq, d).transpose(1, 0, 2)
        k = k.reshape(t, hkv, d).transpose(1, 0, 2)
        v = v.reshape(t, hkv, d).transpose(1, 0, 2)
        q, k = rotate(q, positions, inv), rotate(k, positions, inv)
        o = attend(q, k, v, 1.0 / math.sqrt(d))
        o = project(p + "self_attn.o_proj", o.transpose(1, 0, 2).reshape(t, hq * d))
        x = x + rms_norm(o, w[p + "post_attention_layernorm.weight"], eps)
        gated = act(project(p + "mlp.gate_proj", x)) * project(p + "mlp.up_proj", x)
        m = project(p + "mlp.down_proj", gated)
        x = x + rms_norm(m, w[p + "post_feedforward_layernorm.weight"], eps)
    x = rms_norm(x, w["model.norm.weight"], eps)
    return x @ output_head(config, w).T


def deepseek_route(config, logits):
    """DeepSeek's router on logits [experts] of one token: (experts, weights).
    V3 (topk_method noaux_tc): sigmoid scores, chosen by score plus
    e_score_correction_bias (passed in config["_bias"]), groups scored by
    their two best, the other groups masked to 0, weights the scores
    normalized (+1e-20) when norm_topk_prob, times routed_scaling_factor.
    V2 (greedy, group_limited_greedy): softmax scores, groups scored by their
    best; weights normalized (+1e-20) when norm_topk_prob and top_k > 1,
    else times routed_scaling_factor."""
    k = config["num_experts_per_tok"]
    count = len(logits)
    method = config.get("topk_method", "noaux_tc" if config["model_type"] == "deepseek_v3"
                        else "greedy")
    if method == "noaux_tc":
        scores = 1 / (1 + np.exp(-logits))
        choice = scores + config["_bias"]
    else:
        scores = np.exp(logits - logits.max())
        scores /= scores.sum()
        choice = scores.copy()
    groups = config.get("n_group") or 1
    if method in ("noaux_tc", "group_limited_greedy") and groups > 1:
        grouped = choice.reshape(groups, count // groups)
        best = 2 if method == "noaux_tc" else 1
        group_scores = -np.sort(-grouped, axis=1, kind="stable")[:, :best].sum(axis=1)
        kept = np.argsort(-group_scores, kind="stable")[:config["topk_group"]]
        mask = np.zeros(groups, dtype=bool)
        mask[kept] = True
        choice = np.where(np.repeat(mask, count // groups), choice, 0.0)
    chosen = np.argsort(-choice, kind="stable")[:k]
    weights = scores[chosen]
    scale = config.get("routed_scaling_factor", 1.0)
    if method == "noaux_tc":
        if config.get("norm_topk_prob"):
            weights = weights / (weights.sum() + 1e-20)
        return chosen, weights * scale
    if k > 1 and config.get("norm_topk_prob"):
        return chosen, weights / (weights.sum() + 1e-20)
    return chosen, weights * scale


def deepseek_logits(config, w, tokens, absorbed=False):
    """DeepseekV3ForCausalLM (and DeepSeek-V2's layout): Llama's blocks with
    multi-head latent attention and DeepSeek's mixtures of experts.

    Attention: the query directly (q_proj, q_lora_rank null as in
    DeepSeek-V2-Lite) or through q_a_proj, q_a_layernorm, q_b_proj; per head
    qk_nope_head_dim channels without RoPE and qk_rope_head_dim with.
    kv_a_proj_with_mqa gives the latent (kv_lora_rank, then kv_a_layernorm)
    and one RoPE key shared by every head; kv_b_proj takes the latent to
    each head's no-RoPE key and its value (v_head_dim). RoPE pairs are
    interleaved (rope_interleave, DeepSeek's checkpoints) or halves. Scores
    scale by qk_head_dim^-1/2, times yarn_mscale(factor, mscale_all_dim)^2
    under YaRN. With `absorbed`, the same attention as a decoder computes it
    over a cache of latents: each head's query folded through its slice of
    kv_b_proj's key rows (q·W_uk) and scored against the latents, the
    weighted latents taken through its value rows — checked against the
    expanded form by the callers that matter.

    FFN: layers below first_k_dense_replace dense (intermediate_size); the
    others every moe_layer_freq-th a mixture of n_routed_experts
    (moe_intermediate_size each, deepseek_route) plus n_shared_experts as
    one MLP of n_shared_experts · moe_intermediate_size."""
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    nope, rope = config["qk_nope_head_dim"], config["qk_rope_head_dim"]
    vdim, rank = config["v_head_dim"], config["kv_lora_rank"]
    eps = config.get("rms_norm_eps", 1e-6)
    act = activation(config.get("hidden_act", "silu"))
    inv = inverse_frequencies(config, rope)
    scaling = config.get("rope_scaling") or {}
    cos_factor = 1.0
    scale = (nope + rope) ** -0.5
    if scaling.get("rope_type", scaling.get("type")) == "yarn":
        cos_factor = yarn_attention_factor(config)
        if scaling.get("mscale_all_dim"):
            scale *= yarn_mscale(scaling["factor"], scaling["mscale_all_dim"]) ** 2
    t = len(tokens)
    positions = np.arange(t, dtype=np.float64)
    x = w["model.embed_tokens.weight"][tokens]
    interleave = config.get("rope_interleave", True)

    def to_halves(y):  # interleaved pairs (0,1), (2,3) … → rotate_half's order
        return y.reshape(*y.shape[:-1], rope // 2, 2).swapaxes(-1, -2).reshape(y.shape)

    def mlp(p, h):
        return linear(w, p + "down_proj", act(linear(w, p + "gate_proj", h)) *
                      linear(w, p + "up_proj", h))

    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = p + "self_attn."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        if config.get("q_lora_rank") is None:
            q = linear(w, a + "q_proj", h)
        else:
            q = linear(w, a + "q_b_proj",
                       rms_norm(linear(w, a + "q_a_proj", h), w[a + "q_a_layernorm.weight"], eps))
        q = q.reshape(t, heads, nope + rope).transpose(1, 0, 2)
        q_nope, q_rot = q[..., :nope], q[..., nope:]
        compressed = linear(w, a + "kv_a_proj_with_mqa", h)
        latent = rms_norm(compressed[:, :rank], w[a + "kv_a_layernorm.weight"], eps)
        k_rot = compressed[None, :, rank:]
        if interleave:
            q_rot, k_rot = to_halves(q_rot), to_halves(k_rot)
        q_rot = rotate(q_rot, positions, inv) * cos_factor
        k_rot = rotate(k_rot, positions, inv) * cos_factor
        up = w[a + "kv_b_proj.weight"].reshape(heads, nope + vdim, rank)
        up_key, up_value = up[:, :nope], up[:, nope:]  # [heads][nope|v][rank]
        if absorbed:
            folded = q_nope @ up_key  # [heads][t][rank]
            scores = folded @ latent.T + q_rot @ k_rot[0].T
            i, j = np.arange(t)[:, None], np.arange(t)[None, :]
            scores = np.where(j <= i, scores * scale, -np.inf)
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=-1, keepdims=True)
            o = (weights @ latent) @ up_value.transpose(0, 2, 1)  # [heads][t][v]
        else:
            k_nope = np.einsum("hdr,tr->htd", up_key, latent)
            v = np.einsum("hdr,tr->htd", up_value, latent)
            k = np.concatenate([k_nope, np.repeat(k_rot, heads, axis=0)], axis=-1)
            o = attend(np.concatenate([q_nope, q_rot], axis=-1), k, v, scale)
        x = x + linear(w, a + "o_proj", o.transpose(1, 0, 2).reshape(t, heads * vdim))
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        sparse = (config.get("n_routed_experts") and
                  layer >= config.get("first_k_dense_replace", 0) and
                  layer % config.get("moe_layer_freq", 1) == 0)
        if not sparse:
            x = x + mlp(p + "mlp.", h)
            continue
        route = dict(config, _bias=w.get(p + "mlp.gate.e_score_correction_bias"))
        logits = h @ w[p + "mlp.gate.weight"].T
        out = np.zeros_like(h)
        for i in range(t):
            for e, weight in zip(*deepseek_route(route, logits[i])):
                out[i] += weight * mlp(f"{p}mlp.experts.{e}.", h[i])
        if config.get("n_shared_experts"):
            out += mlp(p + "mlp.shared_experts.", h)
        x = x + out
    x = rms_norm(x, w["model.norm.weight"], eps)
    return x @ output_head(config, w).T


def gpt_oss_logits(config, w, tokens):
    """GptOssForCausalLM: Llama's blocks with biases on q/k/v/o_proj, a
    learned sink logit per query head (self_attn.sinks) in every softmax,
    layer_types' sliding (sliding_window) and full layers (absent: sliding
    on the even layers), RoPE as rope_scaling says with YaRN's attention
    factor on cos and sin, and on every layer a mixture of
    num_local_experts: the router's logits (mlp.router, with its bias), the
    num_experts_per_tok largest (the lower expert first among equals),
    softmax over those; each expert (mlp.experts.gate_up_proj [E][hidden][2f]
    and down_proj [E][f][hidden], multiplied as x·W, with their biases)
    takes gate = its even columns, up = its odd ones, clamps gate above and
    up on both sides at swiglu_limit and computes (up + 1)·gate·
    sigmoid(swiglu_alpha·gate). hidden_act is not read (as transformers)."""
    hidden = config["hidden_size"]
    hq = config["num_attention_heads"]
    hkv = config.get("num_key_value_heads") or hq
    d = config.get("head_dim") or hidden // hq
    eps = config.get("rms_norm_eps", 1e-5)
    layers = config["num_hidden_layers"]
    types = config.get("layer_types") or [
        "sliding_attention" if (i + 1) % 2 else "full_attention"
        for i in range(layers)]
    window = config.get("sliding_window")
    k_experts = config.get("num_experts_per_tok", 4)
    alpha = config.get("swiglu_alpha", 1.702)
    limit = config.get("swiglu_limit", 7.0)
    config = dict(config)
    config.setdefault("rope_theta", 150000.0)
    inv = inverse_frequencies(config, d)
    scaling = config.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    factor = yarn_attention_factor(config) if kind == "yarn" else 1.0
    t = len(tokens)
    positions = np.arange(t, dtype=np.float64)
    x = w["model.embed_tokens.weight"][tokens]
    for layer in range(layers):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def heads(name, count):
            return linear(w, p + "self_attn." + name, h).reshape(
                t, count, d).transpose(1, 0, 2)

        q, k, v = heads("q_proj", hq), heads("k_proj", hkv), heads("v_proj", hkv)
        q = rotate(q, positions, inv) * factor
        k = rotate(k, positions, inv) * factor
        sliding = types[layer] == "sliding_attention"
        o = attend(q, k, v, 1.0 / math.sqrt(d), window if sliding else None,
                   sinks=w[p + "self_attn.sinks"])
        x = x + linear(w, p + "self_attn.o_proj",
                       o.transpose(1, 0, 2).reshape(t, hq * d))
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        logits = linear(w, p + "mlp.router", h)
        gate_up, gate_up_bias = (w[p + "mlp.experts.gate_up_proj"],
                                 w[p + "mlp.experts.gate_up_proj_bias"])
        down, down_bias = (w[p + "mlp.experts.down_proj"],
                           w[p + "mlp.experts.down_proj_bias"])
        out = np.zeros_like(h)
        for i in range(t):
            chosen = np.argsort(-logits[i], kind="stable")[:k_experts]
            top = logits[i][chosen]
            weights = np.exp(top - top.max())
            weights /= weights.sum()
            for e, weight in zip(chosen, weights):
                both = h[i] @ gate_up[e] + gate_up_bias[e]
                g = np.minimum(both[0::2], limit)
                u = np.clip(both[1::2], -limit, limit)
                glu = g / (1.0 + np.exp(-alpha * g))
                out[i] += weight * (((u + 1) * glu) @ down[e] + down_bias[e])
        x = x + out
    x = rms_norm(x, w["model.norm.weight"], eps)
    return x @ output_head(config, w).T


def round_to(value, torch_dtype):
    """A number as a tensor of torch_dtype holds it (round to nearest even)."""
    if torch_dtype == "float16":
        return float(np.float16(value))
    if torch_dtype == "bfloat16":
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array(bits, dtype=np.uint32).view(np.float32))
    return value


def gemma_logits(config, w, tokens):
    """Gemma2ForCausalLM and Gemma3ForCausalLM (gemma3_text): norms applied
    as (1 + w) before and after each sublayer, the embedding scaled by
    sqrt(hidden_size) in the checkpoint's dtype, queries scaled by
    query_pre_attn_scalar^-1/2, attention and final logits soft-capped
    (Gemma 2's defaults 50 and 30), sliding layers by layer_types or the
    pattern (Gemma 2: even layers; Gemma 3: all but every
    sliding_window_pattern-th), and in Gemma 3 QK-norm and the sliding
    layers' own RoPE base (rope_local_base_freq, no scaling)."""
    gemma3 = config["model_type"] == "gemma3_text"
    hidden = config["hidden_size"]
    hq = config["num_attention_heads"]
    hkv = config.get("num_key_value_heads") or hq
    d = config.get("head_dim") or 256
    eps = config.get("rms_norm_eps", 1e-6)
    act = activation(config.get("hidden_activation", "gelu_pytorch_tanh"))
    scale = config.get("query_pre_attn_scalar", 256) ** -0.5
    defaults = (None, None) if gemma3 else (50.0, 30.0)
    attn_cap = config.get("attn_logit_softcapping", defaults[0])
    final_cap = config.get("final_logit_softcapping", defaults[1])
    window = config.get("sliding_window", 4096)
    layers = config["num_hidden_layers"]
    if config.get("layer_types"):
        sliding = [kind == "sliding_attention" for kind in config["layer_types"]]
    elif gemma3:
        pattern = config.get("sliding_window_pattern", 6)
        sliding = [(i + 1) % pattern != 0 for i in range(layers)]
    else:
        sliding = [i % 2 == 0 for i in range(layers)]
    theta = config.get("rope_theta", 1000000.0 if gemma3 else 10000.0)
    global_inv = inverse_frequencies(dict(config, rope_theta=theta), d)
    local_inv = (inverse_frequencies({"rope_theta": config.get(
        "rope_local_base_freq", 10000.0)}, d) if gemma3 else global_inv)

    def norm(x, name):
        return rms_norm(x, 1.0 + w[name], eps)

    def project(name, y):
        return linear(w, name, y)

    t = len(tokens)
    positions = np.arange(t, dtype=np.float64)
    normalizer = round_to(math.sqrt(hidden), config.get("torch_dtype"))
    x = w["model.embed_tokens.weight"][tokens] * normalizer
    for layer in range(layers):
        p = f"model.layers.{layer}."
        h = norm(x, p + "input_layernorm.weight")
        q = project(p + "self_attn.q_proj", h).reshape(t, hq, d).transpose(1, 0, 2)
        k = project(p + "self_attn.k_proj", h).reshape(t, hkv, d).transpose(1, 0, 2)
        v = project(p + "self_attn.v_proj", h).reshape(t, hkv, d).transpose(1, 0, 2)
        if gemma3:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        inv = local_inv if sliding[layer] else global_inv
        q, k = rotate(q, positions, inv), rotate(k, positions, inv)
        o = attend(q, k, v, scale, window if sliding[layer] else None, attn_cap)
        o = project(p + "self_attn.o_proj", o.transpose(1, 0, 2).reshape(t, hq * d))
        x = x + norm(o, p + "post_attention_layernorm.weight")
        h = norm(x, p + "pre_feedforward_layernorm.weight")
        m = project(p + "mlp.down_proj",
                    act(project(p + "mlp.gate_proj", h)) * project(p + "mlp.up_proj", h))
        x = x + norm(m, p + "post_feedforward_layernorm.weight")
    x = norm(x, "model.norm.weight")
    head = (w["model.embed_tokens.weight"] if config.get("tie_word_embeddings", True)
            else w["lm_head.weight"])
    logits = x @ head.T
    if final_cap:
        logits = final_cap * np.tanh(logits / final_cap)
    return logits


def phi3_logits(config, w, tokens, prompt_length=None):
    """Phi3ForCausalLM: Q|K|V rows in one qkv_proj and gate|up rows in one
    gate_up_proj (up·act(gate)), partial rotary (the first
    int(head_dim·partial_rotary_factor) channels of each head rotate, over
    frequencies of that many), a sliding window on every layer. LongRoPE
    as generation with a KV cache computes it: each call takes the long
    factors once its longest sequence (largest position + 1) passes
    original_max_position_embeddings, so token j keeps the factors of the
    call that computed it (the prompt's call for prompt tokens, its own
    decode step after), and cos/sin carry the attention factor."""
    hidden = config["hidden_size"]
    hq = config["num_attention_heads"]
    hkv = config.get("num_key_value_heads") or hq
    d = config.get("head_dim") or hidden // hq
    f = config["intermediate_size"]
    eps = config.get("rms_norm_eps", 1e-5)
    act = activation(config.get("hidden_act", "silu"))
    window = config.get("sliding_window")
    rotary = int(d * config.get("partial_rotary_factor", 1.0))
    t = len(tokens)
    positions = np.arange(t, dtype=np.float64)
    scaling = config.get("rope_scaling") or {}
    factor = 1.0
    if scaling.get("rope_type", scaling.get("type")) == "longrope":
        original = (config.get("original_max_position_embeddings")
                    or config["max_position_embeddings"])
        calls = [max(prompt_length or t, j + 1) for j in range(t)]
        inv = np.stack([inverse_frequencies(config, rotary, length > original)
                        for length in calls])
        factor = longrope_attention_factor(config)
    else:
        inv = np.tile(inverse_frequencies(config, rotary), (t, 1))
    freqs = positions[:, None] * inv  # [t][rotary/2], per token's call
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb) * factor, np.sin(emb) * factor
    x = w["model.embed_tokens.weight"][tokens]

    def partial_rotate(y):
        r, half = y[..., :rotary], rotary // 2
        turned = np.concatenate([-r[..., half:], r[..., :half]], axis=-1)
        return np.concatenate([r * cos + turned * sin, y[..., rotary:]], axis=-1)

    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        qkv = h @ w[p + "self_attn.qkv_proj.weight"].T
        q = qkv[:, :hq * d].reshape(t, hq, d).transpose(1, 0, 2)
        k = qkv[:, hq * d:(hq + hkv) * d].reshape(t, hkv, d).transpose(1, 0, 2)
        v = qkv[:, (hq + hkv) * d:].reshape(t, hkv, d).transpose(1, 0, 2)
        q, k = partial_rotate(q), partial_rotate(k)
        o = attend(q, k, v, 1.0 / math.sqrt(d), window)
        x = x + o.transpose(1, 0, 2).reshape(t, hq * d) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate_up = h @ w[p + "mlp.gate_up_proj.weight"].T
        x = x + (gate_up[:, f:] * act(gate_up[:, :f])) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = (w["model.embed_tokens.weight"] if config.get("tie_word_embeddings")
            else w["lm_head.weight"])
    return x @ head.T


def gpt2_logits(config, w, tokens):
    """GPT2LMHeadModel: Conv1D weights [in][out], the head tied to wte."""
    hidden, heads = config["n_embd"], config["n_head"]
    d = hidden // heads
    eps = config.get("layer_norm_epsilon", 1e-5)
    act = activation(config.get("activation_function", "gelu_new"))
    prefix = "transformer." if "transformer.wte.weight" in w else ""
    t = len(tokens)
    x = w[prefix + "wte.weight"][tokens] + w[prefix + "wpe.weight"][:t]
    for layer in range(config["n_layer"]):
        p = f"{prefix}h.{layer}."
        h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (part.reshape(t, heads, d).transpose(1, 0, 2)
                   for part in np.split(qkv, 3, axis=-1))
        scale = 1.0 / math.sqrt(d) if config.get("scale_attn_weights", True) else 1.0
        if config.get("scale_attn_by_inverse_layer_idx"):
            scale /= layer + 1
        o = attend(q, k, v, scale).transpose(1, 0, 2).reshape(t, hidden)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        h = act(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w[prefix + "ln_f.weight"], w[prefix + "ln_f.bias"], eps)
    return x @ w[prefix + "wte.weight"].T


# Gemma3TextConfig's defaults (transformers' configuration_gemma3.py): what a
# multimodal checkpoint's text_config leaves out.
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True, "rope_theta": 1000000.0,
    "attention_bias": False, "query_pre_attn_scalar": 256,
    "sliding_window": 4096, "final_logit_softcapping": None,
    "attn_logit_softcapping": None, "rope_scaling": None,
    "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6}


def gemma3_text_stack(config, weights):
    """Gemma3ForConditionalGeneration's language model as a Gemma3ForCausalLM:
    its text_config over the defaults, the checkpoint's dtype, and its
    tensors under language_model.model.* (as published) or
    model.language_model.* (as newer transformers save) renamed model.*;
    the vision tower and projector dropped."""
    text = dict(GEMMA3_TEXT_DEFAULTS, **config.get("text_config", {}))
    text["model_type"] = "gemma3_text"
    text.setdefault("torch_dtype", config.get("torch_dtype"))
    renamed = {}
    for name, value in weights.items():
        for prefix in ("language_model.model.", "model.language_model."):
            if name.startswith(prefix):
                renamed["model." + name[len(prefix):]] = value
    return text, renamed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--prompt", default="1,2,3", help="token ids, comma-separated")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--prompt-logits", action="store_true",
                        help="also the logits after every prompt token")
    parser.add_argument("--absorbed", action="store_true",
                        help="DeepSeek: latent attention in its absorbed form")
    parser.add_argument("--quantize", metavar="int8[:G]|int4:G",
                        help="the linear weights as attnc's --weight-dtype "
                             "quantizes them (int4 in groups of G)")
    args = parser.parse_args()
    with open(os.path.join(args.model_dir, "config.json")) as f:
        config = json.load(f)
    weights = read_checkpoint(args.model_dir)
    if config["model_type"] == "gemma3":
        config, weights = gemma3_text_stack(config, weights)
    if config.get("quantization_config", {}).get("quant_method") == "mxfp4":
        weights = dequantize_mxfp4(weights)
    elif "quantization_config" in config:
        weights = dequantize(config, weights)
    if args.quantize:
        weights = quantize_like_attnc(config, weights, args.quantize)
    forward = {"llama": llama_logits, "mistral": llama_logits,
               "qwen2": llama_logits, "qwen3": llama_logits,
               "mixtral": llama_logits, "qwen3_moe": llama_logits,
               "qwen2_moe": llama_logits,
               "gemma2": gemma_logits, "gemma3_text": gemma_logits,
               "phi3": phi3_logits, "olmo2": olmo2_logits,
               "gpt2": gpt2_logits, "deepseek_v3": deepseek_logits,
               "deepseek_v2": deepseek_logits,
               "gpt_oss": gpt_oss_logits}.get(config["model_type"])
    if not forward:
        raise SystemExit(f"unsupported model_type {config['model_type']}")
    tokens = [int(t) for t in args.prompt.split(",")]
    prompt_length = len(tokens)
    generated, all_logits, result = [], [], {}
    for step in range(args.steps):
        rows = (forward(config, weights, tokens, prompt_length)
                if forward is phi3_logits
                else forward(config, weights, tokens, args.absorbed)
                if forward is deepseek_logits
                else forward(config, weights, tokens))
        if step == 0 and args.prompt_logits:
            result["prompt_logits"] = [[float(v) for v in row] for row in rows]
        logits = rows[-1]
        all_logits.append([float(v) for v in logits])
        best = int(np.argmax(logits))  # the first of equal maxima
        generated.append(best)
        tokens.append(best)
    result.update({"tokens": generated, "logits": all_logits})
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
