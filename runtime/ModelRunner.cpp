//===- ModelRunner.cpp - one forward pass over a model's ops --------------===//
//
// Walks the plan's ops of one stack, calling each op's generated kernels
// (KernelCalls.h) on the buffers of the thread's ExecutionContext
// (ContextBuffers.h), grown to the pass's rows before it starts: the
// residual stream `x` [tokens][d], the norm output `normed` [tokens][d],
// FFN hiddens; attention's projections and outputs. Attention is the one op
// whose work depends on the mode: its projections are shared, then prefill
// attends over the sequence's own K/V (attendPrefill) and a step over the
// KV cache (attendStep). On a GPU model every buffer here has its device
// copy, so the activations stay on the device between kernels.
//
//===----------------------------------------------------------------------===//

#include "ModelRunner.h"

#include "ContextBuffers.h"
#include "CrossAttentionTrace.h"
#include "Experts.h"
#include "KernelCalls.h"
#include "LatentAttention.h"

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
  Placed<const float> base, keys, values;
  int64_t stride;
};

/// One attention layer's call: where kernels run, the op and its weights,
/// the forward pass's inputs, and the layer's index in its cache. What
/// every helper below reads; each takes the buffers (the context's
/// AttentionBuffers) and the rest by name.
struct Layer {
  const DeviceApi *device; // null: the CPU
  const PlanOp &op;
  const Weights &w;
  const Inputs &in;
  int index;
  int64_t dModel;

  int64_t queryWidth() const { return int64_t(op.queryHeads) * op.headDim; }
  int64_t kvWidth() const { return int64_t(op.kvHeads) * op.headDim; }
  /// The same layer over other inputs (the rows after a chunk).
  Layer with(const Inputs &other) const {
    return {device, op, w, other, index, dModel};
  }
};

/// The slots and pools of a fused cache append: the new tokens' positions
/// reserved in `cache` (prefill: positions [0, tokens) of the first
/// sequence; step: each sequence's position), or, with no cache to fill,
/// no slots and a one-slot pool nothing is stored in.
Status cacheAppendArgs(const Layer &l, AttentionBuffers &buffers,
                       KvCache *cache, std::optional<CacheAppendArgs> &append) {
  const Inputs &in = l.in;
  const int64_t t = in.tokens;
  if (!cache) {
    append = noCacheAppend(l.op, t, buffers.slots, buffers.noCachePool);
    return Status::ok();
  }
  int32_t *slots = buffers.slots.data();
  const KvCacheConfig &c = cache->config();
  if (l.index >= c.numLayers || c.numKvHeads != l.op.kvHeads ||
      c.headDim != l.op.headDim || c.dtype != l.op.cacheType)
    return invalid("layer " + l.op.name +
                   " does not match its KV cache's geometry");
  if (l.device)
    if (Status s = cache->placeOn(*l.device, l.index); !s)
      return s;
  if (in.mode == Mode::Prefill) {
    if (Status s = cache->reserveSlots(in.selfSequences[0], 0, int(t), slots,
                                       l.index);
        !s)
      return s;
  } else {
    for (int64_t b = 0; b < t; b++)
      if (Status s = cache->reserveSlots(in.selfSequences[b], in.positions[b],
                                         1, slots + b, l.index);
          !s)
        return s;
  }
  append = appendTo(*cache, l.index, slots);
  return Status::ok();
}

/// The new tokens' K/V rows written into `cache` by the host, for layers
/// whose projection does not append them itself: prefill's tokens as
/// positions [0, t) of the first sequence, a step's as each sequence's
/// newest position.
Status writeToCache(const Inputs &in, KvCache &cache, int layer,
                    const KeyValueRows &kv) {
  if (kv.base.copy) // the cache is written from the host
    kv.base.copy->hostReads();
  for (int64_t b = 0; b < in.tokens; b++) {
    const bool prefill = in.mode == Mode::Prefill;
    SequenceId sequence = in.selfSequences[prefill ? 0 : b];
    int position = prefill ? int(b) : in.positions[b];
    if (Status s = cache.write(sequence, layer, position, 1,
                               kv.keys.data + b * kv.stride,
                               kv.values.data + b * kv.stride);
        !s)
      return s;
  }
  return Status::ok();
}

