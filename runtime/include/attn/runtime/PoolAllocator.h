//===- PoolAllocator.h - large pools on transparent huge pages --*- C++ -*-===//
//
// KV cache pools are hundreds of megabytes read front to back by decode.
// On 4 KiB pages every 4 KiB of a stream costs a TLB miss; Linux backs
// 2 MiB-aligned memory advised MADV_HUGEPAGE with 2 MiB pages (the common
// "madvise" THP setting), which made decode over a 128K-token paged cache
// 17-25% faster (bench/README.md). Small allocations take the usual path.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_POOLALLOCATOR_H
#define ATTN_RUNTIME_POOLALLOCATOR_H

#include <cstddef>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace attn::runtime {

inline constexpr size_t kHugePage = size_t(2) << 20;

/// `bytes` rounded up to whole 2 MiB pages, 2 MiB-aligned and advised
/// MADV_HUGEPAGE; null if the system refuses. std::free releases it.
inline void *allocateOnHugePages(size_t bytes) {
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void *p = std::aligned_alloc(kHugePage, rounded);
#ifdef MADV_HUGEPAGE
  if (p)
    madvise(p, rounded, MADV_HUGEPAGE); // advice: failure changes nothing
#endif
  return p;
}

template <class T> struct PoolAllocator {
  using value_type = T;

  PoolAllocator() = default;
  template <class U> PoolAllocator(const PoolAllocator<U> &) noexcept {}

  T *allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage)
      return static_cast<T *>(::operator new(bytes));
    void *p = allocateOnHugePages(bytes);
    if (!p)
      throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t n) noexcept {
    if (n * sizeof(T) < kHugePage)
      ::operator delete(p);
    else
      std::free(p);
  }
  template <class U> bool operator==(const PoolAllocator<U> &) const {
    return true;
  }
  template <class U> bool operator!=(const PoolAllocator<U> &) const {
    return false;
  }
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_POOLALLOCATOR_H
