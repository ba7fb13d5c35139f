//===- PrefixCache.h - K/V pages of prompt prefixes, reused ------*- C++
//-*-===//
//
// Requests that begin alike (a system prompt, a chat's history) reuse the
// K/V pages an earlier request computed. Only full pages are cached, each
// keyed by the hash chain of the token ids up to and including its own:
// key(page i) = XXH3(tokens of page i, seed = key(page i-1)), so one lookup
// per page walks the longest cached prefix, and a key's tokens are compared
// too (a hash collision costs a miss, never a wrong answer). A page's K/V
// depend only on the tokens before it, which the chain names.
//
// vLLM's hash chain rather than SGLang's radix tree: the KV cache already
// shares whole pages between sequences by reference count, so a page is the
// unit to share; a radix tree's token-granular matches would still reuse only
// whole pages.
//
// The cache holds one reference to each of its pages (KvCache::holdPage).
// Pages only it holds are evicted least recently used first (the deeper
// page first among those used together, so chains shrink from their ends)
// when the pool needs room. Not thread-safe, like its KvCache.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_PREFIXCACHE_H
#define ATTN_RUNTIME_PREFIXCACHE_H

#include "attn/runtime/KvCache.h"

#include <cstdint>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace attn::runtime {

class PrefixCache {
public:
  /// Caches pages of `cache`, which must outlive this.
  explicit PrefixCache(KvCache &cache) : cache_(cache) {}
  ~PrefixCache() { clear(); }
  PrefixCache(const PrefixCache &) = delete;
  PrefixCache &operator=(const PrefixCache &) = delete;

  /// The cached pages that start `tokens` [length], longest run first to
  /// last, leaving at least the last token uncached (its logits must be
  /// computed). Marks them used now.
  std::vector<int32_t> lookup(const int32_t *tokens, int length);

  /// Caches the full pages of `sequence` whose token ids are `tokens`
  /// [length] (the sequence's first `length` tokens; no more than it holds).
  void insert(SequenceId sequence, const int32_t *tokens, int length);

  /// Evicts pages only this cache holds until `pages` pages are free in the
  /// pool; false when that many cannot be freed.
  bool makeRoom(int pages);

  /// Drops every page.
  void clear();

  int pages() const { return int(entries_.size()); }
  /// Prompt tokens found cached, and looked up but not found, so far.
  int64_t hitTokens() const { return hitTokens_; }
  int64_t missTokens() const { return missTokens_; }
  int64_t evictedPages() const { return evictedPages_; }

private:
  struct Entry {
    int32_t page;
    int depth; ///< the page's index in its sequence
    uint64_t lastUse;
    std::vector<int32_t> tokens; ///< the page's own token ids
  };
  /// Eviction order: least recently used, then deepest.
  using Age = std::tuple<uint64_t, int, uint64_t>; // lastUse, -depth, key
  void touch(uint64_t key, Entry &entry);
  static uint64_t chain(uint64_t parent, const int32_t *tokens, int count);

  KvCache &cache_;
  std::unordered_map<uint64_t, Entry> entries_; ///< by chained key
  std::set<Age> ages_;
  uint64_t clock_ = 0;
  int64_t hitTokens_ = 0, missTokens_ = 0, evictedPages_ = 0;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_PREFIXCACHE_H
