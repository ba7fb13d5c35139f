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
  return size_t(numLayers) * kvBytesPerToken(dtype, numKvHeads, headDim);
}

Status KvCache::create(const KvCacheConfig &config, KvCache &cache) {
  if (config.numLayers < 1 || config.numKvHeads < 1 || config.headDim < 1 ||
      config.pageSize < 1 || config.numPages < 1 ||
      config.maxSequenceLength < 1)
    return invalid("KV cache: layers, KV heads, head size, page size, page "
                   "count and maximum length must all be positive");
  if (!isCacheDType(config.dtype))
    return invalid(std::string("KV cache: dtype ") + dtypeName(config.dtype) +
                   " is a weight type; a cache stores f32, f16, bf16 or i8");
  // Every size the cache computes later, checked once here: a product that
  // wraps would make a small pool that kernels then index far past.
  size_t page, pool, allPools, scaleRows, scaleBytes;
  if (!product({size_t(config.pageSize), size_t(config.numKvHeads),
                size_t(config.headDim), byteSize(config.dtype)},
               page) ||
      !product({page, size_t(config.numPages)}, pool) ||
      !product({pool, 2, size_t(config.numLayers)}, allPools) ||
      !product({size_t(config.numPages), size_t(config.pageSize),
                size_t(config.numKvHeads)},
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
  // A pool the machine cannot hold is a status, not an exception.
  try {
    fresh.keys_.assign(config.numLayers, Pool(pool));
    fresh.values_.assign(config.numLayers, Pool(pool));
    if (config.dtype == DType::I8) {
      fresh.keyScales_.assign(config.numLayers, std::vector<float>(scaleRows));
      fresh.valueScales_.assign(config.numLayers,
                                std::vector<float>(scaleRows));
    }
    fresh.refCounts_.assign(config.numPages, 0);
    fresh.holds_.assign(config.numPages, 0);
    fresh.freeList_.reserve(size_t(config.numPages));
  } catch (const std::bad_alloc &) {
    return Status(StatusCode::OutOfMemory,
                  "KV cache: cannot allocate " +
                      std::to_string(allPools) + " bytes of pools");
  }
  // Pop order 0, 1, 2...: the stack holds the ids in reverse.
  for (int32_t p = config.numPages - 1; p >= 0; p--)
    fresh.freeList_.push_back(p);
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
    refCounts_ = std::move(other.refCounts_);
    holds_ = std::move(other.holds_);
    freeList_ = std::move(other.freeList_);
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
  if (s)
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
  return {{self->keys_[layer].data(), deviceCopy(layer, PoolKind::Keys)},
          {self->values_[layer].data(), deviceCopy(layer, PoolKind::Values)},
          {keyScales, deviceCopy(layer, PoolKind::KeyScales)},
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
  return size_t(config_.numPages) * config_.pageSize * config_.bytesPerToken();
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

const std::vector<int32_t> *KvCache::blockTable(SequenceId id) const {
  return contains(id) ? &sequences_[id].pages : nullptr;
}

int32_t KvCache::takePage() {
  int32_t page = freeList_.back();
  freeList_.pop_back();
  refCounts_[page] = 1;
  return page;
}

void KvCache::releasePage(int32_t page) {
  if (--refCounts_[page] == 0)
    freeList_.push_back(page);
}

Status KvCache::copyPage(int32_t from, int32_t to) {
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
  for (int layer = 0; layer < config_.numLayers; layer++) {
    Status s = copy(layer, PoolKind::Keys, keys_[layer].data(), pageBytes());
    if (s)
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
    encode(config_.dtype, value, values_[layer].data() + offset, elements);
    return;
  }
  for (int h = 0; h < config_.numKvHeads; h++) {
    const size_t row = size_t(slot) * config_.numKvHeads + h;
    const size_t at = h * size_t(config_.headDim);
    keyScales_[layer][row] = quantizeRow(
        key + at, reinterpret_cast<int8_t *>(keys_[layer].data() + offset + at),
        config_.headDim);
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
  if (config_.dtype != DType::I8) {
    decode(config_.dtype, keys_[layer].data() + offset, key, elements);
    decode(config_.dtype, values_[layer].data() + offset, value, elements);
    return;
  }
  for (int h = 0; h < config_.numKvHeads; h++) {
    const size_t row = size_t(slot) * config_.numKvHeads + h;
    const size_t at = h * size_t(config_.headDim);
    dequantizeRow(
        reinterpret_cast<const int8_t *>(keys_[layer].data() + offset + at),
        keyScales_[layer][row], key + at, config_.headDim);
    dequantizeRow(
        reinterpret_cast<const int8_t *>(values_[layer].data() + offset + at),
        valueScales_[layer][row], value + at, config_.headDim);
  }
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
  slot->pages.clear();
  id = SequenceId(slot - sequences_.begin());
  return Status::ok();
}

Status KvCache::removeSequence(SequenceId id) {
  if (Status status = lookup(id, "remove"); !status)
    return status;
  for (int32_t page : sequences_[id].pages)
    releasePage(page);
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
  for (int32_t page : sequences_[id].pages)
    refCounts_[page]++;
  child = id;
  return Status::ok();
}

Status KvCache::adoptPages(SequenceId id, const int32_t *pages, int count) {
  if (Status status = lookup(id, "adoptPages"); !status)
    return status;
  Sequence &sequence = sequences_[id];
  if (sequence.length != 0)
    return invalid("adoptPages: sequence " + std::to_string(id) +
                   " is not empty");
  if (count < 0 || (count > 0 && !pages) ||
      int64_t(count) * config_.pageSize > config_.maxSequenceLength)
    return invalid("adoptPages: " + std::to_string(count) +
                   " pages do not fit a sequence");
  for (int i = 0; i < count; i++)
    if (pages[i] < 0 || pages[i] >= config_.numPages ||
        refCounts_[pages[i]] == 0)
      return invalid("adoptPages: page " + std::to_string(pages[i]) +
                     " is not in use");
  for (int i = 0; i < count; i++) {
    sequence.pages.push_back(pages[i]);
    refCounts_[pages[i]]++;
  }
  sequence.length = count * config_.pageSize;
  return Status::ok();
}

void KvCache::holdPage(int32_t page) {
  refCounts_[page]++;
  holds_[page]++;
}

void KvCache::dropPage(int32_t page) {
  holds_[page]--;
  releasePage(page);
}

Status KvCache::extend(SequenceId id, int count) {
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
  int needed = pagesFor(sequence.length + count) - int(sequence.pages.size());
  if (needed > freePages())
    return Status(StatusCode::OutOfMemory,
                  "extend: " + std::to_string(count) + " tokens need " +
                      std::to_string(needed) + " pages; " +
                      std::to_string(freePages()) + " are free");
  for (int i = 0; i < needed; i++)
    sequence.pages.push_back(takePage());
  sequence.length += count;
  return Status::ok();
}

Status KvCache::truncate(SequenceId id, int newLength) {
  if (Status status = lookup(id, "truncate"); !status)
    return status;
  Sequence &sequence = sequences_[id];
  if (newLength < 0 || newLength > sequence.length)
    return invalid("truncate: length " + std::to_string(newLength) +
                   " outside [0, " + std::to_string(sequence.length) + "]");
  int keep = pagesFor(newLength);
  for (size_t p = keep; p < sequence.pages.size(); p++)
    releasePage(sequence.pages[p]);
  sequence.pages.resize(keep);
  sequence.length = newLength;
  return Status::ok();
}

Status KvCache::reserve(const char *operation, SequenceId id, int position,
                        int count, int32_t *slots) {
  const Sequence &sequence = sequences_[id];
  if (position < 0 || count < 0 || position > sequence.length - count)
    return invalid(std::string(operation) + ": positions [" +
                   std::to_string(position) + ", " +
                   std::to_string(int64_t(position) + count) +
                   ") outside the sequence's " +
                   std::to_string(sequence.length) + " tokens");
  // Copy-on-write: every shared page the write touches becomes private. The
  // pages needed are counted first so that a failure changes nothing.
  std::vector<int32_t> &pages = sequences_[id].pages;
  int first = position / config_.pageSize;
  int last = (position + count - 1) / config_.pageSize;
  int shared = 0;
  for (int p = first; count > 0 && p <= last; p++)
    shared += refCounts_[pages[p]] > 1;
  if (shared > freePages())
    return Status(StatusCode::OutOfMemory,
                  std::string(operation) + ": copy-on-write needs " +
                      std::to_string(shared) + " pages; " +
                      std::to_string(freePages()) + " are free");
  for (int p = first; count > 0 && p <= last; p++) {
    int32_t &page = pages[p];
    if (refCounts_[page] > 1) {
      int32_t copy = takePage();
      if (Status s = copyPage(page, copy); !s) {
        releasePage(copy);
        return s;
      }
      releasePage(page);
      page = copy;
    }
  }
  for (int t = 0; t < count; t++) {
    int pos = position + t;
    slots[t] = pages[pos / config_.pageSize] * config_.pageSize +
               pos % config_.pageSize;
  }
  return Status::ok();
}

Status KvCache::reserveSlots(SequenceId id, int position, int count,
                             int32_t *slots) {
  if (Status status = lookup(id, "reserve"); !status)
    return status;
  if (count > 0 && !slots)
    return invalid("reserve: null slots");
  return reserve("reserve", id, position, count, slots);
}

Status KvCache::write(SequenceId id, int layer, int position, int count,
                      const float *key, const float *value) {
  if (Status status = lookup(id, "write"); !status)
    return status;
  if (layer < 0 || layer >= config_.numLayers)
    return invalid("write: layer " + std::to_string(layer) + " outside [0, " +
                   std::to_string(config_.numLayers) + ")");
  if (count > 0 && (!key || !value))
    return invalid("write: null key or value");
  std::vector<int32_t> slots(std::max(count, 0));
  if (Status status = reserve("write", id, position, count, slots.data());
      !status)
    return status;
  size_t elements = size_t(config_.numKvHeads) * config_.headDim;
  for (int t = 0; t < count; t++)
    store(layer, slots[t], key + t * elements, value + t * elements);
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
  if (count > 0 && (!key || !value))
    return invalid("read: null key or value");
  size_t elements = size_t(config_.numKvHeads) * config_.headDim;
  for (int t = 0; t < count; t++) {
    int pos = position + t;
    int32_t slot = sequence.pages[pos / config_.pageSize] * config_.pageSize +
                   pos % config_.pageSize;
    load(layer, slot, key + t * elements, value + t * elements);
  }
  return Status::ok();
}

Status KvCache::checkInvariants() const {
  auto broken = [](const std::string &what) {
    return Status(StatusCode::InvalidArgument, "KV cache invariant: " + what);
  };
  std::vector<int32_t> references = holds_;
  for (size_t id = 0; id < sequences_.size(); id++) {
    const Sequence &sequence = sequences_[id];
    if (!sequence.live) {
      if (!sequence.pages.empty() || sequence.length != 0)
        return broken("dead sequence " + std::to_string(id) + " holds pages");
      continue;
    }
    if (sequence.length < 0 || sequence.length > config_.maxSequenceLength ||
        int(sequence.pages.size()) != pagesFor(sequence.length))
      return broken("sequence " + std::to_string(id) + " has length " +
                    std::to_string(sequence.length) + " and " +
                    std::to_string(sequence.pages.size()) + " pages");
    for (int32_t page : sequence.pages) {
      if (page < 0 || page >= config_.numPages)
        return broken("page id " + std::to_string(page) + " out of range");
      references[page]++;
    }
  }
  std::vector<bool> isFree(config_.numPages, false);
  for (int32_t page : freeList_) {
    if (page < 0 || page >= config_.numPages || isFree[page])
      return broken("free list holds page " + std::to_string(page) +
                    " twice or out of range");
    isFree[page] = true;
  }
  for (int32_t page = 0; page < config_.numPages; page++) {
    if (references[page] != refCounts_[page])
      return broken("page " + std::to_string(page) + " has refcount " +
                    std::to_string(refCounts_[page]) + " but " +
                    std::to_string(references[page]) + " references");
    if (isFree[page] != (references[page] == 0))
      return broken("page " + std::to_string(page) +
                    (isFree[page] ? " is free but referenced"
                                  : " is leaked: unreferenced, not free"));
  }
  return Status::ok();
}

} // namespace attn::runtime