/// The layer's projections of `input` [t][dModel]: the query (with K and V
/// beside it when fused, [t][q + 2kv]) into buffers.projected and, for
/// unfused self layers, K/V [t][2kv] into buffers.keyValue; RoPE applied by
/// the kernels, and
/// K/V appended to the cache by them when `append` says where.
Status project(const Layer &l, AttentionBuffers &buffers,
               Placed<const float> input, const CacheAppendArgs *append,
               RowsView &query, KeyValueRows &kv) {
  const PlanOp &op = l.op;
  const int64_t t = l.in.tokens, q = l.queryWidth(), kvWidth = l.kvWidth();
  const int64_t width = op.fusedProjections ? q + 2 * kvWidth : q;
  // Rows `width` apart: the buffer's width is the widest layer's.
  const Placed<float> projected = buffers.projected.placed();
  LinearCall call{op.query, l.w.query, l.w.queryBias, input,
                  t,        l.dModel,  width,         projected};
  call.positions = op.rope ? l.in.positions : nullptr;
  call.qkNorm = op.qkNorm != PlanOp::QkNorm::None ? &l.w.queryNorm : nullptr;
  call.append = op.fusedProjections ? append : nullptr;
  if (Status s = linear(l.device, call); !s)
    return s;
  query = {projected, width, t};
  kv = {projected, projected + q, projected + q + kvWidth, width};
  if (op.fusedProjections || op.cross)
    return Status::ok(); // cross layers' K/V come from memory or the cache
  const Placed<float> rows = buffers.keyValue.placed();
  // K | V rows, or, with V computed apart (PlanOp::value), K's [t][kv]
  // rows and then V's in the same buffer ([t][2kv] floats either way).
  const int64_t keyWidth = op.value ? kvWidth : 2 * kvWidth;
  kv = op.value ? KeyValueRows{rows, rows, rows + t * kvWidth, kvWidth}
                : KeyValueRows{rows, rows, rows + kvWidth, 2 * kvWidth};
  LinearCall keyValue{op.keyValue, l.w.keyValue, l.w.keyValueBias, input,
                      t,           l.dModel,     keyWidth,         rows};
  keyValue.positions = call.positions;
  keyValue.qkNorm =
      op.qkNorm != PlanOp::QkNorm::None ? &l.w.keyValueNorm : nullptr;
  keyValue.append = append;
  if (Status s = linear(l.device, keyValue); !s || !op.value)
    return s;
  LinearCall value{op.value, l.w.value, l.w.valueBias, input,
                   t,        l.dModel,  kvWidth,       rows + t * kvWidth};
  return linear(l.device, value);
}

