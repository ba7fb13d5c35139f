//===- AmxLinear.h - bf16 products on Intel AMX tiles -----------*- C++ -*-===//
//
// A linear layer's product Y = X·W at prompt sizes on AMX-BF16 tile
// registers: tdpbf16ps multiplies a 16 x 32 bf16 tile by a 32 x 16 one
// into 16 x 16 fp32 per instruction, 14x the fp32 FMA peak measured on a
// 2-vCPU Sapphire Rapids VM. Halide 14's own AMX lowering cannot use it
// (its bf16 reduction tile is stuck at 2 of the 32), so this is a hand-
// written micro-kernel in intrinsics, which the linear pipeline calls per
// output tile as a Halide extern stage (Linear.cpp) when the CPU and the OS
// allow tiles, keeping its own product otherwise.
//
// W comes as the linear kernels' bf16 panels (packLinearWeights,
// KernelSpec.h): per panel of 32 output features, per input k, 16 words
// holding feature p in the low half and p + 16 in the high half. The
// kernel re-pairs them along k (AMX's B operand holds pairs of
// consecutive k per column) into a per-thread scratch block, two AVX-512
// operations per 64 bytes, far below the products' cost at >= 16 tokens.
//
// int8 weights take it too, their values (exact in bf16) unpacked into the
// scratch block and each feature's scale applied to the sums by the
// pipeline. int4 weights (Int4Weights.h's layout) take the same path: each panel
// pair is dequantized, W = (u - z)·s in fp32 rounded to bf16, into the same
// scratch block instead of re-paired, once per call and panel, against the
// products of every token block over it.
//
// The object has no other dependency (not even the Halide runtime: only
// its buffer type) and uses AMX and AVX-512 only inside functions that run
// after available() said yes, so attnc puts it into every x86-64 model
// library whatever CPU the library later runs on.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_AMXLINEAR_H
#define ATTN_SCHEDULES_AMXLINEAR_H

#include <algorithm>
#include <cstdint>
#include <string>

struct halide_buffer_t;

extern "C" {
/// Null if this process can run AMX-BF16 tile instructions: the CPU has
/// AMX-TILE, AMX-BF16 and AVX512-BF16 (cpuid leaf 7), and Linux granted
/// the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once per
/// process); else which part is missing.
const char *attn_amx_unavailable_reason(void);
}

namespace attn::amx {

/// Whether attn_amx_unavailable_reason() is null; if not, `why` (when
/// given) says which part is missing.
inline bool available(std::string *why = nullptr) {
  const char *reason = attn_amx_unavailable_reason();
  if (reason && why)
    *why = reason;
  return !reason;
}

/// Tokens per block of the product, the depth of one tile step, and the
/// features of a panel.
constexpr int kTokenBlock = 32, kDepthStep = 32, kPanelFeatures = 32;

/// An input width padded to whole tile steps.
inline int paddedDepth(int in) {
  return (in + kDepthStep - 1) / kDepthStep * kDepthStep;
}

/// Tokens padded to whole blocks: the rows of X a product reads.
inline int paddedTokens(int tokens) {
  return (tokens + kTokenBlock - 1) / kTokenBlock * kTokenBlock;
}

/// Panels covering `features` outputs.
inline int panelCount(int features) {
  return (features + kPanelFeatures - 1) / kPanelFeatures;
}

/// X's bf16 row stride (elements) for an input padded to `paddedIn`: one
/// cache line more, so the 16 rows of a tile load do not all fall into
/// one L1 set.
inline int xRowStride(int paddedIn) { return paddedIn + 32; }

/// Rows (k pairs) x 32 features of one panel re-paired for AMX, in uint32
/// words.
inline int64_t pairedPanelWords(int paddedIn) {
  return int64_t(paddedIn / 2) * kPanelFeatures;
}

/// Panels linearBf16Block re-pairs at a time: as many as fit in 1 MiB of
/// L2, at least one.
inline int panelGroup(int paddedIn) {
  return int(std::max<int64_t>(
      1, (int64_t(1) << 20) / (pairedPanelWords(paddedIn) * 4)));
}

/// The scratch linearBf16Block needs, in uint32 words: one panel group.
inline int64_t scratchWords(int paddedIn) {
  return pairedPanelWords(paddedIn) * panelGroup(paddedIn);
}

/// X's rows [m0, m1) as AMX's left operand: xb[m][k] = bf16(x[m][k])
/// (round to nearest even), zero for k in [in, paddedIn). Needs available().
///   x:  fp32 [tokens][in]
///   xb: bf16 bits [tokens][xStride]
void packTokensBf16(const float *x, int in, int m0, int m1, int paddedIn,
                    int xStride, uint16_t *xb);

/// Y[m][n] = sum_k Xb[m][k] · W[k][n] in fp32 for `rows` tokens and the
/// features [nBegin, nEnd), in 32 x 32 blocks of four 16 x 16 accumulator
/// tiles over k in steps of 32. Needs available(). Give xb, panels and
/// scratch 64-byte aligned (as Halide's buffers are): tile loads of rows
/// that straddle cache lines take about twice as long.
///   xb:      bf16 bits, row r of the call at xb + r·xStride, rows up to
///            `rows` rounded up to 32 readable (zero past the tokens),
///            columns [0, paddedIn) with zeros past `in`
///   panels:  uint32 [panel][in][16] (packLinearWeights' BF16 layout)
///   scratch: uint32 [scratchWords(paddedIn)], per thread
///   y:       fp32, Y[r][nBegin + c] at y[r·yStride + c]
void linearBf16Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                     const uint32_t *panels, int rows, int nBegin, int nEnd,
                     uint32_t *scratch, float *y, int yStride);

