//===- ModelRunner.cpp - one forward pass over a model's ops --------------===//
//
// Walks the plan's ops of one stack, calling each op's generated kernels
// (KernelCalls.h) on the thread's Workspace: the residual stream `x`
// [tokens][d], the norm output `normed` [tokens][d], projections, attention
// outputs and FFN hiddens. Attention is the one op whose work depends on
// the mode: its projections are shared, then prefill attends over the
// sequence's own K/V (attendPrefill) and a step over the KV cache
// (attendStep). Where kernels run is the Placement's business
// (DevicePlacement.h): on a GPU it keeps the activations on the device.
//
//===----------------------------------------------------------------------===//

#include "ModelRunner.h"

#include "CrossAttentionTrace.h"
#include "DevicePlacement.h"
#include "DeviceShadows.h"
#include "KernelCalls.h"

#include <algorithm>
#include <optional>

namespace attn::runtime {

namespace {
using Inputs = ModelRunner::Inputs;
using Weights = ModelRunner::Weights;

Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

/// The K and V rows a layer attends to or caches: `keys` and `values`,
/// [tokens][Hkv·D] each with rows `stride` floats apart, both columns of
/// the allocation `base` (a projection's output).
struct KeyValueRows {
  const float *base, *keys, *values;
  int64_t stride;
};

/// The slots and pools of a fused cache append: the new tokens' positions
/// reserved in `cache` (prefill: positions [0, tokens) of the first
/// sequence; step: each sequence's position), or, with no cache to fill,
/// no slots and a one-slot pool nothing is stored in.
Status cacheAppendArgs(const Placement &place, const PlanOp &op,
                       const Inputs &in, Workspace &ws, KvCache *cache,
                       int layer, std::optional<CacheAppendArgs> &append) {
  const int64_t t = in.tokens;
  if (!cache) {
    append = noCacheAppend(op, ws, t);
    return Status::ok();
  }
  int32_t *slots = grow(ws.cacheSlots, t);
  const KvCacheConfig &c = cache->config();
  if (layer >= c.numLayers || c.numKvHeads != op.kvHeads ||
      c.headDim != op.headDim || c.dtype != op.cacheType)
    return invalid("layer " + op.name +
                   " does not match its KV cache's geometry");
  if (Status s = placeCache(place, *cache, layer); !s)
    return s;
  if (in.mode == Mode::Prefill) {
    if (Status s = cache->reserveSlots(in.selfSequences[0], 0, int(t), slots);
        !s)
      return s;
  } else {
    for (int64_t b = 0; b < t; b++)
      if (Status s = cache->reserveSlots(in.selfSequences[b], in.positions[b],
                                         1, slots + b);
          !s)
        return s;
  }
  append = appendTo(*cache, layer, slots);
  return Status::ok();
}

/// The new tokens' K/V rows written into `cache` by the host, for layers
/// whose projection does not append them itself: prefill's tokens as
/// positions [0, t) of the first sequence, a step's as each sequence's
/// newest position.
Status writeToCache(const Inputs &in, KvCache &cache, int layer,
                    const KeyValueRows &kv) {
  shadows::hostReads(kv.base); // the cache is written from the host
  for (int64_t b = 0; b < in.tokens; b++) {
    const bool prefill = in.mode == Mode::Prefill;
    SequenceId sequence = in.selfSequences[prefill ? 0 : b];
    int position = prefill ? int(b) : in.positions[b];
    if (Status s =
            cache.write(sequence, layer, position, 1, kv.keys + b * kv.stride,
                        kv.values + b * kv.stride);
        !s)
      return s;
  }
  return Status::ok();
}

/// The layer's projections of `input` [t][dModel]: the query (with K and V
/// beside it when fused, [t][q + 2kv]) into ws.projected and, for unfused
/// self layers, K/V [t][2kv] into ws.key; RoPE applied by the kernels, and
/// K/V appended to the cache by them when `append` says where.
Status project(Placement &place, const PlanOp &op, const Weights &w,
               const Inputs &in, Workspace &ws, const float *input,
               int64_t dModel, const CacheAppendArgs *append, float *&projected,
               KeyValueRows &kv) {
  const int64_t t = in.tokens, q = int64_t(op.queryHeads) * op.headDim,
                kvWidth = int64_t(op.kvHeads) * op.headDim;
  const int32_t *ropePositions = op.rope ? in.positions : nullptr;
  const int64_t width = op.fusedProjections ? q + 2 * kvWidth : q;
  projected = place.activation(ws.projected, t * width);
  if (!place.status)
    return place.status;
  if (Status s = linear(place.device, op.query, input, t, dModel, w.query,
                        w.queryBias, ropePositions, nullptr, width, projected,
                        false, op.fusedProjections ? append : nullptr);
      !s)
    return s;
  kv = {projected, projected + q, projected + q + kvWidth, width};
  if (op.fusedProjections || op.cross)
    return Status::ok(); // cross layers' K/V come from memory or the cache
  float *rows = place.activation(ws.key, t * 2 * kvWidth);
  if (!place.status)
    return place.status;
  kv = {rows, rows, rows + kvWidth, 2 * kvWidth};
  return linear(place.device, op.keyValue, input, t, dModel, w.keyValue,
                w.keyValueBias, ropePositions, nullptr, 2 * kvWidth, rows,
                false, append);
}

/// Prefill attention: the query rows of `projected` (rows `queryStride`
/// apart) over the sequence's own K/V `kv` (self layers) or the encoder
/// output's (cross layers, projected here), into `attention` [t][Hq·D];
/// the K/V go to `cacheTo` when the projection did not store them.
Status attendPrefill(Placement &place, const PlanOp &op, const Weights &w,
                     const Inputs &in, Workspace &ws, int64_t dModel,
                     KvCache *cacheTo, int layer, const float *projected,
                     int64_t queryStride, KeyValueRows kv, float *attention) {
  const int64_t t = in.tokens, kvWidth = int64_t(op.kvHeads) * op.headDim;
  int64_t kvLen = t;
  if (op.cross) { // K/V of the encoder output
    if (!in.memory)
      return invalid("layer " + op.name + " needs the encoder output");
    kvLen = in.memoryLength;
    float *rows = place.activation(ws.key, kvLen * 2 * kvWidth);
    if (!place.status)
      return place.status;
    std::optional<CacheAppendArgs> noCache;
    if (op.fusedCacheAppend) // no cache here: nothing stored
      noCache = noCacheAppend(op, ws, kvLen);
    if (Status s =
            linear(place.device, op.keyValue, in.memory, kvLen, dModel,
                   w.keyValue, w.keyValueBias, nullptr, nullptr, 2 * kvWidth,
                   rows, false, noCache ? &*noCache : nullptr);
        !s)
      return s;
    kv = {rows, rows, rows + kvWidth, 2 * kvWidth};
  }
  if (cacheTo && !op.fusedCacheAppend)
    if (Status s = writeToCache(in, *cacheTo, layer, kv); !s)
      return s;
  if (place.device) { // dense copies: device kernels take whole allocations
    float *keyRows = place.activation(ws.keyRows, kvLen * kvWidth);
    float *valueRows = place.activation(ws.valueRows, kvLen * kvWidth);
    Status s = place.status;
    if (s)
      s = place.copyRows(kv.base, kv.keys - kv.base, kv.stride, keyRows,
                         kvWidth, kvLen);
    if (s)
      s = place.copyRows(kv.base, kv.values - kv.base, kv.stride, valueRows,
                         kvWidth, kvLen);
    if (!s)
      return s;
    kv = {keyRows, keyRows, valueRows, kvWidth};
  }
  return prefillAttention(place.device, op, projected, queryStride, t, kv.keys,
                          kv.values, kv.stride, kvLen, attention);
}

/// A prompt's chunk in a step: the first `rows` query rows (of `projected`,
/// rows `queryStride` apart), one sequence's tokens at its newest positions,
/// over that sequence's K/V in the cache (its earlier tokens and the
/// chunk's, already stored), by the prefill kernels, whose causal mask is
/// aligned to the end of the keys; into `attention` [rows][Hq·D]. CPU only:
/// the K/V are read from the cache on the host.
Status attendChunk(const PlanOp &op, const Inputs &in, Workspace &ws,
                   int layer, int64_t rows, const float *projected,
                   int64_t queryStride, float *attention) {
  const int64_t kvWidth = int64_t(op.kvHeads) * op.headDim;
  const int kvLen = in.positions[rows - 1] + 1;
  float *keys = grow(ws.keyRows, size_t(kvLen) * kvWidth);
  float *values = grow(ws.valueRows, size_t(kvLen) * kvWidth);
  if (Status s = in.selfCache->read(in.selfSequences[0], layer, 0, kvLen, keys,
                                    values);
      !s)
    return s;
  return prefillAttention(nullptr, op, projected, queryStride, rows, keys,
                          values, kvWidth, kvLen, attention);
}

/// The rows at the start of a step that are one sequence's prompt chunk (a
/// run of two or more rows of the first sequence), which the prefill
/// kernels attend; 0 where the decode kernels take every row (a device: the
/// chunk's K/V would be read on the host).
int64_t chunkRows(const Placement &place, const PlanOp &op, const Inputs &in) {
  if (in.mode != Mode::Step || op.cross || place.device || !in.selfCache)
    return 0;
  int64_t rows = 1;
  while (rows < in.tokens && in.selfSequences[rows] == in.selfSequences[0])
    rows++;
  return rows > 1 ? rows : 0;
}

/// A decode step's attention: each sequence's new query row (of
/// `projected`, rows `queryStride` apart) over everything its cache holds
/// for the layer, the new tokens' K/V included (appended by the projection,
/// or here from `kv`), into `attention` [batch][Hq·D].
Status attendStep(Placement &place, const PlanOp &op, const Inputs &in,
                  Workspace &ws, KvCache *cacheTo, int layer,
                  const float *projected, int64_t queryStride,
                  const KeyValueRows &kv, float *attention) {
  const int64_t t = in.tokens, q = int64_t(op.queryHeads) * op.headDim;
  const KvCache *cache = op.cross ? in.crossCache : in.selfCache;
  const SequenceId *sequences = op.cross ? in.crossSequences : in.selfSequences;
  if (cacheTo && !op.fusedCacheAppend)
    if (Status s = writeToCache(in, *cacheTo, layer, kv); !s)
      return s;
  // A prompt's chunk first (its K/V are in the cache now), by the prefill
  // kernels; the decode kernels take the rows after it.
  if (const int64_t rows = chunkRows(place, op, in)) {
    if (Status s = attendChunk(op, in, ws, layer, rows, projected, queryStride,
                               attention);
        !s)
      return s;
    if (rows == t)
      return Status::ok();
    Inputs rest = in;
    rest.tokens -= int(rows);
    rest.ids += rows;
    rest.positions += rows;
    rest.selfSequences += rows;
    return attendStep(place, op, rest, ws, nullptr, layer,
                      projected + rows * queryStride, queryStride, kv,
                      attention + rows * q);
  }
  // The decode kernel reads a dense query.
  float *query = place.activation(ws.query, t * q);
  if (!place.status)
    return place.status;
  if (Status s = place.copyRows(projected, 0, queryStride, query, q, t); !s)
    return s;
  if (op.cross && in.trace && layer == in.lastCrossLayer) {
    shadows::hostReads(query); // the trace is computed on the host
    if (Status s = traceCrossAttention(op, *cache, sequences, query, t, layer,
                                       *in.trace);
        !s)
      return s;
  }
  // Read per layer, after this layer's writes: the first write to a page a
  // fork shares copies it, which changes the sequence's block table.
  size_t maxPages = 1;
  for (int64_t b = 0; b < t; b++)
    maxPages = std::max(maxPages, cache->blockTable(sequences[b])->size());
  int32_t *table = grow(ws.blockTable, t * maxPages);
  int32_t *lengths = grow(ws.lengths, t);
  for (int64_t b = 0; b < t; b++) {
    const std::vector<int32_t> &pages = *cache->blockTable(sequences[b]);
    std::fill(table + b * maxPages, table + (b + 1) * maxPages, 0);
    std::copy(pages.begin(), pages.end(), table + b * maxPages);
    // A self row sees its sequence up to its own position (causal within a
    // chunk of one sequence); a cross row sees the whole encoder output.
    lengths[b] = op.cross ? cache->length(sequences[b]) : in.positions[b] + 1;
  }
  if (Status s = placeCache(place, *cache, layer); !s)
    return s;
  return decodeAttention(place.device, op, *cache, layer, query, table,
                         int64_t(maxPages), lengths, t, attention);
}

/// Attention of one layer reading `input` (the norm before it, or the
/// residual stream in post-norm blocks); writes ws.attention
/// [tokens][Hq·D]. `layer` indexes the layer in its cache.
Status attention(Placement &place, const PlanOp &op, const Weights &w,
                 const Inputs &in, Workspace &ws, const float *input,
                 int64_t dModel, int layer) {
  const int64_t t = in.tokens, q = int64_t(op.queryHeads) * op.headDim;
  float *attention = place.activation(ws.attention, t * q);
  if (!place.status)
    return place.status;
  if (in.mode == Mode::Step &&
      (!op.cached || !(op.cross ? in.crossCache : in.selfCache)))
    return invalid("layer " + op.name + " has no KV cache to decode with");
  // The cache this call appends the new tokens' K/V to, if any.
  KvCache *cacheTo =
      !op.cross && op.cached && (in.mode == Mode::Step || in.fillCache)
          ? in.selfCache
          : nullptr;
  std::optional<CacheAppendArgs> append;
  if (op.fusedCacheAppend)
    if (Status s = cacheAppendArgs(place, op, in, ws, cacheTo, layer, append);
        !s)
      return s;
  float *projected = nullptr;
  KeyValueRows kv{};
  if (Status s = project(place, op, w, in, ws, input, dModel,
                         append ? &*append : nullptr, projected, kv);
      !s)
    return s;
  const int64_t queryStride =
      op.fusedProjections ? q + 2 * int64_t(op.kvHeads) * op.headDim : q;
  if (in.mode == Mode::Prefill)
    return attendPrefill(place, op, w, in, ws, dModel, cacheTo, layer,
                         projected, queryStride, kv, attention);
  return attendStep(place, op, in, ws, cacheTo, layer, projected, queryStride,
                    kv, attention);
}
} // namespace

Status ModelRunner::run(const Model &model, bool decoderStack, const Inputs &in,
                        Workspace &ws, float *logits, const float **output) {
  const ModelPlan &plan = model.plan_;
  const int64_t d = plan.dModel, t = in.tokens;
  Placement place{model.device_};
  float *x = place.activation(ws.x, t * d);
  float *residual = place.activation(ws.residual, t * d);
  float *normed = place.activation(ws.normed, t * d);
  if (!place.status)
    return place.status;
  const DeviceApi *device = model.device_;
  int selfLayer = 0, crossLayer = 0;
  // After a pre norm the next sublayer (or the head) reads `normed`;
  // otherwise it reads the residual stream `x` (post-norm blocks).
  bool normedIsCurrent = false;
  for (size_t i = 0; i < plan.ops.size(); i++) {
    const PlanOp &op = plan.ops[i];
    bool inStack = decoderStack ? op.stack != "encoder" : op.stack == "encoder";
    if (!inStack)
      continue;
    const Weights &w = *model.weights_[i];
    const float *current = normedIsCurrent ? normed : x;
    Status status;
    switch (op.kind) {
    case OpKind::Embedding:
      status = embed(device, op, w.table, w.positionTable, in.ids, in.positions,
                     t, d, x);
      break;
    case OpKind::Norm:
      status = norm(device, op, w.normWeight, w.normBias, x, t, d, normed);
      if (status && op.post) // x = norm(x)
        std::swap(x, normed);
      break;
    case OpKind::Attention:
      status = attention(place, op, w, in, ws, current, d,
                         op.cross ? crossLayer : selfLayer);
      if (op.cross)
        crossLayer++;
      else if (op.cached)
        selfLayer++;
      if (status) // x += attention · Wo (+ bias), ping-pong buffers
        status = linear(device, op.output, ws.attention.data(), t,
                        int64_t(op.queryHeads) * op.headDim, w.output,
                        w.outputBias, nullptr, x, d, residual);
      if (status)
        std::swap(x, residual);
      break;
    case OpKind::Ffn: {
      const int64_t width = (op.gated ? 2 : 1) * op.intermediateSize;
      float *hidden = place.activation(ws.hidden, t * width);
      status = place.status;
      if (status)
        status = linear(device, op.up, current, t, d, w.up, w.upBias, nullptr,
                        nullptr, width, hidden);
      if (status)
        status = linear(device, op.down, hidden, t, op.intermediateSize, w.down,
                        w.downBias, nullptr, x, d, residual, op.gated);
      if (status)
        std::swap(x, residual);
      break;
    }
    case OpKind::OutputHead: {
      if (!logits)
        break;
      const float *input = current;
      const int64_t rows = in.headRows ? in.headRowCount : t;
      if (in.headRows && device && rows > 1 &&
          in.headRows[rows - 1] - in.headRows[0] != rows - 1) {
        status = invalid("on a device the head's rows must be consecutive");
        break;
      }
      if (in.headRows) { // the rows whose logits are wanted, gathered
        float *gathered = place.activation(ws.lastRow, size_t(rows * d));
        status = place.status;
        for (int64_t r = 0; status && r < rows;) {
          int64_t run = 1; // consecutive rows copy as one block
          while (r + run < rows && in.headRows[r + run] == in.headRows[r] + run)
            run++;
          status = place.copyRows(input, int64_t(in.headRows[r]) * d, d,
                                  gathered + r * d, d, run);
          r += run;
        }
        if (!status)
          break;
        input = gathered;
      }
      // A kernel with the argmax writes it whether or not it is wanted.
      int32_t *best = !op.argmax  ? nullptr
                      : in.greedy ? in.greedy
                                  : grow(ws.greedy, size_t(rows));
      status =
          linear(device, op.kernel, input, rows, d, w.head, w.headBias, nullptr,
                 nullptr, op.vocabSize, logits, false, nullptr, best);
      if (status && in.greedy && !op.argmax) // a plan without it
        for (int64_t r = 0; r < rows; r++)
          in.greedy[r] = firstLargest(logits + r * op.vocabSize, op.vocabSize);
      break;
    }
    }
    if (!status)
      return status;
    normedIsCurrent = (op.kind == OpKind::Norm && !op.post) ||
                      (normedIsCurrent && op.kind == OpKind::OutputHead);
  }
  // `x` may have been swapped with `residual`: hand back the live one.
  if (output)
    *output = normedIsCurrent ? normed : x;
  return Status::ok();
}

} // namespace attn::runtime
