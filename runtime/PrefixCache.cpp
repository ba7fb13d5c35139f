//===- PrefixCache.cpp - K/V pages of prompt prefixes, reused -------------===//

#include "PrefixCache.h"

#include <xxhash.h>

#include <algorithm>

namespace attn::runtime {

uint64_t PrefixCache::chain(uint64_t parent, const int32_t *tokens, int count) {
  return XXH3_64bits_withSeed(tokens, size_t(count) * sizeof(int32_t), parent);
}

void PrefixCache::touch(uint64_t key, Entry &entry) {
  ages_.erase({entry.lastUse, -entry.depth, key});
  entry.lastUse = clock_;
  ages_.insert({entry.lastUse, -entry.depth, key});
}

std::vector<int32_t> PrefixCache::lookup(const int32_t *tokens, int length) {
  const int pageSize = cache_.config().pageSize;
  const int usable = (length - 1) / pageSize; // the last token is computed
  std::vector<int32_t> pages;
  clock_++;
  uint64_t key = 0;
  for (int i = 0; i < usable; i++) {
    const int32_t *page = tokens + size_t(i) * pageSize;
    key = chain(key, page, pageSize);
    auto found = entries_.find(key);
    if (found == entries_.end() ||
        !std::equal(page, page + pageSize, found->second.tokens.begin()))
      break;
    touch(key, found->second);
    pages.push_back(found->second.page);
  }
  hitTokens_ += int64_t(pages.size()) * pageSize;
  missTokens_ += length - int64_t(pages.size()) * pageSize;
  return pages;
}

void PrefixCache::insert(SequenceId sequence, const int32_t *tokens,
                         int length) {
  const int pageSize = cache_.config().pageSize;
  const std::vector<int32_t> *table = cache_.blockTable(sequence);
  if (!table)
    return;
  length = std::min(length, cache_.length(sequence));
  clock_++;
  uint64_t key = 0;
  for (int i = 0; i < length / pageSize; i++) {
    const int32_t *page = tokens + size_t(i) * pageSize;
    key = chain(key, page, pageSize);
    auto found = entries_.find(key);
    if (found != entries_.end()) { // cached already (perhaps this very page)
      touch(key, found->second);
      continue;
    }
    Entry entry{(*table)[i], i, clock_, {page, page + pageSize}};
    cache_.holdPage(entry.page);
    ages_.insert({entry.lastUse, -entry.depth, key});
    entries_.emplace(key, std::move(entry));
  }
}

bool PrefixCache::makeRoom(int pages) {
  for (auto age = ages_.begin();
       cache_.freePages() < pages && age != ages_.end();) {
    auto entry = entries_.find(std::get<2>(*age));
    if (cache_.references(entry->second.page) > 1) { // a sequence uses it
      ++age;
      continue;
    }
    cache_.dropPage(entry->second.page);
    entries_.erase(entry);
    evictedPages_++;
    age = ages_.erase(age);
  }
  return cache_.freePages() >= pages;
}

void PrefixCache::clear() {
  for (const auto &[key, entry] : entries_)
    cache_.dropPage(entry.page);
  entries_.clear();
  ages_.clear();
}

} // namespace attn::runtime
