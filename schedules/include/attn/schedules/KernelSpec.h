//===- KernelSpec.h - what a kernel computes, without MLIR ------*- C++ -*-===//
//
// The plain description of one kernel that the compiler hands to schedules/.
// It names the function, fixes the shape parameters the kernel is specialized
// for and the variant; dynamic extents (batch, sequence lengths) stay runtime
// arguments of the generated function.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_KERNELSPEC_H
#define ATTN_SCHEDULES_KERNELSPEC_H

#include "attn/runtime/DType.h"       // DType: caches and weights
#include "attn/runtime/Int4Weights.h" // kInt4Panel
#include "attn/runtime/attnc_library.h" // ATTNC_APPEND_OUTPUT_ALIGNMENT
#include "attn/schedules/Alibi.h" // alibiSlopes
#include "attn/schedules/AttentionSchedules.h"

#include <cmath>
#include <string>
#include <vector>

namespace attn {

/// What an attention kernel computes, shared by the prefill and decode
/// specs (the compiler fills it from an attn.kernel op in one place,
/// attentionSettings in compiler/KernelSpecs.cpp). The logit of query i and
/// key j is scale·q_i·k_j, capped to softcap·tanh(logit/softcap) when
/// softcap > 0, plus the ALiBi bias slope_h·(j - i_absolute) with `alibi`
/// (slopes as in Press et al., attn::alibiSlopes); `causal` and `window`
/// mask as each spec says. With `sinks` (gpt-oss), input sinks
/// [query_heads] holds a learned logit per query head that joins every
/// row's softmax denominator and contributes no value:
/// out_i = Σ_j e^(x_ij) v_j / (Σ_j e^(x_ij) + e^(sink_h)).
struct AttentionSettings {
  int numQueryHeads = 0;
  int numKvHeads = 0;
  int headDim = 0;
  bool causal = false;
  int window = 0; ///< > 0: sliding window, query i sees only its last
                  ///< `window` keys (causal)
  float scale = 0.0f;
  float softcap = 0.0f; ///< > 0: logits become softcap·tanh(logit/softcap)
  bool alibi = false;   ///< add ALiBi biases slope_h·(j - i_absolute)
  bool sinks = false;   ///< a learned logit per query head in the softmax

