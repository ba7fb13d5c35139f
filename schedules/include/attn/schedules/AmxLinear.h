//===- AmxLinear.h - bf16 products on Intel AMX tiles -----------*- C++ -*-===//
//
// A linear layer's product Y = X·W at prompt sizes on AMX-BF16 tile
// registers: tdpbf16ps multiplies a 16 x 32 bf16 tile by a 32 x 16 one
// into 16 x 16 fp32 per instruction, 14x the fp32 FMA peak measured on a
// 2-vCPU Sapphire Rapids VM. Halide 14's own AMX lowering cannot use it
// (its bf16 reduction tile is stuck at 2 of the 32), so this is a hand-
// written micro-kernel in intrinsics, called per output block.
//
// W comes as the linear kernels' bf16 panels (packLinearWeights,
// KernelSpec.h): per panel of 32 output features, per input k, 16 words
// holding feature p in the low half and p + 16 in the high half. The
// kernel re-pairs them along k (AMX's B operand holds pairs of
// consecutive k per column) into a per-call scratch block, two AVX-512
// operations per 64 bytes, far below the products' cost at >= 16 tokens.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_AMXLINEAR_H
#define ATTN_SCHEDULES_AMXLINEAR_H

#include <cstdint>
#include <string>

namespace attn::amx {

/// Whether this process can run AMX-BF16 tile instructions: the CPU has
/// AMX-TILE and AMX-BF16 (cpuid leaf 7), and Linux granted the tile data
/// state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once per process). If not,
/// `why` (when given) says which part is missing.
bool available(std::string *why = nullptr);

/// Rows of X a block of the product covers, and its input width, padded:
/// the bf16 copy of X that linearBf16Block reads is kTokenBlock-row and
/// kDepthStep-column aligned, zero in the padding.
constexpr int kTokenBlock = 32, kDepthStep = 32, kPanelFeatures = 32;

/// X's bf16 row stride (elements) for an input padded to `paddedIn`: one
/// cache line more, so the 16 rows of a tile load fall into different L1
/// sets.
inline int xRowStride(int paddedIn) { return paddedIn + 32; }

/// Rows (k pairs) x 32 features x 2 of one panel re-paired for AMX; the
/// scratch a call of linearBf16Block needs per panel, in uint32 words.
inline int64_t pairedPanelWords(int paddedIn) {
  return int64_t(paddedIn / 2) * kPanelFeatures;
}

/// X's rows [m0, m1) as AMX's left operand: xb[m][k] = bf16(x[m][k])
/// (round to nearest even, AVX512-BF16), zero for k in [in, paddedIn).
///   x:  fp32 [tokens][in]
///   xb: bf16 bits [tokens][xStride]
void packTokensBf16(const float *x, int in, int m0, int m1, int paddedIn,
                    int xStride, uint16_t *xb);

/// Y[m][n] = sum_k Xb[m][k] · W[k][n] in fp32 for tokens [m0, m1) and the
/// panels [p0, p1) (features 32·p0 ...), each a kTokenBlock x 32 block of
/// four 16 x 16 accumulator tiles over k in steps of 32.
///   xb:      bf16 bits [paddedTokens][xStride], the first paddedIn
///            (% 32 == 0) of each row used; xStride % 32 == 0 and not a
///            multiple of 2048 bytes' worth (X's 16-row tile loads would
///            fall into one L1 set: use xRowStride)
///   panels:  uint32 [panel][in][16] (packLinearWeights' BF16 layout)
///   scratch: uint32 [pairedPanelWords(paddedIn)], per thread
///   y:       fp32 [tokens][yStride]; columns past `out` are not written
/// Needs available(); m0 % kTokenBlock == 0.
void linearBf16Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                     const uint32_t *panels, int out, int m0, int m1, int p0,
                     int p1, uint32_t *scratch, float *y, int yStride);

} // namespace attn::amx

#endif // ATTN_SCHEDULES_AMXLINEAR_H
