//===- KernelTemporariesTest.cpp - the kernels' temporary-buffer cache ----===//

#include "attn/runtime/KernelTemporaries.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace attn::runtime;

namespace {

bool aligned(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % kTemporaryAlignment == 0;
}

class KernelTemporariesTest : public ::testing::Test {
protected:
  void SetUp() override { releaseCachedKernelTemporaries(); }
  void TearDown() override { releaseCachedKernelTemporaries(); }
};

TEST_F(KernelTemporariesTest, SmallBlocksAreAlignedAndNotCached) {
  for (size_t bytes :
       {size_t(1), size_t(100), size_t(4096), kCachedBlockMin - 1}) {
    void *block = allocateKernelTemporary(nullptr, bytes);
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(aligned(block)) << bytes;
    std::memset(block, 0xab, bytes); // all of it is writable
    freeKernelTemporary(nullptr, block);
  }
  EXPECT_EQ(kernelTemporaryStats().cachedBytes, 0u);
  freeKernelTemporary(nullptr, nullptr); // as free(nullptr)
}

TEST_F(KernelTemporariesTest, LargeBlocksComeBackForTheNextCall) {
  const size_t bytes = size_t(16) << 20; // a 2,048-token packed K, 32 heads
  const KernelTemporaryStats before = kernelTemporaryStats();
  void *first = allocateKernelTemporary(nullptr, bytes);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(aligned(first));
  std::memset(first, 1, bytes);
  freeKernelTemporary(nullptr, first);
  EXPECT_GE(kernelTemporaryStats().cachedBytes, bytes);

  // The same size, and a slightly smaller one, reuse the block; one far
  // smaller does not (it would waste most of it).
  void *again = allocateKernelTemporary(nullptr, bytes);
  EXPECT_EQ(again, first);
  freeKernelTemporary(nullptr, again);
  void *smaller = allocateKernelTemporary(nullptr, bytes - 4096);
  EXPECT_EQ(smaller, first);
  void *small = allocateKernelTemporary(nullptr, bytes / 4);
  EXPECT_NE(small, first);
  const KernelTemporaryStats after = kernelTemporaryStats();
  EXPECT_EQ(after.reused - before.reused, 2u);
  EXPECT_EQ(after.allocated - before.allocated, 2u);
  freeKernelTemporary(nullptr, smaller);
  freeKernelTemporary(nullptr, small);

  releaseCachedKernelTemporaries();
  EXPECT_EQ(kernelTemporaryStats().cachedBytes, 0u);
}

TEST_F(KernelTemporariesTest, TwoLiveBlocksOfOneSizeAreDistinct) {
  const size_t bytes = size_t(3) << 20;
  void *a = allocateKernelTemporary(nullptr, bytes);
  void *b = allocateKernelTemporary(nullptr, bytes);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  std::memset(a, 1, bytes);
  std::memset(b, 2, bytes);
  EXPECT_EQ(static_cast<unsigned char *>(a)[bytes - 1], 1);
  freeKernelTemporary(nullptr, a);
  freeKernelTemporary(nullptr, b);
}

TEST_F(KernelTemporariesTest, TheCacheStaysWithinItsBound) {
  // Twice the bound in blocks of 48 MiB, all live, then all freed: the
  // least recently freed are given back to the system.
  const size_t bytes = size_t(48) << 20;
  std::vector<void *> blocks;
  for (size_t total = 0; total < 2 * kCachedBytes; total += bytes) {
    blocks.push_back(allocateKernelTemporary(nullptr, bytes));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (void *block : blocks)
    freeKernelTemporary(nullptr, block);
  const size_t cached = kernelTemporaryStats().cachedBytes;
  EXPECT_LE(cached, kCachedBytes);
  EXPECT_GT(cached, kCachedBytes - 2 * bytes);
  // The most recently freed block is still there.
  EXPECT_EQ(allocateKernelTemporary(nullptr, bytes), blocks.back());
  freeKernelTemporary(nullptr, blocks.back());

  // A block over the bound is never cached.
  void *huge = allocateKernelTemporary(nullptr, kCachedBytes + 1);
  ASSERT_NE(huge, nullptr);
  releaseCachedKernelTemporaries();
  freeKernelTemporary(nullptr, huge);
  EXPECT_EQ(kernelTemporaryStats().cachedBytes, 0u);
}

} // namespace
