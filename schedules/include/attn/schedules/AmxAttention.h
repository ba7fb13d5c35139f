//===- AmxAttention.h - prefill attention on Intel AMX tiles ----*- C++ -*-===//
//
// The bf16-product prefill kernel (SdpaBf16.cpp) on AMX-BF16 tile
// registers: per block of 32 query rows, flash-style over chunks of keys,
// S = Q·Kᵀ and O += P·V as tdpbf16ps tile products (32 x 32 blocks in four
// 16 x 16 fp32 accumulators, 32 channels or keys deep per step) with the
// online softmax between them in AVX-512. The pipeline calls it as an extern
// stage per parallel task, with Q, K and V already rounded to bf16 in the
// layouts both its own vdpbf16ps products and the tiles read, and keeps its
// own products on CPUs without tiles (the object and its availability check
// are AmxLinear.h's).
//
// What it computes is SdpaSpec's attention without softcap or ALiBi (those
// kernels keep the Halide products): per row, the keys [lo, hi) of a causal
// mask aligned to the end of the keys, a sliding window and key padding.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_AMXATTENTION_H
#define ATTN_SCHEDULES_AMXATTENTION_H

#include <algorithm>
#include <cstdint>

struct halide_buffer_t;

namespace attn::amx {

/// Query rows per block: two 16-row tiles.
constexpr int kQueryRows = 32;
/// Keys per step of the products: two 16-key tiles of Q·Kᵀ, one 32-deep
/// step of P·V.
constexpr int kKeyStep = 32;

/// Query rows padded to whole blocks: the rows of Q the kernel reads.
inline int paddedRows(int rows) {
  return (rows + kQueryRows - 1) / kQueryRows * kQueryRows;
}

/// Keys padded to whole steps: the rows of K and V the kernel reads.
inline int paddedKeys(int keys) {
  return (keys + kKeyStep - 1) / kKeyStep * kKeyStep;
}

/// The chunk of keys whose scores one softmax step handles: the schedule's
/// kvChunk in whole steps, 32 to 512 (scores and probabilities of a block
/// then take 32 x 512 x 6 bytes at most, L1 to L2).
inline int keyChunk(int kvChunk) {
  return std::clamp(paddedKeys(kvChunk), kKeyStep, 512);
}

} // namespace attn::amx

extern "C" {
/// The extern stage tiles(lane, jj, pair, jb, hk, b) = bf16 bits of
/// key(2·pair + lane, hk, min(16·jb + jj, kv_len - 1), b): K rounded to bf16
/// (nearest even) in blocks of 16 keys whose pairs of channels are 64-byte
/// rows, so that a Q·Kᵀ operand tile (16 pairs x 16 keys) is 1 KiB of
/// contiguous memory. key is fp32 (d, hk, j, b) with channels dense.
/// Answers bounds queries; returns 0, or -1 without AMX.
int attn_amx_pack_keys(halide_buffer_t *key, int32_t kvLen,
                       halide_buffer_t *tiles);

/// The extern stage pairs(lane, d, pair, hk, b) = bf16 bits of
/// value(d, hk, min(2·pair + lane, kv_len - 1), b): V rounded to bf16
/// (nearest even) with pairs of keys interleaved, the P·V operand's rows.
/// value is fp32 (d, hk, j, b) with channels dense. Answers bounds queries;
/// returns 0, or -1 without AMX.
int attn_amx_pack_values(halide_buffer_t *value, int32_t kvLen,
                         halide_buffer_t *pairs);

/// The extern stage out(d, h, i, b) = attention of query row i of head h,
/// batch entry b, for the region Halide asks (all of d), from
///   query (d, i, h, b)        bf16 bits, pre-scaled by scale·log2(e)
///   key   (lane, jj, pair, jb, hk, b)  attn_amx_pack_keys' tiles
///   value (lane, d, pair, hk, b)  attn_amx_pack_values' pairs
///   key_end (b)               int32: entry b's keys past this are padding
/// with keys j of row i visible iff j < key_end[b], and, with `causal`,
/// j <= i + diagonal, and, with window > 0, j > i + diagonal - window
/// (diagonal = kv_len - q_len). head_dim is query's extent, a multiple of
/// 32 up to 256; query_heads_per_kv_head maps h to its KV head. Answers
/// bounds queries (rows rounded up to 32, keys to paddedKeys(kv_len); a
/// last block of Q realized only up to its last row is read from a copy).
/// Returns 0, or -1 without AMX or on buffers it cannot read (the pipeline
/// checks attn_amx_ready() first). A row that sees no key is 0.
int attn_amx_attention_bf16(halide_buffer_t *query, halide_buffer_t *key,
                            halide_buffer_t *value, halide_buffer_t *keyEnd,
                            int32_t queryHeadsPerKvHead, int32_t kvLen,
                            int32_t diagonal, int32_t causal, int32_t window,
                            int32_t keyChunk, halide_buffer_t *out);
}

#endif // ATTN_SCHEDULES_AMXATTENTION_H