/// Prefill attention: the `query` rows over the sequence's own K/V `kv`
/// (self layers) or the encoder output's (cross layers, projected here),
/// into `attention` [t][Hq·D]; the K/V go to `cacheTo` when the projection
/// did not store them.
Status attendPrefill(const Layer &l, AttentionBuffers &buffers,
                     KvCache *cacheTo, RowsView query, KeyValueRows kv,
                     Placed<float> attention) {
  const PlanOp &op = l.op;
  const Inputs &in = l.in;
  const int64_t t = in.tokens, kvWidth = l.kvWidth();
  int64_t kvLen = t;
  if (op.cross) { // K/V of the encoder output
    if (!in.memory)
      return invalid("layer " + op.name + " needs the encoder output");
    kvLen = in.memoryLength;
    const Placed<float> rows = buffers.keyValue.placed();
    std::optional<CacheAppendArgs> noCache;
    if (op.fusedCacheAppend) // no cache here: nothing stored
      noCache = noCacheAppend(op, kvLen, buffers.slots, buffers.noCachePool);
    LinearCall call{op.keyValue, l.w.keyValue, l.w.keyValueBias, in.memory,
                    kvLen,       l.dModel,     2 * kvWidth,      rows};
    call.append = noCache ? &*noCache : nullptr;
    if (Status s = linear(l.device, call); !s)
      return s;
    kv = {rows, rows, rows + kvWidth, 2 * kvWidth};
  }
  if (cacheTo && !op.fusedCacheAppend)
    if (Status s = writeToCache(in, *cacheTo, l.index, kv); !s)
      return s;
  if (l.device) { // dense copies: device kernels take whole allocations
    const RowsView rows{kv.base, kv.stride, kvLen};
    const Placed<float> keys = buffers.keys.placed(),
                        values = buffers.values.placed();
    Status s =
        copyRows(l.device, rows, kv.keys.data - kv.base.data, kvWidth, keys);
    if (s)
      s = copyRows(l.device, rows, kv.values.data - kv.base.data, kvWidth,
                   values);
    if (!s)
      return s;
    kv = {keys, keys, values, kvWidth};
  }
  return prefillAttention(l.device, op, query, {kv.keys, kv.stride, kvLen},
                          {kv.values, kv.stride, kvLen}, l.w.sinks, attention);
}

/// A prompt's chunk in a step: the `query` rows, one sequence's tokens at
/// its newest positions, over that sequence's K/V in the cache
/// (its earlier tokens and the chunk's, already stored), by the prefill
/// kernels, whose causal mask is aligned to the end of the keys; into
/// `attention` [rows][Hq·D]. CPU only: the K/V are read from the cache on
/// the host.
Status attendChunk(const Layer &l, AttentionBuffers &buffers, RowsView query,
                   Placed<float> attention) {
  const Inputs &in = l.in;
  const int64_t kvWidth = l.kvWidth();
  // With a sliding window, the keys from the first row's window on: the
  // kernel's mask is aligned to the end of the keys, and the cache released
  // the ones before.
  const int kvEnd = in.positions[query.count - 1] + 1;
  const int kvStart =
      l.op.window > 0 ? std::max(0, in.positions[0] - l.op.window + 1) : 0;
  const int kvLen = kvEnd - kvStart;
  // Grown here, on the host (passRows leaves them to the chunk).
  Status s = buffers.keys.reserve(kvLen);
  if (s)
    s = buffers.values.reserve(kvLen);
  float *keys = buffers.keys.data(), *values = buffers.values.data();
  if (s)
    s = in.selfCache->read(in.selfSequences[0], l.index, kvStart, kvLen, keys,
                           values);
  if (!s)
    return s;
  return prefillAttention(nullptr, l.op, query, {keys, kvWidth, kvLen},
                          {values, kvWidth, kvLen}, l.w.sinks, attention);
}

/// The rows at the start of a step that are one sequence's prompt chunk (a
/// run of two or more rows of the first sequence), which the prefill
/// kernels attend; 0 where the decode kernels take every row (a device: the
/// chunk's K/V would be read on the host).
int64_t chunkRows(const Layer &l) {
  const Inputs &in = l.in;
  if (in.mode != Mode::Step || l.op.cross || l.device || !in.selfCache)
    return 0;
  int64_t rows = 1;
  while (rows < in.tokens && in.selfSequences[rows] == in.selfSequences[0])
    rows++;
  return rows > 1 ? rows : 0;
}

