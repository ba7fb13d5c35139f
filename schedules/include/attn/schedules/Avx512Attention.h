//===- Avx512Attention.h - fp32 prefill attention micro-kernels -*- C++ -*-===//
//
// The fp32 prefill kernel (Sdpa.cpp) as hand-blocked AVX-512 micro-kernels,
// for full (non-causal) attention on Intel cores: per block of query rows
// of one head, flash-style over chunks of keys,
//   S = Q·Kᵀ   register tiles of 12 rows x 32 keys (24 accumulators; K in
//              panels of 32 keys, a 128-byte row per channel)
//   online softmax per row (exp2 with the Halide kernels' floor)
//   O += P·V   register tiles of 6 rows x 64 channels (24 accumulators)
// then O / l. Halide's own schedule of the same algorithm reaches 59% of
// the FMA peak on Sapphire Rapids, where ONNX Runtime's MLAS reaches 70%;
// these loops are the products as MLAS-style GEMM micro-kernels over the
// block (bench/README.md has the figures). The pipeline calls it as an
// extern stage per parallel task where attn_avx512_attention_ready() says
// so (a CPU with AVX-512F whose family's row takes it: CpuFamily.h), and keeps its own products elsewhere.
//
// What it computes is SdpaSpec's full attention with key padding: no causal
// mask, sliding window, softcap or ALiBi (those kernels keep the Halide
// products), head_dim a multiple of 64 up to 256.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_AVX512ATTENTION_H
#define ATTN_SCHEDULES_AVX512ATTENTION_H

#include <algorithm>
#include <cstdint>

struct halide_buffer_t;

namespace attn::avx512 {

/// Keys per K panel: two vectors of a Q·Kᵀ register tile.
constexpr int kPanelKeys = 32;
/// Channels of a P·V register tile: head_dim is a multiple of it, up to
/// kMaxHeadDim.
constexpr int kOutputChannels = 64, kMaxHeadDim = 256;
/// Query rows per block: a 128-row task (the default query block) in one.
constexpr int kBlockRows = 128;

/// Keys padded to whole panels: the rows of K and V the kernel reads.
inline int paddedKeys(int keys) {
  return (keys + kPanelKeys - 1) / kPanelKeys * kPanelKeys;
}

/// The chunk of keys one softmax step handles: the schedule's kvChunk in
/// whole panels, 32 to 512.
inline int keyChunk(int kvChunk) {
  return std::clamp(paddedKeys(kvChunk), kPanelKeys, 512);
}

} // namespace attn::avx512

extern "C" {
/// 1 where the kernels below run: an x86-64 CPU with AVX-512F whose family's
/// row takes them (attn_cpu_avx512_attention, CpuFamily.h; elsewhere the
/// pipeline keeps its own products).
int attn_avx512_attention_ready(void);

/// The extern stage panels(lane, d, jb, hk, b) =
/// key(d, hk, min(32·jb + lane, kv_len - 1), b): K in panels of 32 keys,
/// one 128-byte row per channel. key is fp32 (d, hk, j, b) with channels
/// dense. Answers bounds queries; returns 0, or -1 on buffers it cannot
/// read.
int attn_avx512_pack_key_panels(halide_buffer_t *key, int32_t kvLen,
                                halide_buffer_t *panels);

/// The extern stage out(d, h, i, b) = full attention of query row i of
/// head h, batch entry b, for the region Halide asks (all of d), from
///   query (d, h, i, b)           fp32, scaled here by `scale`·log2(e)
///   key   (lane, d, jb, hk, b)   attn_avx512_pack_key_panels' panels
///   value (d, hk, j, b)          fp32, channels dense, keys up to
///                                paddedKeys(kv_len) (repeats past kv_len)
///   key_end (b)                  int32: entry b's keys past this are
///                                padding
/// query_heads_per_kv_head maps h to its KV head. Answers bounds queries.
/// Returns 0, or -1 on a CPU or buffers it cannot use (the pipeline checks
/// attn_avx512_attention_ready() first). A row that sees no key is 0.
int attn_avx512_attention_f32(halide_buffer_t *query, halide_buffer_t *key,
                              halide_buffer_t *value, halide_buffer_t *keyEnd,
                              int32_t queryHeadsPerKvHead, int32_t kvLen,
                              float scale, int32_t keyChunk,
                              halide_buffer_t *out);
}

#endif // ATTN_SCHEDULES_AVX512ATTENTION_H
