//===- KernelTemporaries.cpp - a cache of the kernels' large buffers -----===//

#include "attn/runtime/KernelTemporaries.h"

#include "attn/runtime/PoolAllocator.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace attn::runtime {

namespace {

/// The first kTemporaryAlignment bytes of every block: what free needs.
struct BlockHeader {
  size_t capacity; ///< usable bytes after the header
  bool cached;     ///< a large block: back to the cache when freed
};
static_assert(sizeof(BlockHeader) <= kTemporaryAlignment);

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

void *payload(BlockHeader *header) {
  return reinterpret_cast<char *>(header) + kTemporaryAlignment;
}
BlockHeader *headerOf(void *block) {
  return reinterpret_cast<BlockHeader *>(static_cast<char *>(block) -
                                         kTemporaryAlignment);
}

/// A fresh block of `total` bytes, its header included, aligned to
/// `alignment` (kHugePage: on 2 MiB pages, PoolAllocator.h), or null.
BlockHeader *allocateBlock(size_t total, size_t alignment, bool cached) {
  void *base = alignment == kHugePage ? allocateOnHugePages(total)
                                      : std::aligned_alloc(alignment, total);
  if (!base)
    return nullptr;
  auto *header = static_cast<BlockHeader *>(base);
  header->capacity = total - kTemporaryAlignment;
  header->cached = cached;
  return header;
}

struct FreeBlock {
  BlockHeader *header;
  uint64_t freedAt; ///< the cache's clock when it came back
};

/// Free large blocks, process-wide (Halide's runtime has one malloc hook).
struct Cache {
  std::mutex mutex;
  std::vector<FreeBlock> blocks;
  size_t bytes = 0;
  uint64_t clock = 0;
  KernelTemporaryStats stats;

  /// The tightest cached block of `need` bytes wasting at most a quarter
  /// more, the most recently freed of equals (its pages are the warmest),
  /// or null.
  BlockHeader *take(size_t need) {
    std::lock_guard<std::mutex> lock(mutex);
    auto best = blocks.end();
    for (auto it = blocks.begin(); it != blocks.end(); ++it) {
      const size_t capacity = it->header->capacity;
      if (capacity < need || capacity > need + need / 4 + kHugePage)
        continue;
      if (best == blocks.end() || capacity < best->header->capacity ||
          (capacity == best->header->capacity && it->freedAt > best->freedAt))
        best = it;
    }
    if (best == blocks.end()) {
      stats.allocated++;
      return nullptr;
    }
    BlockHeader *header = best->header;
    bytes -= header->capacity;
    blocks.erase(best);
    stats.reused++;
    return header;
  }

  void give(BlockHeader *header) {
    std::vector<BlockHeader *> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex);
      blocks.push_back({header, ++clock});
      bytes += header->capacity;
      while (bytes > kCachedBytes) {
        auto oldest =
            std::min_element(blocks.begin(), blocks.end(),
                             [](const FreeBlock &a, const FreeBlock &b) {
                               return a.freedAt < b.freedAt;
                             });
        bytes -= oldest->header->capacity;
        dropped.push_back(oldest->header);
        blocks.erase(oldest);
      }
    }
    for (BlockHeader *block : dropped)
      std::free(block);
  }
};

Cache &cache() {
  static Cache *instance = new Cache(); // outlives kernels run at exit
  return *instance;
}

} // namespace

void *allocateKernelTemporary(void * /*userContext*/, size_t bytes) {
  if (bytes < kCachedBlockMin) {
    BlockHeader *header =
        allocateBlock(roundUp(bytes + kTemporaryAlignment, kTemporaryAlignment),
                      kTemporaryAlignment, /*cached=*/false);
    return header ? payload(header) : nullptr;
  }
  if (BlockHeader *header = cache().take(bytes))
    return payload(header);
  // 2 MiB pages for blocks of several of them; 64 KiB steps below, so that
  // a slightly longer sequence still fits a cached block.
  const size_t alignment = bytes >= kHugePage ? kHugePage : 4096;
  const size_t step = bytes >= kHugePage ? kHugePage : size_t(64) << 10;
  BlockHeader *header = allocateBlock(
      roundUp(bytes + kTemporaryAlignment, step), alignment, /*cached=*/true);
  return header ? payload(header) : nullptr;
}

void freeKernelTemporary(void * /*userContext*/, void *block) {
  if (!block)
    return;
  BlockHeader *header = headerOf(block);
  if (header->cached && header->capacity <= kCachedBytes)
    cache().give(header);
  else
    std::free(header);
}

KernelTemporaryStats kernelTemporaryStats() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  KernelTemporaryStats stats = c.stats;
  stats.cachedBytes = c.bytes;
  return stats;
}

void releaseCachedKernelTemporaries() {
  Cache &c = cache();
  std::vector<FreeBlock> blocks;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    blocks.swap(c.blocks);
    c.bytes = 0;
  }
  for (const FreeBlock &block : blocks)
    std::free(block.header);
}

} // namespace attn::runtime