/// A decode step's attention: each sequence's new `query` row over
/// everything its cache holds for the layer, the new tokens' K/V included
/// (appended by the projection, or here from `kv`), into `attention`
/// [batch][Hq·D].
Status attendStep(const Layer &l, AttentionBuffers &buffers, KvCache *cacheTo,
                  RowsView query, const KeyValueRows &kv,
                  Placed<float> attention) {
  const PlanOp &op = l.op;
  const Inputs &in = l.in;
  const int64_t t = in.tokens, q = l.queryWidth();
  const KvCache *cache = op.cross ? in.crossCache : in.selfCache;
  const SequenceId *sequences = op.cross ? in.crossSequences : in.selfSequences;
  if (cacheTo && !op.fusedCacheAppend)
    if (Status s = writeToCache(in, *cacheTo, l.index, kv); !s)
      return s;
  // A prompt's chunk first (its K/V are in the cache now), by the prefill
  // kernels; the decode kernels take the rows after it.
  if (const int64_t rows = chunkRows(l)) {
    if (Status s = attendChunk(l, buffers, {query.data, query.stride, rows},
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
    return attendStep(
        l.with(rest), buffers, nullptr,
        {query.data + rows * query.stride, query.stride, t - rows}, kv,
        attention + rows * q);
  }
  // The decode kernel reads a dense query.
  const Placed<float> dense = buffers.query.placed();
  if (Status s = copyRows(l.device, query, 0, q, dense); !s)
    return s;
  if (op.cross && in.trace && l.index == in.lastCrossLayer) {
    buffers.query.hostReads(); // the trace is computed on the host
    if (Status s = traceCrossAttention(op, *cache, sequences, dense.data, t,
                                       l.index, *in.trace);
        !s)
      return s;
  }
  // Read per layer, after this layer's writes: the first write to a page a
  // fork shares copies it, which changes the sequence's block table.
  // A sliding-window row gets its table and length from the first page of
  // its window on: the kernel's mask is relative to the row's position, so
  // its work is the window's however long the sequence (the pages before
  // were released: KvCache.h).
  const int pageSize = cache->config().pageSize;
  auto firstPage = [&](int64_t b) -> size_t {
    return op.cross ? 0 : size_t(cache->firstPageRead(l.index, in.positions[b]));
  };
  size_t maxPages = 1;
  for (int64_t b = 0; b < t; b++)
    maxPages = std::max(maxPages,
                        cache->blockTable(sequences[b], l.index)->size() -
                            firstPage(b));
  (void)buffers.blockTable.reserve(t * int64_t(maxPages)); // host memory
  int32_t *table = buffers.blockTable.data();
  int32_t *lengths = buffers.lengths.data();
  for (int64_t b = 0; b < t; b++) {
    const std::vector<int32_t> &pages =
        *cache->blockTable(sequences[b], l.index);
    const size_t first = firstPage(b);
    std::fill(table + b * maxPages, table + (b + 1) * maxPages, 0);
    std::copy(pages.begin() + first, pages.end(), table + b * maxPages);
    // A self row sees its sequence up to its own position (causal within a
    // chunk of one sequence); a cross row sees the whole encoder output.
    lengths[b] = op.cross ? cache->length(sequences[b])
                          : in.positions[b] + 1 - int(first) * pageSize;
  }
  if (l.device)
    if (Status s = cache->placeOn(*l.device, l.index); !s)
      return s;
  return decodeAttention(l.device, op, *cache, l.index,
                         {dense, table, int64_t(maxPages), lengths, t},
                         l.w.sinks, attention);
}

/// Attention of one layer reading `input` (the norm before it, or the
/// residual stream in post-norm blocks); writes buffers.output
/// [tokens][Hq·D].
Status attention(const Layer &l, AttentionBuffers &buffers,
                 Placed<const float> input) {
  const PlanOp &op = l.op;
  const Inputs &in = l.in;
  const Placed<float> attention = buffers.output.placed();
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
    if (Status s = cacheAppendArgs(l, buffers, cacheTo, append); !s)
      return s;
  RowsView query{};
  KeyValueRows kv{};
  const Weights &w = l.w;
  const LatentWeights latent{w.queryDown,     w.query,     w.keyValue,
                             w.absorb,        w.unabsorb,  w.queryDownNorm,
                             w.latentNorm};
  if (op.latent.rank) {
    // Latent attention (LatentAttention.h): its heads' absorbed queries
    // over rows that are its keys, its values and what it caches.
    const Placed<float> queryRows = buffers.projected.placed(),
                        rows = buffers.keyValue.placed();
    if (Status s = latentProject(op, latent, input.data, in.tokens, l.dModel,
                                 in.positions, buffers.latent, queryRows.data,
                                 rows.data);
        !s)
      return s;
    query = {queryRows, l.queryWidth(), in.tokens};
    kv = {rows, rows, rows, l.kvWidth()};
  } else if (Status s = project(l, buffers, input,
                                append ? &*append : nullptr, query, kv);
             !s) {
    return s;
  }
  Status s = in.mode == Mode::Prefill
                 ? attendPrefill(l, buffers, cacheTo, query, kv, attention)
                 : attendStep(l, buffers, cacheTo, query, kv, attention);
  if (!s || !op.latent.rank)
    return s;
  return latentUnabsorb(op, latent, attention.data, in.tokens, buffers.latent,
                        attention.data);
}

/// The rows `in` asks of the context's buffers (ContextBuffers.h). Dense
/// K/V copies are a device's prefill's; a prompt chunk's keys, read back
/// from the cache on the host, are grown by attendChunk.
PassRows passRows(const Inputs &in, const DeviceApi *device, bool head) {
  const int64_t t = in.tokens, memory = in.memory ? in.memoryLength : 0;
  const int64_t keys =
      device && in.mode == Mode::Prefill ? std::max(t, memory) : 0;
  const int64_t headRows = !head ? 0 : in.headRows ? in.headRowCount : t;
  return {t, memory, keys, headRows};
}

/// The head's input: the rows of `input` [tokens][d] whose logits are
/// wanted (in.headRows), gathered into `rows`; `input` itself when every
/// row is.
Status headInput(const DeviceApi *device, const Inputs &in, RowsView input,
                 Activations &rows, Placed<const float> &gathered) {
  gathered = input.data;
  if (!in.headRows)
    return Status::ok();
  const int64_t count = in.headRowCount, d = input.stride;
  if (device && count > 1 &&
      in.headRows[count - 1] - in.headRows[0] != count - 1)
    return invalid("on a device the head's rows must be consecutive");
  for (int64_t r = 0; r < count;) {
    int64_t run = 1; // consecutive rows copy as one block
    while (r + run < count && in.headRows[r + run] == in.headRows[r] + run)
      run++;
    if (Status s =
            copyRows(device, {input.data, d, run}, int64_t(in.headRows[r]) * d,
                     d, rows.placed() + r * d);
        !s)
      return s;
    r += run;
  }
  gathered = rows.placed();
  return Status::ok();
}
} // namespace

Status ModelRunner::run(const Model &model, bool decoderStack, const Inputs &in,
                        ExecutionContext &context, float *logits,
                        Placed<const float> *output) {
  if (&context.model_ != &model)
    return invalid("an execution context made for another model");
  const ModelPlan &plan = model.plan_;
  const DeviceApi *device = model.device_;
  ExecutionContext::Buffers &buffers = *context.buffers_;
  if (Status s = buffers.reserve(passRows(in, device, logits != nullptr)); !s)
    return s;
  const int64_t d = plan.dModel, t = in.tokens;
  Placed<float> x = buffers.stream.x.placed(),
                residual = buffers.stream.residual.placed(),
                normed = buffers.stream.normed.placed();
  const Placed<float> hidden = buffers.stream.hidden.placed();
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
    const Placed<const float> current = normedIsCurrent ? normed : x;
    // A sublayer followed by a residual_add norm leaves its output in
    // `residual` unadded; the norm adds it to the stream.
    const bool normAddsOutput = i + 1 < plan.ops.size() &&
                                plan.ops[i + 1].kind == OpKind::Norm &&
                                plan.ops[i + 1].residualAdd;
    Status status;
    switch (op.kind) {
    case OpKind::Embedding:
      status = embed(device, op, w.table, w.positionTable,
                     {in.ids, in.positions, t}, x);
      break;
    case OpKind::Norm:
      if (op.residualAdd) { // x = x + norm(sublayer output)
        status = norm(device, op, w.normWeight, w.normBias, {residual, d, t},
                      normed, x);
        if (status)
          std::swap(x, normed);
        break;
      }
      status = norm(device, op, w.normWeight, w.normBias, {x, d, t}, normed);
      if (status && op.post) // x = norm(x)
        std::swap(x, normed);
      break;
    case OpKind::Attention: {
      AttentionBuffers &attentionBuffers = buffers.attention;
      status = attention(
          Layer{device, op, w, in, op.cross ? crossLayer : selfLayer, d},
          attentionBuffers, current);
      if (op.cross)
        crossLayer++;
      else if (op.cached)
        selfLayer++;
      if (status) { // x += attention · Wo (+ bias), ping-pong buffers
        LinearCall call{op.output,
                        w.output,
                        w.outputBias,
                        attentionBuffers.output.placed(),
                        t,
                        int64_t(op.queryHeads) * op.outputHeadDim(),
                        d,
                        residual};
        if (!normAddsOutput)
          call.residual = x;
        status = linear(device, call);
      }
      if (status && !normAddsOutput)
        std::swap(x, residual);
      break;
    }
    case OpKind::Ffn: {
      if (op.experts.count) { // Experts.h; CPU only (Model::load)
        status = mixtureOfExperts(
            op,
            {w.router, w.routerBias, w.selectionBias, w.up, w.down, w.upBias, w.downBias,
             w.sharedUp, w.sharedDown, w.sharedUpBias, w.sharedDownBias,
             w.sharedGate},
            current.data,
            t, d, buffers.experts, hidden.data,
            normAddsOutput ? nullptr : x.data, residual.data);
        if (status && !normAddsOutput)
          std::swap(x, residual);
        break;
      }
      const int64_t width = (op.gated ? 2 : 1) * op.intermediateSize;
      status =
          linear(device, {op.up, w.up, w.upBias, current, t, d, width, hidden});
      LinearCall down{op.down, w.down,  w.downBias,
                      hidden,  t,       op.intermediateSize,
                      d,       residual};
      if (!normAddsOutput)
        down.residual = x;
      down.gatedInput = op.gated;
      if (status)
        status = linear(device, down);
      if (status && !normAddsOutput)
        std::swap(x, residual);
      break;
    }
    case OpKind::OutputHead: {
      if (!logits)
        break;
      const int64_t rows = in.headRows ? in.headRowCount : t;
      Placed<const float> input;
      status = headInput(device, in, {current, d, t}, buffers.head.rows, input);
      if (!status)
        break;
      // A kernel with the argmax writes it whether or not it is wanted.
      int32_t *best = !op.argmax  ? nullptr
                      : in.greedy ? in.greedy
                                  : buffers.head.greedy.data();
      LinearCall head{op.kernel, w.head, w.headBias,   input,
                      rows,      d,      op.vocabSize, logits};
      head.best = best;
      status = linear(device, head);
      if (status && in.greedy && !op.argmax) // a plan without it
        for (int64_t r = 0; r < rows; r++)
          in.greedy[r] = firstLargest(logits + r * op.vocabSize, op.vocabSize);
      break;
    }
    }
    if (!status)
      return status;
    normedIsCurrent = (op.kind == OpKind::Norm && !op.post &&
                       !op.residualAdd) ||
                      (normedIsCurrent && op.kind == OpKind::OutputHead);
  }
  // `x` may have been swapped with `residual`: hand back the live one.
  if (output)
    *output = normedIsCurrent ? normed : x;
  return Status::ok();
}

} // namespace attn::runtime
