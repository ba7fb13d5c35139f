//===- KvCache.h - paged key/value cache ------------------------*- C++ -*-===//
//
// The K and V of every layer for a set of sequences, stored in fixed-size
// pages of `pageSize` tokens. A sequence owns a block table (its page ids in
// order); one page id addresses the same slot in every layer's K and V pool,
// so one allocation serves the whole model. A contiguous cache is the special
// case pageSize == maxSequenceLength (one page per sequence).
//
// A layer that slides over a window of keys keeps only the window: the
// layers of one window share a pool of their own (KvCacheConfig::windows,
// windowPages), in which a sequence's pages wholly before its window are
// released as it grows, so their memory is a constant per sequence, not
// its length. Positions no later query reads are stored to a trash page.
//
// Forked sequences share pages by reference count; a page is copied before a
// write touches it while shared (copy-on-write), so both branches stay
// correct. Not thread-safe: one cache per session, one session per thread.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_KVCACHE_H
#define ATTN_RUNTIME_KVCACHE_H

#include "attn/runtime/DType.h"
#include "attn/runtime/DeviceApi.h"
#include "attn/runtime/Placed.h"
#include "attn/runtime/PoolAllocator.h"
#include "attn/runtime/Status.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace attn::runtime {

using SequenceId = int32_t;

struct KvCacheConfig {
  /// The most layers a cache holds: far past any model's, and a bound on the
  /// per-layer bookkeeping allocated before the pools (2^31 - 1 layers asked
  /// for 48 GiB of it).
  static constexpr int kMaxLayers = 1 << 16;
  int numLayers = 0;
  int numKvHeads = 0;
  int headDim = 0;
  DType dtype = DType::F32;
  int pageSize = 0;          ///< tokens per page, >= 1
  int numPages = 0;          ///< pages in the pool
  int maxSequenceLength = 0; ///< tokens per sequence at most
  /// Per layer [numLayers]: the sliding window in tokens, or 0 where the
  /// layer attends to every earlier position; empty: every layer does.
  std::vector<int32_t> windows;
  /// Pages in the pool of each distinct window, shared by its sequences
  /// (a trash page follows them).
  int windowPages = 0;
  /// The values are the keys (a latent attention layer's rows, attnc's
  /// #attn.latent): no value pools; the value side of every call reads
  /// and writes nothing of its own (write and read take null values,
  /// `pools` and `valuePages` answer the keys').
  bool keysOnly = false;

  /// One page of maxSequenceLength tokens per sequence.
  static KvCacheConfig contiguous(int numLayers, int numKvHeads, int headDim,
                                  DType dtype, int maxSequenceLength,
                                  int maxSequences);
  /// Bytes of K plus V for one token over all layers:
  /// 2 · layers · KV heads · head size · element bytes (1 · for keysOnly).
  size_t bytesPerToken() const;
};

class KvCache {
public:
  /// Validates `config` and allocates the pools (all pages free).
  static Status create(const KvCacheConfig &config, KvCache &cache);

  KvCache();
  KvCache(KvCache &&);
  /// Both free the device copies a GPU model gave this cache's pools.
  KvCache &operator=(KvCache &&other);
  ~KvCache();

  const KvCacheConfig &config() const { return config_; }

  // Sequences ---------------------------------------------------------------
  Status addSequence(SequenceId &id);
  Status removeSequence(SequenceId id);
  /// A new sequence with the parent's tokens, sharing its pages.
  Status fork(SequenceId parent, SequenceId &child);
  /// Makes the empty sequence `id` start with the full `pages` [count]
  /// (pages a prefix cache holds, or another sequence's): its length
  /// becomes count · pageSize, the pages shared (copy-on-write). Not for
  /// sliding-window caches.
  Status adoptPages(SequenceId id, const int32_t *pages, int count);
  /// Grows the sequence by `count` tokens (positions length..length+count-1),
  /// taking pages from the pools. No query from now on is at a position
  /// before `firstQuery` (default: the current length; a whole prompt's
  /// prefill, which attends over its own K/V, passes length + count): a
  /// sliding-window layer's pages wholly before firstQuery - window + 1 are
  /// released and not taken. Fails, changing nothing, past
  /// maxSequenceLength or when a pool has too few free pages.
  Status extend(SequenceId id, int count, int firstQuery = -1);
  /// Drops tokens from the end (rollback) down to `newLength`. Fails,
  /// changing nothing, where a sliding-window layer released the keys a
  /// query at newLength reads (0 is always possible).
  Status truncate(SequenceId id, int newLength);
  /// Tokens in the sequence; -1 for an unknown id.
  int length(SequenceId id) const;
  bool contains(SequenceId id) const;
  std::vector<SequenceId> sequences() const;

