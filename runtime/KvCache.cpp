//===- KvCache.cpp - paged key/value cache --------------------------------===//

#include "attn/runtime/KvCache.h"

#include "DeviceCopy.h"

#include <algorithm>
#include <new>
#include <cstring>
#include <string>

namespace attn::runtime {

namespace {
Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

/// The product of `factors`, or false where it does not fit a size_t.
bool product(std::initializer_list<size_t> factors, size_t &result) {
  result = 1;
  for (size_t factor : factors)
    if (__builtin_mul_overflow(result, factor, &result))
      return false;
  return true;
}
} // namespace

KvCacheConfig KvCacheConfig::contiguous(int numLayers, int numKvHeads,
                                        int headDim, DType dtype,
                                        int maxSequenceLength,
                                        int maxSequences) {
  KvCacheConfig config;
  config.numLayers = numLayers;
  config.numKvHeads = numKvHeads;
  config.headDim = headDim;
  config.dtype = dtype;
  config.pageSize = maxSequenceLength;
  config.numPages = maxSequences;
  config.maxSequenceLength = maxSequenceLength;
  return config;
}

size_t KvCacheConfig::bytesPerToken() const {
  return size_t(numLayers) *
         kvBytesPerToken(dtype, numKvHeads, headDim, keysOnly);
}

Status KvCache::create(const KvCacheConfig &config, KvCache &cache) {
  if (config.numLayers < 1 || config.numKvHeads < 1 || config.headDim < 1 ||
      config.pageSize < 1 || config.numPages < 1 ||
      config.maxSequenceLength < 1)
    return invalid("KV cache: layers, KV heads, head size, page size, page "
                   "count and maximum length must all be positive");
  if (config.numLayers > KvCacheConfig::kMaxLayers)
    return invalid("KV cache: " + std::to_string(config.numLayers) +
                   " layers exceed the " +
                   std::to_string(KvCacheConfig::kMaxLayers) +
                   " a cache holds");
  if (!config.windows.empty() &&
      config.windows.size() != size_t(config.numLayers))
    return invalid("KV cache: " + std::to_string(config.windows.size()) +
                   " windows for " + std::to_string(config.numLayers) +
                   " layers");
  const bool windowed = std::any_of(config.windows.begin(),
                                    config.windows.end(),
                                    [](int32_t w) { return w != 0; });
  for (int32_t w : config.windows)
    if (w < 0)
      return invalid("KV cache: negative window " + std::to_string(w));
  if (windowed && config.windowPages < 1)
    return invalid("KV cache: sliding-window layers need a pool of at least "
                   "one page");
  if (!isCacheDType(config.dtype))
    return invalid(std::string("KV cache: dtype ") + dtypeName(config.dtype) +
                   " is a weight type; a cache stores f32, f16, bf16 or i8");
  // Every size the cache computes later, checked once here: a product that
  // wraps would make a small pool that kernels then index far past.
  // A window's pool is its pages and the trash page.
  const size_t poolPages =
      std::max(size_t(config.numPages), size_t(config.windowPages) + 1);
  size_t page, pool, allPools, scaleRows, scaleBytes;
  if (!product({size_t(config.pageSize), size_t(config.numKvHeads),
                size_t(config.headDim), byteSize(config.dtype)},
               page) ||
      !product({page, poolPages}, pool) ||
      !product({pool, config.keysOnly ? 1u : 2u, size_t(config.numLayers)},
               allPools) ||
      !product({poolPages, size_t(config.pageSize), size_t(config.numKvHeads)},
               scaleRows) ||
      !product({scaleRows, sizeof(float), 2, size_t(config.numLayers)},
               scaleBytes) ||
      allPools + scaleBytes < allPools)
    return invalid("KV cache: " + std::to_string(config.numLayers) +
                   " layers x " + std::to_string(config.numPages) +
                   " pages x " + std::to_string(config.pageSize) +
                   " tokens x " + std::to_string(config.numKvHeads) +
                   " KV heads x " + std::to_string(config.headDim) +
                   " channels overflow a 64-bit byte count");
  KvCache fresh;
  fresh.config_ = config;
  // Layers of one window share page ids: one group per distinct window.
  for (int layer = 0; layer < config.numLayers; layer++) {
    const int window = config.windows.empty() ? 0 : config.windows[layer];
    auto group = std::find_if(
        fresh.groups_.begin(), fresh.groups_.end(),
        [&](const Group &g) { return g.window == window; });
    if (group == fresh.groups_.end()) {
      group = fresh.groups_.emplace(fresh.groups_.end());
      group->window = window;
      group->numPages = window ? config.windowPages : config.numPages;
    }
    group->layers.push_back(layer);
    fresh.layerGroup_.push_back(int(group - fresh.groups_.begin()));
  }
  // A pool the machine cannot hold is a status, not an exception.
  try {
    for (int layer = 0; layer < config.numLayers; layer++) {
      const size_t pages = size_t(fresh.poolPages(layer));
      // A keysOnly cache's value pools stay empty (never indexed).
      const size_t valuePages = config.keysOnly ? 0 : pages;
      fresh.keys_.emplace_back(pages * page);
      fresh.values_.emplace_back(valuePages * page);
      if (config.dtype == DType::I8) {
        const size_t rows = pages * config.pageSize * config.numKvHeads;
        fresh.keyScales_.emplace_back(rows);
        if (!config.keysOnly)
          fresh.valueScales_.emplace_back(rows);
      }
    }
    for (Group &group : fresh.groups_) {
      group.refCounts.assign(group.numPages, 0);
      group.holds.assign(group.numPages, 0);
      group.freeList.reserve(size_t(group.numPages));
      // Pop order 0, 1, 2...: the stack holds the ids in reverse.
      for (int32_t p = group.numPages - 1; p >= 0; p--)
        group.freeList.push_back(p);
    }
  } catch (const std::bad_alloc &) {
    return Status(StatusCode::OutOfMemory,
                  "KV cache: cannot allocate " +
                      std::to_string(allPools) + " bytes of pools");
  }
  cache = std::move(fresh);
  return Status::ok();
}

KvCache::KvCache() = default;
KvCache::KvCache(KvCache &&) = default;
KvCache::~KvCache() = default;

KvCache &KvCache::operator=(KvCache &&other) {
  if (this != &other) {
    // The device copies first: they describe the pools about to be freed.
    deviceCopies_ = std::move(other.deviceCopies_);
    config_ = other.config_;
    keys_ = std::move(other.keys_);
    values_ = std::move(other.values_);
    keyScales_ = std::move(other.keyScales_);
    valueScales_ = std::move(other.valueScales_);
    groups_ = std::move(other.groups_);
    layerGroup_ = std::move(other.layerGroup_);
    sequences_ = std::move(other.sequences_);
  }
  return *this;
}

Status KvCache::placeOn(const DeviceApi &api, int layer) const {
  if (layer < 0 || layer >= config_.numLayers)
    return Status(StatusCode::InvalidArgument,
                  "placeOn: no layer " + std::to_string(layer));
  if (deviceCopies_.empty())
    for (int i = 0; i < 4 * config_.numLayers; i++)
      deviceCopies_.push_back(std::make_unique<DeviceCopy>());
  auto place = [&](PoolKind kind, const void *pool, size_t bytes) {
    return deviceCopies_[4 * layer + int(kind)]->allocate(api, pool, bytes,
                                                          /*hostHasData=*/true);
  };
  Status s = place(PoolKind::Keys, keys_[layer].data(), keys_[layer].size());
  if (s && !config_.keysOnly)
    s = place(PoolKind::Values, values_[layer].data(), values_[layer].size());
  for (auto [kind, scales] : {std::pair{PoolKind::KeyScales, &keyScales_},
                              std::pair{PoolKind::ValueScales, &valueScales_}})
    if (s && !scales->empty())
      s = place(kind, (*scales)[layer].data(),
                (*scales)[layer].size() * sizeof(float));
  return s;
}

KvCache::LayerPools KvCache::pools(int layer) const {
  auto *self = const_cast<KvCache *>(this); // see the declaration
  auto *keyScales =
      self->keyScales_.empty() ? nullptr : self->keyScales_[layer].data();
  auto *valueScales =
      self->valueScales_.empty() ? nullptr : self->valueScales_[layer].data();
  const Placed<void> keys{self->keys_[layer].data(),
                          deviceCopy(layer, PoolKind::Keys)};
  const Placed<float> keyRowScales{keyScales,
                                   deviceCopy(layer, PoolKind::KeyScales)};
  if (config_.keysOnly) // the values are the keys
    return {keys, keys, keyRowScales, keyRowScales};
  return {keys,
          {self->values_[layer].data(), deviceCopy(layer, PoolKind::Values)},
          keyRowScales,
          {valueScales, deviceCopy(layer, PoolKind::ValueScales)}};
}

DeviceCopy *KvCache::deviceCopy(int layer, PoolKind pool) const {
  return deviceCopies_.empty() ? nullptr
                               : deviceCopies_[4 * layer + int(pool)].get();
}

/// The host touches `layer`'s pools: with a GPU model, their device copies
/// come back first (and go out again before the next kernel).
void KvCache::hostAccess(int layer, bool write) const {
  if (deviceCopies_.empty())
    return;
  for (int kind = 0; kind < 4; kind++) {
    DeviceCopy &copy = *deviceCopies_[4 * layer + kind];
    write ? copy.hostWrites() : copy.hostReads();
  }
}

size_t KvCache::tokenBytes() const {
  return size_t(config_.numKvHeads) * config_.headDim * byteSize(config_.dtype);
}
size_t KvCache::pageBytes() const { return tokenBytes() * config_.pageSize; }
size_t KvCache::poolBytes() const {
  size_t bytes = 0;
  for (int layer = 0; layer < config_.numLayers; layer++)
    bytes += size_t(poolPages(layer)) * config_.pageSize *
             kvBytesPerToken(config_.dtype, config_.numKvHeads,
                             config_.headDim, config_.keysOnly);
  return bytes;
}
int KvCache::poolPages(int layer) const {
  const Group &group = groupOf(layer);
  return group.numPages + (group.window ? 1 : 0);
}
int KvCache::pagesFor(int tokens) const {
  return (tokens + config_.pageSize - 1) / config_.pageSize;
}

Status KvCache::lookup(SequenceId id, const char *operation) const {
  if (!contains(id))
    return Status(StatusCode::NotFound, std::string(operation) +
                                            ": no sequence " +
                                            std::to_string(id));
  return Status::ok();
}

bool KvCache::contains(SequenceId id) const {
  return id >= 0 && size_t(id) < sequences_.size() && sequences_[id].live;
}

int KvCache::length(SequenceId id) const {
  return contains(id) ? sequences_[id].length : -1;
}

std::vector<SequenceId> KvCache::sequences() const {
  std::vector<SequenceId> ids;
  for (size_t i = 0; i < sequences_.size(); i++)
    if (sequences_[i].live)
      ids.push_back(SequenceId(i));
  return ids;
}

const std::vector<int32_t> *KvCache::blockTable(SequenceId id,
                                                int layer) const {
  if (!contains(id) || layer < 0 || layer >= config_.numLayers)
    return nullptr;
  return &sequences_[id].pages[layerGroup_[layer]];
}

int32_t KvCache::takePage(Group &group) {
  int32_t page = group.freeList.back();
  group.freeList.pop_back();
  group.refCounts[page] = 1;
  return page;
}

void KvCache::releasePage(Group &group, int32_t page) {
  if (page != kReleased && --group.refCounts[page] == 0)
    group.freeList.push_back(page);
}

Status KvCache::copyPage(const Group &group, int32_t from, int32_t to) {
  // Each pool's page: on the device when the pool lives there (a GPU
  // model's cache), else in host memory.
  auto copy = [&](int layer, PoolKind kind, uint8_t *pool, size_t bytes) {
    if (DeviceCopy *device = deviceCopy(layer, kind)) {
      bool onDevice = false;
      if (Status s =
              device->copyWithin(from * bytes, to * bytes, bytes, onDevice);
          !s || onDevice)
        return s;
      device->hostWrites();
    }
    std::memcpy(pool + to * bytes, pool + from * bytes, bytes);
    return Status::ok();
  };
  const size_t rows = size_t(config_.pageSize) * config_.numKvHeads;
  for (int layer : group.layers) {
    Status s = copy(layer, PoolKind::Keys, keys_[layer].data(), pageBytes());
    if (s && !config_.keysOnly)
      s = copy(layer, PoolKind::Values, values_[layer].data(), pageBytes());
    for (auto [kind, scales] :
         {std::pair{PoolKind::KeyScales, &keyScales_},
          std::pair{PoolKind::ValueScales, &valueScales_}})
      if (s && !scales->empty())
        s = copy(layer, kind,
                 reinterpret_cast<uint8_t *>((*scales)[layer].data()),
                 rows * sizeof(float));
    if (!s)
      return s;
  }
  return Status::ok();
}

void KvCache::store(int layer, int32_t slot, const float *key,
                    const float *value) {
  hostAccess(layer, /*write=*/true);
  const size_t offset = size_t(slot) * tokenBytes();
  const size_t elements = size_t(config_.numKvHeads) * config_.headDim;
  if (config_.dtype != DType::I8) {
    encode(config_.dtype, key, keys_[layer].data() + offset, elements);
    if (!config_.keysOnly)
      encode(config_.dtype, value, values_[layer].data() + offset, elements);
    return;
  }
  for (int h = 0; h < config_.numKvHeads; h++) {
    const size_t row = size_t(slot) * config_.numKvHeads + h;
    const size_t at = h * size_t(config_.headDim);
    keyScales_[layer][row] = quantizeRow(
        key + at, reinterpret_cast<int8_t *>(keys_[layer].data() + offset + at),
        config_.headDim);
    if (config_.keysOnly)
      continue;
    valueScales_[layer][row] = quantizeRow(
        value + at,
        reinterpret_cast<int8_t *>(values_[layer].data() + offset + at),
        config_.headDim);
  }
}

void KvCache::load(int layer, int32_t slot, float *key, float *value) const {
  hostAccess(layer, /*write=*/false);
  const size_t offset = size_t(slot) * tokenBytes();
  const size_t elements = size_t(config_.numKvHeads) * config_.headDim;
  const bool values = !config_.keysOnly;
  if (config_.dtype != DType::I8) {
    decode(config_.dtype, keys_[layer].data() + offset, key, elements);
    if (values)
      decode(config_.dtype, values_[layer].data() + offset, value, elements);
  } else {
    for (int h = 0; h < config_.numKvHeads; h++) {
      const size_t row = size_t(slot) * config_.numKvHeads + h;
      const size_t at = h * size_t(config_.headDim);
      dequantizeRow(
          reinterpret_cast<const int8_t *>(keys_[layer].data() + offset + at),
          keyScales_[layer][row], key + at, config_.headDim);
      if (values)
        dequantizeRow(reinterpret_cast<const int8_t *>(
                          values_[layer].data() + offset + at),
                      valueScales_[layer][row], value + at, config_.headDim);
    }
  }
  if (!values && value) // the values are the keys
    std::copy(key, key + elements, value);
}

Status KvCache::addSequence(SequenceId &id) {
  auto slot = std::find_if(sequences_.begin(), sequences_.end(),
                           [](const Sequence &s) { return !s.live; });
  if (slot == sequences_.end()) {
    sequences_.emplace_back();
    slot = sequences_.end() - 1;
  }
  slot->live = true;
  slot->length = 0;
  slot->pages.assign(groups_.size(), {});
  id = SequenceId(slot - sequences_.begin());
  return Status::ok();
}

Status KvCache::removeSequence(SequenceId id) {
  if (Status status = lookup(id, "remove"); !status)
    return status;
  for (size_t g = 0; g < groups_.size(); g++)
    for (int32_t page : sequences_[id].pages[g])
      releasePage(groups_[g], page);
  sequences_[id] = Sequence();
  return Status::ok();
}

Status KvCache::fork(SequenceId parent, SequenceId &child) {
  if (Status status = lookup(parent, "fork"); !status)
    return status;
  SequenceId id;
  (void)addSequence(id); // cannot fail; may reallocate sequences_
  sequences_[id].length = sequences_[parent].length;
  sequences_[id].pages = sequences_[parent].pages;
  for (size_t g = 0; g < groups_.size(); g++)
    for (int32_t page : sequences_[id].pages[g])
      if (page != kReleased)
        groups_[g].refCounts[page]++;
  child = id;
  return Status::ok();
}

Status KvCache::adoptPages(SequenceId id, const int32_t *pages, int count) {
  if (Status status = lookup(id, "adoptPages"); !status)
    return status;
  Sequence &sequence = sequences_[id];
  if (slidesWindows())
    return invalid("adoptPages: this cache's sliding-window layers keep only "
                   "their window, not the pages of a whole prefix");
  if (sequence.length != 0)
    return invalid("adoptPages: sequence " + std::to_string(id) +
                   " is not empty");
  if (count < 0 || (count > 0 && !pages) ||
      int64_t(count) * config_.pageSize > config_.maxSequenceLength)
    return invalid("adoptPages: " + std::to_string(count) +
                   " pages do not fit a sequence");
  Group &group = groups_[0];
  for (int i = 0; i < count; i++)
    if (pages[i] < 0 || pages[i] >= group.numPages ||
        group.refCounts[pages[i]] == 0)
      return invalid("adoptPages: page " + std::to_string(pages[i]) +
                     " is not in use");
  for (int i = 0; i < count; i++) {
    sequence.pages[0].push_back(pages[i]);
    group.refCounts[pages[i]]++;
  }
  sequence.length = count * config_.pageSize;
  return Status::ok();
}

void KvCache::holdPage(int32_t page) {
  groups_[0].refCounts[page]++;
  groups_[0].holds[page]++;
}

void KvCache::dropPage(int32_t page) {
  groups_[0].holds[page]--;
  releasePage(groups_[0], page);
}

Status KvCache::extend(SequenceId id, int count, int firstQuery) {
  if (Status status = lookup(id, "extend"); !status)
    return status;
  Sequence &sequence = sequences_[id];
  if (count < 0)
    return invalid("extend: negative token count " + std::to_string(count));
  if (count > config_.maxSequenceLength - sequence.length)
    return Status(StatusCode::CapacityExceeded,
                  "extend: sequence " + std::to_string(id) + " has " +
                      std::to_string(sequence.length) + " tokens; " +
                      std::to_string(count) + " more exceed the maximum of " +
                      std::to_string(config_.maxSequenceLength));
  const int length = sequence.length + count;
  if (firstQuery < 0)
    firstQuery = sequence.length;
  if (firstQuery < sequence.length || firstQuery > length)
    return invalid("extend: the first query " + std::to_string(firstQuery) +
                   " is outside [" + std::to_string(sequence.length) + ", " +
                   std::to_string(length) + "]");
  // Per group: the pages from the first one a query reads to the new end
  // that the sequence does not hold yet, all counted before any is taken.
  for (size_t g = 0; g < groups_.size(); g++) {
    const Group &group = groups_[g];
    const std::vector<int32_t> &pages = sequence.pages[g];
    const int first = group.firstPageRead(firstQuery, config_.pageSize);
    int needed = 0;
    for (int p = first; p < pagesFor(length); p++)
      needed += p >= int(pages.size()) || pages[p] == kReleased;
    if (needed > int(group.freeList.size()))
      return Status(
          StatusCode::OutOfMemory,
          "extend: " + std::to_string(count) + " tokens need " +
              std::to_string(needed) + " pages" +
              (group.window ? " of the " + std::to_string(group.window) +
                                  "-token window's pool"
                            : std::string()) +
              "; " + std::to_string(group.freeList.size()) + " are free");
  }
  for (size_t g = 0; g < groups_.size(); g++) {
    Group &group = groups_[g];
    std::vector<int32_t> &pages = sequence.pages[g];
    const int first = group.firstPageRead(firstQuery, config_.pageSize);
    for (int p = 0; p < first && p < int(pages.size()); p++) {
      releasePage(group, pages[p]);
      pages[p] = kReleased;
    }
    pages.resize(pagesFor(length), kReleased);
    for (int p = first; p < pagesFor(length); p++)
      if (pages[p] == kReleased)
        pages[p] = takePage(group);
  }
  sequence.length = length;
  return Status::ok();
}

Status KvCache::truncate(SequenceId id, int newLength) {
  if (Status status = lookup(id, "truncate"); !status)
    return status;
  Sequence &sequence = sequences_[id];
  if (newLength < 0 || newLength > sequence.length)
    return invalid("truncate: length " + std::to_string(newLength) +
                   " outside [0, " + std::to_string(sequence.length) + "]");
  // A query at newLength reads from the first page it needs: still held?
  for (size_t g = 0; g < groups_.size() && newLength > 0; g++) {
    const std::vector<int32_t> &pages = sequence.pages[g];
    const int first = groups_[g].firstPageRead(newLength, config_.pageSize);
    if (first < int(pages.size()) && pages[first] == kReleased)
      return invalid("truncate: the " + std::to_string(groups_[g].window) +
                     "-token window released the keys a query at position " +
                     std::to_string(newLength) + " reads; truncate to 0 or "
                     "to where the window has not passed");
  }
  for (size_t g = 0; g < groups_.size(); g++) {
    std::vector<int32_t> &pages = sequence.pages[g];
    for (size_t p = pagesFor(newLength); p < pages.size(); p++)
      releasePage(groups_[g], pages[p]);
    pages.resize(pagesFor(newLength));
  }
  sequence.length = newLength;
  return Status::ok();
}

Status KvCache::reserve(const char *operation, SequenceId id, int position,
                        int count, int32_t *slots, int layer) {
  const Sequence &sequence = sequences_[id];
  if (position < 0 || count < 0 || position > sequence.length - count)
    return invalid(std::string(operation) + ": positions [" +
                   std::to_string(position) + ", " +
                   std::to_string(int64_t(position) + count) +
                   ") outside the sequence's " +
                   std::to_string(sequence.length) + " tokens");
  // Copy-on-write: every shared page the write touches becomes private. The
  // pages needed are counted first so that a failure changes nothing.
  Group &group = groups_[layerGroup_[layer]];
  std::vector<int32_t> &pages = sequences_[id].pages[layerGroup_[layer]];
  int first = position / config_.pageSize;
  int last = (position + count - 1) / config_.pageSize;
  int shared = 0;
  for (int p = first; count > 0 && p <= last; p++)
    shared += pages[p] != kReleased && group.refCounts[pages[p]] > 1;
  if (shared > int(group.freeList.size()))
    return Status(StatusCode::OutOfMemory,
                  std::string(operation) + ": copy-on-write needs " +
                      std::to_string(shared) + " pages; " +
                      std::to_string(group.freeList.size()) + " are free");
  for (int p = first; count > 0 && p <= last; p++) {
    int32_t &page = pages[p];
    if (page != kReleased && group.refCounts[page] > 1) {
      int32_t copy = takePage(group);
      if (Status s = copyPage(group, page, copy); !s) {
        releasePage(group, copy);
        return s;
      }
      releasePage(group, page);
      page = copy;
    }
  }
  // Positions the window has passed: the trash page after the pool's.
  for (int t = 0; t < count; t++) {
    int pos = position + t;
    int32_t page = pages[pos / config_.pageSize];
    slots[t] = (page == kReleased ? group.numPages : page) * config_.pageSize +
               pos % config_.pageSize;
  }
  return Status::ok();
}

Status KvCache::reserveSlots(SequenceId id, int position, int count,
                             int32_t *slots, int layer) {
  if (Status status = lookup(id, "reserve"); !status)
    return status;
  if (count > 0 && !slots)
    return invalid("reserve: null slots");
  if (layer < 0 || layer >= config_.numLayers)
    return invalid("reserve: layer " + std::to_string(layer) +
                   " outside [0, " + std::to_string(config_.numLayers) + ")");
  return reserve("reserve", id, position, count, slots, layer);
}

Status KvCache::write(SequenceId id, int layer, int position, int count,
                      const float *key, const float *value) {
  if (Status status = lookup(id, "write"); !status)
    return status;
  if (layer < 0 || layer >= config_.numLayers)
    return invalid("write: layer " + std::to_string(layer) + " outside [0, " +
                   std::to_string(config_.numLayers) + ")");
  if (count > 0 && (!key || (!value && !config_.keysOnly)))
    return invalid("write: null key or value");
  std::vector<int32_t> slots(std::max(count, 0));
  if (Status status =
          reserve("write", id, position, count, slots.data(), layer);
      !status)
    return status;
  size_t elements = size_t(config_.numKvHeads) * config_.headDim;
  const int32_t trash = groupOf(layer).numPages * config_.pageSize;
  for (int t = 0; t < count; t++)
    if (slots[t] < trash) // else the window has passed it
      store(layer, slots[t], key + t * elements,
            value ? value + t * elements : nullptr);
  return Status::ok();
}

Status KvCache::read(SequenceId id, int layer, int position, int count,
                     float *key, float *value) const {
  if (Status status = lookup(id, "read"); !status)
    return status;
  const Sequence &sequence = sequences_[id];
  if (layer < 0 || layer >= config_.numLayers)
    return invalid("read: layer " + std::to_string(layer) + " outside [0, " +
                   std::to_string(config_.numLayers) + ")");
  if (position < 0 || count < 0 || position > sequence.length - count)
    return invalid("read: positions outside the sequence's " +
                   std::to_string(sequence.length) + " tokens");
  if (count > 0 && (!key || (!value && !config_.keysOnly)))
    return invalid("read: null key or value");
  const std::vector<int32_t> &pages = sequence.pages[layerGroup_[layer]];
  if (count > 0 && pages[position / config_.pageSize] == kReleased)
    return invalid("read: layer " + std::to_string(layer) + "'s " +
                   std::to_string(groupOf(layer).window) +
                   "-token window released position " +
                   std::to_string(position));
  size_t elements = size_t(config_.numKvHeads) * config_.headDim;
  for (int t = 0; t < count; t++) {
    int pos = position + t;
    int32_t slot =
        pages[pos / config_.pageSize] * config_.pageSize + pos % config_.pageSize;
    load(layer, slot, key + t * elements, value ? value + t * elements : nullptr);
  }
  return Status::ok();
}

Status KvCache::checkInvariants() const {
  auto broken = [](const std::string &what) {
    return Status(StatusCode::InvalidArgument, "KV cache invariant: " + what);
  };
  for (size_t g = 0; g < groups_.size(); g++) {
    const Group &group = groups_[g];
    std::vector<int32_t> references = group.holds;
    for (size_t id = 0; id < sequences_.size(); id++) {
      const Sequence &sequence = sequences_[id];
      if (!sequence.live) {
        if (!sequence.pages.empty() || sequence.length != 0)
          return broken("dead sequence " + std::to_string(id) +
                        " holds pages");
        continue;
      }
      const std::vector<int32_t> &pages = sequence.pages[g];
      if (sequence.length < 0 ||
          sequence.length > config_.maxSequenceLength ||
          int(pages.size()) != pagesFor(sequence.length))
        return broken("sequence " + std::to_string(id) + " has length " +
                      std::to_string(sequence.length) + " and " +
                      std::to_string(pages.size()) + " pages");
      // Released pages: a window's, and only before the ones it holds.
      bool held = false;
      for (int32_t page : pages) {
        if (page == kReleased) {
          if (held || !group.window)
            return broken("sequence " + std::to_string(id) +
                          " released a page it still reads");
          continue;
        }
        held = true;
        if (page < 0 || page >= group.numPages)
          return broken("page id " + std::to_string(page) + " out of range");
        references[page]++;
      }
    }
    std::vector<bool> isFree(group.numPages, false);
    for (int32_t page : group.freeList) {
      if (page < 0 || page >= group.numPages || isFree[page])
        return broken("free list holds page " + std::to_string(page) +
                      " twice or out of range");
      isFree[page] = true;
    }
    for (int32_t page = 0; page < group.numPages; page++) {
      if (references[page] != group.refCounts[page])
        return broken("page " + std::to_string(page) + " has refcount " +
                      std::to_string(group.refCounts[page]) + " but " +
                      std::to_string(references[page]) + " references");
      if (isFree[page] != (references[page] == 0))
        return broken("page " + std::to_string(page) +
                      (isFree[page] ? " is free but referenced"
                                    : " is leaked: unreferenced, not free"));
    }
  }
  return Status::ok();
}

} // namespace attn::runtime
