//===- AttentionParts.h - what the attention pipelines share ----*- C++ -*-===//
//
// The prefill pipelines' inputs, mask and online-softmax output (fp32 and
// bf16 products), the decode pipeline's layout pins, and the vectorized
// exp2 / sigmoid that the softmax and the linear kernels' activations use.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_ATTENTIONPARTS_H
#define ATTN_SCHEDULES_ATTENTIONPARTS_H

#include "KernelBuffers.h"
#include "attn/schedules/KernelSpec.h"
#include "attn/schedules/Pipelines.h"

#include "Halide.h"

#include <algorithm>
#include <cmath>

namespace attn {

/// Masked logits: finite, so max/exp never see -inf - -inf.
constexpr float kMaskedLogit = -1e30f;

/// Pins a [batch][len][heads][headDim] buffer's inner dimensions so LLVM sees
/// constant strides and trip counts (dynamic strides cost 2x in prototypes).
/// Prefill inputs keep a free token and batch stride: Q, K and V may then be
/// views into the rows of a fused QKV projection ([tokens][(Hq + 2·Hkv)·
/// headDim]), read in place (measured: no change at S = 2048). Decode keeps
/// its query dense: a free stride there measured ~10% slower at 32K keys,
/// and the runtime's copy of one row per sequence costs nothing.
inline void constrainActivation(Halide::OutputImageParam buffer, int heads,
                                int headDim, bool denseTokens = true) {
  buffer.dim(0).set_min(0).set_extent(headDim).set_stride(1);
  buffer.dim(1).set_min(0).set_extent(heads).set_stride(headDim);
  buffer.dim(2).set_min(0);
  if (denseTokens)
    buffer.dim(2).set_stride(heads * headDim);
  buffer.dim(3).set_min(0);
}

/// The channel extent of a P·V register tile (vectors of `vec` lanes): the
/// whole head when it is at most 5 vectors (<= 30 accumulators with 6 rows),
/// else 4 vectors, shrunk to divide head_dim where whole vectors do. A
/// partial tile in d (GuardWithIf) miscompiles under Halide 14 for one-row
/// query blocks (seen with head_dim 80, queryBlock 1; SdpaScheduleTest
/// covers it).
inline int pvTileChannels(int headDim, int vec) {
  int channels = std::min(4 * vec, headDim);
  if (headDim % vec == 0) {
    if (headDim / vec <= 5)
      channels = headDim;
    else
      while (headDim % channels != 0)
        channels -= vec;
  }
  return channels;
}

/// The smallest power of two exp2Nonpositive returns; below it, an exact 0.
/// Intel cores take a microcode assist (~100x an FMA) per subnormal operand
/// or result, so no kernel may make one from normal inputs: a softmax weight
/// or sigmoid of at least 2^-64.5 keeps its products with any factor above
/// 2^-61 normal, where 2^-126 would not. Dropping weights below 2^-64 of a
/// row's maximum changes its sum (>= 1) by at most keys·2^-64, far below
/// fp32's 2^-24 for any sequence shorter than 2^40 keys.
/// (test/kernels/SubnormalTest.cpp checks every kernel family bitwise with
/// the FTZ/DAZ bits of MXCSR off and on.)
constexpr float kExp2FloorLog2 = -64.0f;

/// 2^x for x <= 0 with a relative error below 2e-7: 2^round(x) times a
/// degree-6 polynomial of e^(f·ln2) on |f| <= 0.5. Inputs below
/// kExp2FloorLog2 (masked scores included) give an exact 0, never a
/// subnormal or NaN.
inline Halide::Expr exp2Nonpositive(Halide::Expr x) {
  using namespace Halide;
  // -127 makes the power-of-two factor's bits 0: the result is exactly 0.
  x = select(x < kExp2FloorLog2, -127.0f, x);
  Expr whole = round(x);
  Expr f = (x - whole) * float(M_LN2);
  Expr p = 1.0f / 720;
  for (float c : {1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
    p = p * f + c;
  return p * reinterpret<float>((cast<int>(whole) + 127) << 23);
}

/// A softmax row's output from its state in the log2 domain: the running
/// maximum m, the sum l of 2^(x - m) and the weighted values o. With a sink
/// logit (log2 domain; undefined: none), 2^sink joins the sum and adds no
/// value, both sides taken at t = max(m, sink) so neither overflows. A row
/// that saw no key (l = 0) is 0.
inline Halide::Expr normalizedRow(Halide::Expr m, Halide::Expr l,
                                  Halide::Expr o,
                                  Halide::Expr sink = Halide::Expr()) {
  using namespace Halide;
  if (!sink.defined())
    return select(l > 0.0f, o / l, 0.0f);
  Expr top = max(m, sink);
  Expr keep = exp2Nonpositive(m - top);
  return select(l > 0.0f, o * keep / (l * keep + exp2Nonpositive(sink - top)),
                0.0f);
}

/// 1 / (1 + e^-x), vectorized: e^-|x| from exp2Nonpositive, so neither
/// side overflows (libm's expf and tanhf are scalar calls in Halide 14).
/// Relative error below 3e-7 down to 2^-64 (x > -44); exactly 0 below.
inline Halide::Expr sigmoid(Halide::Expr x) {
  using namespace Halide;
  Expr e = exp2Nonpositive(-abs(x) * float(M_LOG2E));
  return select(x >= 0.0f, 1.0f / (1.0f + e), e / (1.0f + e));
}

/// The online-softmax combine in the log2 domain: (m, l, o) ⊕ (m', l', o')
/// rescales both sides to max(m, m'). Associative, so it can be a Tuple
/// update over chunks or splits in any grouping.
inline Halide::Tuple combineSoftmaxStates(const Halide::FuncRef &state,
                                          Halide::Expr m2, Halide::Expr l2,
                                          Halide::Expr o2) {
  using namespace Halide;
  Expr m1 = state[0], l1 = state[1], o1 = state[2];
  Expr m = max(m1, m2);
  Expr w1 = exp2Nonpositive(m1 - m), w2 = exp2Nonpositive(m2 - m);
  return {m, l1 * w1 + l2 * w2, o1 * w1 + o2 * w2};
}

/// A raw score in the log2 domain (q·k·scale·log2e) turned into the logit:
/// softcap (in natural units, so c·log2e here) then the ALiBi bias
/// slope·distance, distance = key position - query position (<= 0).
inline Halide::Expr adjustScore(Halide::Expr score, float softcap,
                                Halide::Expr alibiSlope,
                                Halide::Expr distance) {
  using namespace Halide;
  if (softcap > 0.0f) {
    float cap = softcap * float(M_LOG2E);
    score = cap * tanh(score / cap);
  }
  if (alibiSlope.defined())
    score += alibiSlope * float(M_LOG2E) * cast<float>(distance);
  return score;
}

/// The per-head ALiBi slope table, embedded in the generated code.
inline Halide::Func alibiSlopeTable(int heads) {
  std::vector<float> slopes = alibiSlopes(heads);
  Halide::Buffer<float> table(heads, "alibi_slopes");
  for (int h = 0; h < heads; h++)
    table(h) = slopes[h];
  Halide::Func slope("alibiSlope");
  Halide::Var h("h");
  slope(h) = table(Halide::clamp(h, 0, heads - 1));
  return slope;
}

/// Which keys each query row of an attention kernel sees, shared by the fp32
/// and bf16 prefill pipelines: causal masks aligned to the end of the keys,
/// sliding windows, and key padding (keyEnd: entry b's real keys).
struct PrefillMask {
  const SdpaSpec &spec;
  Halide::Expr
      diagonal;        ///< kv_len - q_len: query i sees keys j <= i + diagonal
  Halide::Expr keyEnd; ///< keys at or past this are padding (or absent)

  Halide::Expr visible(Halide::Expr i, Halide::Expr j) const {
    Halide::Expr seen = j < keyEnd;
    if (spec.causal || spec.window > 0)
      seen = seen && j <= i + diagonal;
    if (spec.window > 0)
      seen = seen && j > i + diagonal - spec.window;
    return seen;
  }

  /// Restricts the chunk RDom `rc` of a query block whose first row is
  /// `firstRow` to chunks some row of the block sees: none past the
  /// diagonal, none wholly before the first row's window, none past the
  /// entry's last real key.
  void skipInvisibleChunks(Halide::RDom &rc, Halide::Expr firstRow,
                           int queryBlock, int kvChunk) const {
    if (spec.causal || spec.window > 0)
      rc.where(rc * kvChunk <= firstRow + (queryBlock - 1) + diagonal);
    if (spec.window > 0)
      rc.where(rc * kvChunk + (kvChunk - 1) >
               firstRow + diagonal - spec.window);
    if (spec.keyPadding)
      rc.where(rc * kvChunk < keyEnd);
  }
};

/// The inputs both prefill pipelines take (KernelAbi.cpp) and what they
/// derive from them: Q, K and V with free token and batch strides,
/// key_lengths clamped to [0, kv_len], and the mask.
struct PrefillInputs {
  KernelBuffers buffers;
  Halide::ImageParam query, key, value, keyLengths;
  Halide::ImageParam sinks; ///< (h): with spec.sinks, each head's sink logit
  Halide::Expr qLen, kvLen;
  PrefillMask mask;

  /// `b` is the pipeline's batch variable (key lengths are per entry).
  PrefillInputs(const SdpaSpec &spec, Halide::Var b)
      : buffers(kernelBuffers(spec)), query(buffers.input("query")),
        key(buffers.input("key")), value(buffers.input("value")),
        keyLengths(spec.keyPadding ? buffers.input("key_lengths")
                                   : Halide::ImageParam()),
        sinks(spec.sinks ? buffers.input("sinks") : Halide::ImageParam()),
        qLen(query.dim(2).extent()),
        kvLen(key.dim(2).extent()), mask{spec, kvLen - qLen,
                                         spec.keyPadding
                                             ? Halide::clamp(keyLengths(b), 0,
                                                             kvLen)
                                             : kvLen} {}

  /// Pins the buffers' inner dimensions and returns the pipeline of
  /// `output` with its arguments in order.
  KernelPipeline finish(Halide::Func output) {
    const SdpaSpec &spec = mask.spec;
    constrainActivation(query, spec.numQueryHeads, spec.headDim, false);
    constrainActivation(key, spec.numKvHeads, spec.headDim, false);
    constrainActivation(value, spec.numKvHeads, spec.headDim, false);
    constrainActivation(output.output_buffer(), spec.numQueryHeads,
                        spec.headDim);
    if (spec.keyPadding)
      keyLengths.dim(0).set_min(0);
    if (spec.sinks)
      sinks.dim(0).set_min(0).set_extent(spec.numQueryHeads).set_stride(1);
    return buffers.finish({output});
  }
};

/// The logit of query row i and key j of head h: the raw score (log2
/// domain) adjusted by softcap and ALiBi, plus the mask as a bias. The mask
/// is a bias (and, in the probabilities, a 0/1 factor) rather than
/// select(visible, score, ...): Halide narrows a producer's bounds by a
/// select's condition, which gives empty regions for rows that see no key.
inline Halide::Expr prefillLogit(const SdpaSpec &spec, const PrefillMask &mask,
                                 Halide::Expr rawScore, Halide::Expr i,
                                 Halide::Expr j, Halide::Expr h) {
  Halide::Expr slope;
  if (spec.alibi)
    slope = alibiSlopeTable(spec.numQueryHeads)(h);
  return adjustScore(rawScore, spec.softcap, slope, j - (i + mask.diagonal)) +
         Halide::select(mask.visible(i, j), 0.0f, kMaskedLogit);
}

/// The end both prefill pipelines share: per query block, the online-softmax
/// state over the chunks the block sees, then the normalized output
/// out(d, h, i, b); its schedule of one parallel task per (batch, head,
/// query block). chunkMax(i, h, b, c), chunkSum(i, h, b, c) and
/// chunkOut(d, i, h, b, c) are one chunk's row max, row sum and P·V. With
/// `replacement` (the AMX kernel's output stage), the output is that where
/// `useReplacement` holds when the kernel runs: the caller specializes on
/// it and schedules the replacement at the task. `sinks` (h), defined with
/// spec.sinks, holds each head's sink logit (natural units).
struct PrefillOutput {
  Halide::Func state{"state"}, output{"output"};
  Halide::RDom chunks; ///< the state update's chunk loop: compute chunks at it
  Halide::Var task{"task"}; ///< the output's parallel task loop
};

inline PrefillOutput
buildPrefillOutput(const SdpaSpec &spec, const PrefillMask &mask,
                   Halide::ImageParam sinks, Halide::Func chunkMax, Halide::Func chunkSum,
                   Halide::Func chunkOut, Halide::Expr numChunks, int kvChunk,
                   int vec, bool gpu = false,
                   Halide::Expr useReplacement = Halide::Expr(),
                   Halide::Func replacement = Halide::Func()) {
  using namespace Halide;
  const int queryBlock = spec.schedule.queryBlock;
  Var d("d"), h("h"), i("i"), b("b"), ii("ii"), qb("qb"), io("io");
  PrefillOutput out;
  out.chunks = RDom(0, numChunks, "rc");
  RDom &rc = out.chunks;
  // The block's first row comes from a (tiny, root) table rather than the
  // expression qb·queryBlock: solving the chunk-skipping conditions for qb
  // would let bounds inference narrow each chunk's row range to a symbolic
  // one, under which Halide 14 scalarizes the bf16 kernel's atomic pairwise
  // reductions (measured: causal as slow as full).
  Func blockFirstRow("blockFirstRow");
  blockFirstRow(qb) = qb * queryBlock;
  mask.skipInvisibleChunks(rc, blockFirstRow(qb), queryBlock, kvChunk);
  Expr row = qb * queryBlock + ii;
  Func &state = out.state;
  state(d, ii, qb, h, b) = {kMaskedLogit, 0.0f, 0.0f};
  state(d, ii, qb, h, b) =
      combineSoftmaxStates(state(d, ii, qb, h, b), chunkMax(row, h, b, rc),
                           chunkSum(row, h, b, rc), chunkOut(d, row, h, b, rc));
  // A row that sees no key (causal with q_len > kv_len) is defined as 0.
  Expr m = state(d, i % queryBlock, i / queryBlock, h, b)[0];
  Expr l = state(d, i % queryBlock, i / queryBlock, h, b)[1];
  Expr o = state(d, i % queryBlock, i / queryBlock, h, b)[2];
  Expr normalized = normalizedRow(
      m, l, o, spec.sinks ? sinks(h) * float(M_LOG2E) : Expr());
  out.output(d, h, i, b) =
      useReplacement.defined()
          ? select(useReplacement, replacement(d, h, i, b), normalized)
          : normalized;
  if (gpu) // the caller schedules for the device
    return out;

  // Query blocks vary fastest across tasks: the two cores then work on
  // blocks of the same head and share its K and V through the caches
  // (heads fastest left each task to fetch another head's 2 MiB of K/V at
  // S=2048, D128: MHA 53-61% of peak, now 72-77%; GQA 58-69% -> 75%).
  out.output.split(i, io, i, queryBlock, TailStrategy::GuardWithIf)
      .reorder(d, i, io, h, b)
      .fuse(io, h, out.task)
      .fuse(out.task, b, out.task)
      .parallel(out.task)
      .vectorize(d, vec, TailStrategy::GuardWithIf);
  blockFirstRow.compute_root();
  state.compute_at(out.output, out.task)
      .vectorize(d, vec, TailStrategy::GuardWithIf);
  state.update().reorder(d, ii, rc).vectorize(d, vec,
                                              TailStrategy::GuardWithIf);
  return out;
}

} // namespace attn

#endif // ATTN_SCHEDULES_ATTENTIONPARTS_H