  int queryHeadsPerKvHead() const { return numQueryHeads / numKvHeads; }
};

/// Scaled dot-product attention, softmax(Q·Kᵀ·scale + mask)·V. Its buffers,
/// their shapes and order: kernelBuffers (KernelAbi.h). Query, key and value
/// may have any token and batch stride (views into a fused QKV projection's
/// rows); heads and channels are dense. Causal masks are aligned to the end of
/// the keys: query i sees key j iff j <= i + (kv_len - q_len); a sliding window
/// of W keys also requires j > i + (kv_len - q_len) - W; i_absolute
/// (AttentionSettings) is i + kv_len - q_len. With `keyPadding`, the input
/// key_lengths says how many leading keys of each batch entry are real: key j
/// of entry b is seen only if j < key_lengths[b] (on top of the causal / window
/// rule); a row that sees no key is 0. Chunks past an entry's length are
/// skipped.
struct SdpaSpec : AttentionSettings {
  std::string functionName;
  bool keyPadding = false; ///< a key_lengths input masks padded keys
  SdpaCompute compute = SdpaCompute::F32;
  /// The kernel may call attnc's x86-64 object (schedules/AttnAmxObject):
  /// bf16 products then run on AMX tiles where the CPU has them
  /// (sdpaUsesAmx, Pipelines.h), and fp32 products take the schedule's
  /// Intel tiles where the CPU family's row says so (CpuFamily.h). False keeps the Halide
  /// products and one schedule (attnc clears it where it has no x86-64
  /// object to put in the library).
  bool x86Object = true;
  SdpaSchedule schedule;
};

/// Decode attention over a paged KV cache: a few new query tokens per
/// sequence attend to everything cached for that sequence (which already
/// holds the new tokens' K and V). Its buffers, their shapes and order:
/// kernelBuffers (KernelAbi.h). query holds the new tokens; key_pages and
/// value_pages are the page pools in cacheElement (I8: with key_scales and
/// value_scales, element (p, s, h, d) is q · scale(p, s, h)); block_table
/// row b lists sequence b's pages in order; seq_lens counts each sequence's
/// cached tokens. A contiguous cache is pageSize == maximum length, one page
/// per sequence. With `causal`, new token t of a sequence of length L sees keys
/// j <= L - q_len + t; without, it sees all L keys. Page ids and lengths are
/// clamped into the buffers, so a corrupt table cannot read out of bounds.
struct DecodeSpec : AttentionSettings {
  DecodeSpec() { causal = true; }
  std::string functionName;
  int pageSize = 0;
  DType cacheElement = DType::F32;
  DecodeSchedule schedule;
};

/// Tunable schedule parameters of the linear (projection) kernel.
struct LinearSchedule {
  int vectorWidth = 0; ///< fp32 lanes; 0: the target's natural width
  int tileVectors = 4; ///< output features per register tile, in vectors
  int tileRows = 6;    ///< tokens per register tile
};

/// An elementwise activation applied to a linear layer's output.
enum class Activation {
  None,
  GeluTanh, ///< 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's "gelu_new"
  Relu,
  Silu, ///< x·sigmoid(x)
  Gelu, ///< x·Φ(x) = 0.5·x·(1 + erf(x/√2)), the exact GELU (BART's "gelu")
};

/// A linear layer, out = act(in · W + bias) + residual, the building block of
/// projections, FFNs and output heads. Its buffers, their shapes and order:
/// kernelBuffers (KernelAbi.h); what they hold:
///   weight: W in panels of weightPanel(weightElement) output features,
///           panels = ceil(outFeatures / that), the last one padded with
///           zeros. F32 and F16: 16 features, word p of row k of panel q
///           is W(k, 16q + p) (PyTorch's [out][in] element [n][k] is
///           W(k, n)). BF16: 32 features, a word is uint32 holding
///           W(k, 32q + p) in its low half and W(k, 32q + 16 + p) in its
///           high half, so widening is a shift and a mask, no shuffle. I8:
///           16 features and inputs in pairs: byte 2p + r of row j of panel
///           q is the int8 of W(2j + r, 16q + p) (0 past the inputs),
///           W(k, n) = that · its scale (weight_scales); the kernel
///           multiplies pairs of them with pairs of int16 inputs
///           (vpdpwssd / vpmaddwd).
///           I4: 16 features, rows of 8 inputs, groups of G = weightGroup
///           inputs (the last one zero-padded): uint16 word 2p + r of row
///           j of panel q holds 4-bit values u of feature 16q + p, input
///           8j + 2t + r in bits 4t..4t + 3, so each nibble of a 64-byte
///           row gives the int16 pairs of vpdpwssd by a shift and a mask;
///           W(k, n) = (u - z) · s with the scale s and zero point z of
///           (k / G, n) (attn/runtime/Int4Weights.h). MXFP4: I4's layout
///           in groups of 32 with E2M1 codes as u, W(k, n) = e2m1(u) ·
///           2^(e - 127) with the exponent byte e of (k / 32, n).
///           Output features are contiguous within a panel row (what the
///           kernel vectorizes over) and a panel's rows follow each other,
///           so a register tile streams contiguous memory.
///   weight_scales (I8 weights only): symmetric per output feature, scale
///           = max_k |W(k, n)| / 127; the kernel rounds the input to int16
///           per block of kInt8InputBlock inputs and token (scale: the
///           block's max |x| / 32767), sums the integer products per block,
///           scales each block's sum, and multiplies by the weight scale
///           once per output. I8 with a weightGroup G (16 or 32: GGUF's
///           Q6_K and Q8_0 blocks): [panels][groups][16] fp32, the scale of
///           (k / G, n) at (q, g, p) as I4's; the input's blocks are the
///           groups, each block's sum scaled by both scales.
///   weight_scales (MXFP4 weights): [panels][groups][16] uint8, e of
///           group g and feature 16q + p at (q, g, p); the kernel decodes
///           each code to twice its value (an integer in [-12, 12]) and
///           scales a block's integer sum by 2^(e - 128); inputs as I4's.
///   weight_scales (I4 weights): [panels][groups][16] fp32, s of group g
///           and feature 16q + p at (q, g, p); weight_zeros (I4 with
///           weightZeros): the same shape in uint8, z; without them z = 8
///           (symmetric: u - 8 in [-8, 7]). The input is rounded to int16
///           per group and token (scale: its max |x| / 32767), or to int8
///           (max |x| / 127) where linearUsesInt8Inputs (Pipelines.h) says
///           the kernel multiplies with vpdpbusd; each group's
///           integer sum of u · x, less z times the group's sum of x, is
///           scaled by s times the input's scale into the fp32 sum.
///           weight_mins (I4 with weightMins, instead of zero points:
///           GGUF's Q4_1 and Q4_K): the same shape in fp32, m, with W(k, n)
///           = u · s + m; each group adds m times the sum of its inputs.
///   residual (when `residual`): added after the activation, so an output
///           projection or FFN down projection finishes its block's
///           residual connection in one pass.
///
/// With `ropeTheta` > 0 the first `ropeHeads` heads of `ropeHeadDim` output
/// features (the Q and K parts of a fused QKV projection) are rotated by
/// their token's position (Hugging Face's rotate_half convention: feature i
/// pairs with i ± headDim/2, frequency ropeTheta^(-2i'/headDim), i' = i mod
/// headDim/2, as `ropeScaling` rescales it, angles in fp32 like the
/// reference implementations; times its attention factor, yarn's); the kernel
/// then takes each token's `positions`. With `qkNormEps` > 0 (QK-norm), each
/// of those heads is first RMS-normalized over its ropeHeadDim features,
/// x / sqrt(mean(x²) + qkNormEps), in fp32, and multiplied feature by
/// feature by qk_norm_weight [ropeHeads · ropeHeadDim] (the query norm's
/// weight repeated for each query head, then the key norm's for each key
/// head: one per-feature vector serves any head layout). With
/// `qkNormScope` Projection (OLMo 2), the RMS is over groups of heads
/// instead: the query heads together, the key heads together, where the key
/// heads are the last outFeatures/ropeHeadDim - ropeHeads RoPE heads (the
/// features after the RoPE heads are values, as many heads as keys; none:
/// one group), qk_norm_weight the query norm's weight then the key norm's. With `inputGate` (a gated FFN's
/// down projection), input holds 2·inFeatures per token, a gate half and an
/// up half, and the product reads
/// inputGate(gate)·up: SwiGLU and friends without a separate kernel;
/// gpt-oss's form with `gateAlpha` (a silu gate's gain: g·sigmoid(alpha·g))
/// and `gateLimit` (g clamped above and u to [-limit, limit], then
/// act(g)·(u + 1)).
/// With `cacheAppend` (a K/V-producing projection of a cached layer), the
/// last 2·kvHeads·headDim output features (K, then V, after RoPE) are also
/// written straight into the layer's KV cache, in the cache's element type
/// (round to nearest even), at the slots the runtime reserved: cache_slots
/// holds page·pageSize + offset of each token's row, or -1 for a token that
/// is not cached; key_cache and value_cache are the layer's whole page pool
/// flattened to slots (only the named slots are written); I8 pools also get
/// each row's scale in key_scales, value_scales (value = q · scale, as
/// KvCache::write stores them). Slots are clamped into the pool, so a corrupt
/// slot cannot write outside. (CUDA targets: a bf16 pool is typed uint16, the
/// same bits.) The output must then be kAppendOutputAlignment-byte aligned (the
/// kernel reads its K/V rows back with aligned vector loads; a misaligned
/// output is a kernel error). With `argmax` (an output head), a second output,
/// best_token, holds each token's greedy choice: the lowest index of its
/// largest output (what std::max_element picks), or -1 when any of its outputs
/// is NaN (the caller reports it; no token wins).
constexpr int kAppendOutputAlignment = ATTNC_APPEND_OUTPUT_ALIGNMENT;
/// Inputs per int16 quantization block of an int8-weight linear kernel:
/// a block's int32 sum is at most 256 · 32767 · 127 < 2^31.
constexpr int kInt8InputBlock = 256;
/// Output features per panel of a linear kernel's weight: 16 (kInt4Panel
/// for int4), or 32 for bf16 pairs (the runtime reads it from the plan's
/// weight_panel).
constexpr int weightPanel(DType element) {
  return element == DType::BF16                               ? 32
         : element == DType::I4 || element == DType::MXFP4 ? int(kInt4Panel)
                                                           : 16;
}
/// How RoPE's inverse frequencies follow from ropeTheta (transformers'
/// rope_type): Default θ^(-2i/d); Linear divides them by `factor`; Llama3
/// divides the low frequencies (wavelength above originalMaxPositions /
/// lowFreqFactor) by `factor`, keeps the high ones (below
/// originalMaxPositions / highFreqFactor) and blends in between; Yarn
/// (transformers' _compute_yarn_parameters) keeps the frequencies that turn
/// more than betaFast times over originalMaxPositions, divides those that
/// turn fewer than betaSlow times by `factor`, ramps linearly between
/// (bounds floored/ceiled with `truncate`), and multiplies the rotated
/// features by attentionFactor (so Q·K by its square); Dynamic (NTK)
/// keeps the default frequencies while a call's longest sequence L (its
/// largest position + 1) is within originalMaxPositions, and past it uses
/// the base θ·(factor·L/originalMaxPositions - (factor - 1))^(d/(d-2)),
/// computed per call in the kernel; LongRope (Phi-3.5, Phi-4-mini) divides
/// frequency i by shortFactors[i] while a call's longest sequence is within
/// originalMaxPositions and by longFactors[i] past it (transformers'
/// longrope, per call), and multiplies the rotated features by
/// attentionFactor (√(1 + ln factor / ln originalMaxPositions) unless the
/// rule states one).
struct RopeScaling {
  enum class Type {
    Default,
    Linear,
    Llama3,
    Yarn,
    Dynamic,
    LongRope
  } type = Type::Default;
  double factor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  double originalMaxPositions = 8192;
  double betaFast = 32, betaSlow = 1;
  bool truncate = true;
  double attentionFactor = 1;
  std::vector<double> shortFactors, longFactors; ///< LongRope, per pair
};
/// Yarn's default attention factor: 0.1·mscale·ln(factor) + 1 (1 when
/// factor <= 1), or the ratio of that for `mscale` and `mscaleAllDim` when
/// both are given (transformers' get_mscale).
double yarnAttentionFactor(double factor, double mscale, double mscaleAllDim);
/// The headDim/2 inverse frequencies of a RoPE head.
std::vector<double> ropeInverseFrequencies(double theta, int headDim,
                                           const RopeScaling &scaling);
/// What one QK-norm RMS spans: a head, or all the query (or key) heads.
enum class QkNormScope { Head, Projection };

struct CacheAppend {
  int kvHeads = 0; ///< 0: no append
  int headDim = 0;
  DType element = DType::F32;
};
struct LinearSpec {
  std::string functionName;
  int inFeatures = 0;
  int outFeatures = 0;
  bool bias = false;
  Activation activation = Activation::None;
  bool residual = false;
  Activation inputGate = Activation::None;
  float gateAlpha = 0.0f; ///< > 0: a silu gate's gain (gpt-oss's 1.702)
  float gateLimit = 0.0f; ///< > 0: gate and up clamped, up + 1 (gpt-oss)
  float ropeTheta = 0.0f;
  int ropeHeads = 0;
  int ropeHeadDim = 0;
  RopeScaling ropeScaling;
  float qkNormEps = 0.0f; ///< > 0: QK-norm of the RoPE heads
  QkNormScope qkNormScope = QkNormScope::Head;
  /// Partial rotary: only the first ropeDim features of each RoPE head
  /// rotate (pairs i and i + ropeDim/2, frequencies over ropeDim, the
  /// attention factor on them alone); the rest pass through. 0: all.
  int ropeDim = 0;
  /// W's element type: F32, F16, BF16, I8, I4 or MXFP4 (widened to fp32 as
  /// it is read; I8, I4 and MXFP4 on CPU targets only; MXFP4's weightGroup
  /// is 32).
  DType weightElement = DType::F32;
  /// I4: inputs per scale (32, 64 or 128), and whether each group has a
  /// zero point of its own (else 8). I8: 0 (a scale per output feature)
  /// or inputs per scale (16 or 32).
  int weightGroup = 0;
  bool weightZeros = false;
  /// I4: each group has an fp32 minimum m, W = u · s + m (no zero point).
  bool weightMins = false;
  CacheAppend cacheAppend;
  bool argmax = false;
  /// > 0: each output becomes softcap·tanh(output/softcap) (an output
  /// head's logit cap, Gemma 2's), before the argmax reads it.
  float softcap = 0.0f;
  /// bf16, int8 and int4 weights at prompt sizes may multiply X (and int4's
  /// dequantized W) rounded to bf16 on AMX tiles (linearUsesAmx,
  /// Pipelines.h); false keeps the kernel's own product.
  bool bf16Products = true;
  /// > 0: a mixture's expert kernel. W stacks `experts` matrices of
  /// outFeatures outputs each (whole panels, one expert after another);
  /// the kernel itself runs on a view of one of them.
  int experts = 0;
  /// The grouped variant of an expert kernel (`<name>_experts`): W is the
  /// whole stack and row m of the input multiplies expert expert_index[m]'s
  /// matrix, so one call runs every expert a decode step chose. One-row
  /// tiles; no RoPE, cache append or argmax.
  bool groupedExperts = false;
  LinearSchedule schedule;
};

/// Layer norm, (x - mean)/sqrt(var + eps)·weight + bias, or RMS norm,
/// x/sqrt(mean(x²) + eps)·weight, over each token's features. Statistics in
/// fp32, variance of the centred values (no E[x²] - E[x]² cancellation).
/// Buffers: kernelBuffers (KernelAbi.h).
enum class NormKind { LayerNorm, RmsNorm };
/// With `residual`, a residual [tokens][dim] input is added to the
/// normalized rows (Gemma's norms of a sublayer's output).
struct NormSpec {
  std::string functionName;
  NormKind kind = NormKind::LayerNorm;
  int dim = 0;
  float eps = 1e-5f;
  bool residual = false;
};

/// Token embedding (times `scale`) plus positions. `Sinusoidal` adds
/// Vaswani et al.'s table (channel 2i: sin(pos/10000^(2i/dim)), channel
/// 2i+1: the cosine), computed in the kernel; `SinusoidalHalves` adds
/// Marian's (channel c < ceil(dim/2): sin(pos/10000^(2c/dim)), channel
/// ceil(dim/2) + c: cos(pos/10000^(2c/dim))), computed in double and
/// rounded, as transformers fills its frozen table; `Learned` adds row
/// position + positionOffset of a position table. Buffers: kernelBuffers
/// (KernelAbi.h); token ids are in [0, vocabSize), positions in
/// [0, maxPositions). Ids outside their range are clamped (the runtime rejects
/// them before a kernel runs; the clamp only keeps a bad id from reading out of
/// bounds).
enum class PositionKind { None, Sinusoidal, Learned, SinusoidalHalves };
struct EmbeddingSpec {
  std::string functionName;
  int vocabSize = 0;
  int dim = 0;
  PositionKind positions = PositionKind::None;
  int maxPositions = 0;
  float scale = 1.0f;
  int positionOffset = 0;
};

} // namespace attn

#endif // ATTN_SCHEDULES_KERNELSPEC_H