  // Data ---------------------------------------------------------------------
  /// Stores K and V of `count` tokens at positions [position, position+count)
  /// of `layer`, converting to the cache dtype; shared pages are copied first
  /// (positions a sliding window has passed are dropped).
  ///   key, value: [count][numKvHeads][headDim] float (value: null, or
  ///   ignored, for a keysOnly cache)
  Status write(SequenceId id, int layer, int position, int count,
               const float *key, const float *value);
  /// For kernels that write the cache themselves (a K/V projection with the
  /// cache append fused in): makes positions [position, position+count) of
  /// the sequence writable in `layer` and the layers sharing its pages
  /// (shared pages are copied first, as in write) and stores each token's
  /// slot, page · pageSize + offset (its row in pools(layer)'s
  /// [poolPages(layer)·pageSize][numKvHeads][headDim] view), in slots
  /// [count]; a position a sliding window has passed gets a slot of the
  /// trash page. Fails, changing nothing, like write.
  Status reserveSlots(SequenceId id, int position, int count, int32_t *slots,
                      int layer = 0);
  /// Loads K and V of positions [position, position+count) as floats (not
  /// ones a sliding window released).
  ///   key, value: [count][numKvHeads][headDim] float (a keysOnly cache's
  ///   value, when not null, gets the keys)
  Status read(SequenceId id, int layer, int position, int count, float *key,
              float *value) const;

  /// The page ids of a sequence in `layer`'s pools, in token order (for
  /// paged kernels); kReleased where a sliding window passed.
  const std::vector<int32_t> *blockTable(SequenceId id, int layer = 0) const;
  static constexpr int32_t kReleased = -1;
  /// Pages in `layer`'s pools, a sliding window's trash page included.
  int poolPages(int layer) const;
  /// The first page of a sequence's block table in `layer` that a query at
  /// `position` reads: 0, or where its sliding window starts.
  int firstPageRead(int layer, int position) const {
    return groupOf(layer).firstPageRead(position, config_.pageSize);
  }
  /// Whether some layer keeps only a sliding window of keys.
  bool slidesWindows() const {
    return groups_.size() > 1 || (!groups_.empty() && groups_[0].window);
  }
  /// Page pool of one layer: [poolPages][pageSize][numKvHeads][headDim] dtype.
  const void *keyPages(int layer) const { return keys_[layer].data(); }
  const void *valuePages(int layer) const {
    return config_.keysOnly ? keyPages(layer) : values_[layer].data();
  }
  /// I8 caches: the scale of each (token, head) row of a layer's pools,
  /// [poolPages][pageSize][numKvHeads] float (nullptr for other dtypes).
  const float *keyScales(int layer) const {
    return keyScales_.empty() ? nullptr : keyScales_[layer].data();
  }
  const float *valueScales(int layer) const {
    return config_.keysOnly         ? keyScales(layer)
           : valueScales_.empty() ? nullptr
                                  : valueScales_[layer].data();
  }
  // Kernels' view -------------------------------------------------------------
  /// One layer's pools as kernel arguments: the K and V page pools
  /// [poolPages·pageSize][numKvHeads][headDim] dtype and, for I8 caches,
  /// their row scales [poolPages·pageSize][numKvHeads] (else null), each
  /// with its device copy once a GPU model placed the layer there.
  struct LayerPools {
    Placed<void> keys, values;
    Placed<float> keyScales, valueScales;
  };
  /// For kernels that read the pools or write the slots reserveSlots
  /// returned (const as the kernels' calls are: what a kernel may write,
  /// reserveSlots made writable).
  LayerPools pools(int layer) const;
  /// A GPU model's kernels are about to use `layer`'s pools on `api`'s
  /// device: gives them device copies, once (what the host wrote goes up
  /// before the first kernel reads it). Host accesses (write, read, copies
  /// on write) keep both sides coherent from then on.
  Status placeOn(const DeviceApi &api, int layer) const;