/// int4 weights as linearInt4Block reads them (Int4Weights.h): panels of
/// kInt4Panel features, so a product panel of 32 spans one or more.
struct Int4Source {
  const uint16_t *weight = nullptr; ///< [panels][rows][2 · kInt4Panel]
  const float *scales = nullptr;    ///< [panels][groups][kInt4Panel]
  const uint8_t *zeros = nullptr;   ///< the same, or null: 8
  int group = 0, groups = 0, rows = 0, panels = 0;
};

/// linearBf16Block with W = bf16((u - z)·s) from int4 panels. paddedIn must
/// not pass the panels' rows (groups · group inputs).
void linearInt4Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                     const Int4Source &weights, int rows, int nBegin, int nEnd,
                     uint32_t *scratch, float *y, int yStride);

/// linearBf16Block with W = q, the int8 weights' values (exact in bf16;
/// the caller scales each feature's sums), from their panels
/// (packLinearWeights' I8 layout): per panel of 16 features, per pair of
/// inputs j, 32 bytes, byte 2f + r holding input 2j + r of feature f.
///   panels: int8 [panel][(in + 1) / 2][32]
void linearInt8Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                     const int8_t *panels, int panelCount, int rows,
                     int nBegin, int nEnd, uint32_t *scratch, float *y,
                     int yStride);

} // namespace attn::amx

extern "C" {
/// Halide's view of the above (Linear.cpp calls these from generated
/// code; the names are the ABI between the pipeline and this object).
/// Nonzero when available().
int attn_amx_ready(void);
/// An extern stage y(n, m) = sum_k xb(k, m) · W(k, n): xb (k, m) uint16
/// with k over [0, xRowStride(paddedDepth(in))), weight (16, in, panel)
/// uint32, y (n, m) fp32 for the region Halide asks. Answers bounds
/// queries. Returns 0, or -1 if called without AMX (a pipeline checks
/// attn_amx_ready() first).
int attn_amx_linear_bf16(halide_buffer_t *xb, halide_buffer_t *weight,
                         int32_t in, int32_t out, halide_buffer_t *y);
/// The same over int4 weights: weight (32, rows, panel) uint16, scales
/// (16, group, panel) fp32 and, for the _zeros form, zeros (16, group,
/// panel) uint8 (KernelSpec.h's I4 layout).
int attn_amx_linear_int4(halide_buffer_t *xb, halide_buffer_t *weight,
                         halide_buffer_t *scales, int32_t in, int32_t out,
                         int32_t group, halide_buffer_t *y);
int attn_amx_linear_int4_zeros(halide_buffer_t *xb, halide_buffer_t *weight,
                               halide_buffer_t *scales, halide_buffer_t *zeros,
                               int32_t in, int32_t out, int32_t group,
                               halide_buffer_t *y);
/// attn_amx_linear_bf16 over int8 panels: weight (32, (in + 1) / 2, panel)
/// int8; y unscaled (the sums of x · q).
int attn_amx_linear_int8(halide_buffer_t *xb, halide_buffer_t *weight,
                         int32_t in, int32_t out, halide_buffer_t *y);
}

#endif // ATTN_SCHEDULES_AMXLINEAR_H
