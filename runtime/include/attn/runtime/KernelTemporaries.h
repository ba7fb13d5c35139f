//===- KernelTemporaries.h - the kernels' own buffers ----------*- C++ -*-===//
//
// A kernel allocates its intermediate buffers on every call through its
// Halide runtime's halide_malloc: prefill's packed K and V tiles, for
// example, are 16 MiB each at 32 heads x 2,048 tokens. glibc serves blocks
// that large with fresh mmaps or returns them to the kernel when freed, so
// every call faulted its temporaries in again: 16K page faults and a third
// of a 2,048-token bf16 prefill on a Sapphire Rapids VM (bench/README.md).
// These two functions, installed as the model library's halide_malloc and
// halide_free (ModelLibrary) and as the JIT pipelines' (attn-bench), keep
// freed large blocks for the next call instead: at most kCachedBytes of
// them, process-wide, least recently freed dropped first, on 2 MiB pages
// where the kernel grants them. Small blocks go straight to malloc.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_KERNELTEMPORARIES_H
#define ATTN_RUNTIME_KERNELTEMPORARIES_H

#include <cstddef>
#include <cstdint>

namespace attn::runtime {

/// Blocks of at least this many bytes are cached when freed.
inline constexpr size_t kCachedBlockMin = size_t(256) << 10;
/// Free blocks kept for reuse, in bytes at most.
inline constexpr size_t kCachedBytes = size_t(256) << 20;
/// Alignment of every block returned (Halide's vector loads and the AMX
/// kernels' 64-byte tile rows need less).
inline constexpr size_t kTemporaryAlignment = 128;

/// halide_malloc_t: `bytes` aligned to kTemporaryAlignment, or null.
void *allocateKernelTemporary(void *userContext, size_t bytes);
/// halide_free_t: gives back a block allocateKernelTemporary returned.
void freeKernelTemporary(void *userContext, void *block);

struct KernelTemporaryStats {
  uint64_t reused = 0;    ///< large allocations served from the cache
  uint64_t allocated = 0; ///< large allocations that took fresh memory
  size_t cachedBytes = 0; ///< bytes of free blocks held now
};
KernelTemporaryStats kernelTemporaryStats();
/// Gives every cached block back to the system.
void releaseCachedKernelTemporaries();

} // namespace attn::runtime

#endif // ATTN_RUNTIME_KERNELTEMPORARIES_H