  // Pages held apart from sequences (a prefix cache's; not for
  // sliding-window caches) ----------------------------------------------------
  /// One more reference to `page`, which must be in use (a sequence's): the
  /// page stays out of the pool until every reference is dropped.
  void holdPage(int32_t page);
  void dropPage(int32_t page);
  /// References to `page`: sequences' block tables and holds.
  int references(int32_t page) const { return groups_[0].refCounts[page]; }

  // Accounting ---------------------------------------------------------------
  /// Pages free and in use in the pool of `layer` (0 for a layer the
  /// cache does not have).
  int freePages(int layer = 0) const {
    return hasLayer(layer) ? int(groupOf(layer).freeList.size()) : 0;
  }
  int usedPages(int layer = 0) const {
    return hasLayer(layer) ? groupOf(layer).numPages - freePages(layer) : 0;
  }
  /// Bytes of all K and V pools (what the compiler's plan reports).
  size_t poolBytes() const;
  /// Checks every structural invariant: refcounts equal block-table
  /// references plus holds, free pages are unreferenced and listed once,
  /// lengths fit
  /// their block tables. For tests; O(pages + tokens).
  Status checkInvariants() const;

private:
  /// The layers that share page ids: those of one window.
  struct Group {
    int window = 0;   ///< 0: every position is kept
    int numPages = 0; ///< pages to take; a window's trash page follows
    std::vector<int> layers;
    std::vector<int32_t> refCounts; ///< per page
    std::vector<int32_t> holds; ///< per page: references apart from sequences
    std::vector<int32_t> freeList; ///< a stack of page ids
    /// The first page a query at `position` or later reads.
    int firstPageRead(int position, int pageSize) const {
      return window ? std::max(0, position - window + 1) / pageSize : 0;
    }
  };
  struct Sequence {
    bool live = false;
    int length = 0;
    std::vector<std::vector<int32_t>> pages; ///< per group, token order
  };
  const Group &groupOf(int layer) const { return groups_[layerGroup_[layer]]; }
  bool hasLayer(int layer) const {
    return layer >= 0 && size_t(layer) < layerGroup_.size();
  }

  Status lookup(SequenceId id, const char *operation) const;
  /// reserveSlots after `id` and `layer` are known good; `operation` names
  /// the caller in errors.
  Status reserve(const char *operation, SequenceId id, int position, int count,
                 int32_t *slots, int layer);
  int pagesFor(int tokens) const;
  size_t pageBytes() const;
  size_t tokenBytes() const; ///< one token, one layer, K or V
  int32_t takePage(Group &group);
  void releasePage(Group &group, int32_t page);
  /// Copies page `from` to `to` in the layers of `group`.
  Status copyPage(const Group &group, int32_t from, int32_t to);
  void hostAccess(int layer, bool write) const;
  enum class PoolKind { Keys, Values, KeyScales, ValueScales };
  /// The device copy of one of `layer`'s pools; null on the CPU.
  DeviceCopy *deviceCopy(int layer, PoolKind pool) const;
  /// One token's K and V rows [numKvHeads][headDim] float into / out of
  /// `slot` of `layer`, converted (I8: quantized per head, with scales).
  void store(int layer, int32_t slot, const float *key, const float *value);
  void load(int layer, int32_t slot, float *key, float *value) const;

  KvCacheConfig config_;
  using Pool = std::vector<uint8_t, PoolAllocator<uint8_t>>;
  std::vector<Pool> keys_, values_;                         // per layer pools
  std::vector<std::vector<float>> keyScales_, valueScales_; // per layer, I8
  std::vector<Group> groups_;       // by first layer
  std::vector<int> layerGroup_;     // per layer: its group
  std::vector<Sequence> sequences_; // indexed by SequenceId
  /// [layer · 4 + PoolKind]: the pools' device copies; empty on the CPU.
  mutable std::vector<std::unique_ptr<DeviceCopy>> deviceCopies_;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_KVCACHE_H
