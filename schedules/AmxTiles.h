//===- AmxTiles.h - what the AMX micro-kernels share ------------*- C++ -*-===//
//
// Private to the AMX object (AmxLinear.cpp, AmxAttention.cpp): the guard
// that confines AMX and AVX-512 code to functions with a target attribute,
// the tile configuration both kernels load, and the per-thread scratch.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_AMXTILES_H
#define ATTN_SCHEDULES_AMXTILES_H

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 11)
#define ATTN_AMX 1
#include <immintrin.h>
#define ATTN_AMX_CODE                                                          \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512bf16")))
#endif

namespace attn::amx {

/// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
};

/// The configuration both kernels use: all eight tiles 16 rows x 64 bytes
/// (16 x 16 fp32 accumulators, 16 x 32 bf16 operands).
inline TileConfig fullTiles() {
  TileConfig config;
  for (int t = 0; t < 8; t++) {
    config.bytesPerRow[t] = 64;
    config.rows[t] = 16;
  }
  return config;
}

/// This thread's scratch of at least `words` uint32 (64-byte aligned,
/// reused across calls, freed when the thread ends), or null if it cannot
/// be allocated.
uint32_t *threadScratch(size_t words);

} // namespace attn::amx

#endif // ATTN_SCHEDULES_AMXTILES_H
