//===- ModelRunner.cpp - running a generated model's ops in order ---------===//
//
// Walks the plan's ops of one stack, calling each op's generated kernels on
// the thread's Workspace: the residual stream `x` [tokens][d], the norm
// output `normed` [tokens][d], projections, attention outputs and FFN
// hiddens. Two modes: prefill (a whole sequence, attention by the prefill
// kernels, no cache) and step (one new token per sequence of a batch,
// attention by the decode kernels over KV caches).
//
//===----------------------------------------------------------------------===//

#include "DevicePlacement.h"
#include "DeviceShadows.h"
#include "ModelWeights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

namespace attn::runtime {

namespace {
/// The Halide element type of cache pools and weights stored as `type`.
halide_type_t halideType(DType type) {
  switch (type) {
  case DType::F32:
    return float32Type();
  case DType::F16:
    return float16Type();
  case DType::BF16:
    return bfloat16Type();
  case DType::I8:
    return {halide_type_int, 8, 1};
  }
  return float32Type();
}

Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

/// Where a K/V projection with the cache append fused in stores its K and V
/// rows: one layer's page pools [poolSlots][kvHeads][headDim] element and
/// the slot of each token, slots [tokens] (-1: not stored).
struct CacheAppendArgs {
  const int32_t *slots;
  void *keyPool, *valuePool;
  halide_type_t element;
  int64_t poolSlots, kvHeads, headDim;
  /// int8 pools: each row's scale, [poolSlots][kvHeads] float; else null.
  float *keyScales = nullptr, *valueScales = nullptr;
};

/// out [tokens][outF] = act(in [tokens][inF] · W + b) (+ residual)
/// (+ RoPE by `positions` when the kernel has it) (+ K/V into the cache)
/// (+ best [tokens], each row's argmax, for a kernel with the argmax).
Status linear(const DeviceApi *device, const Kernel &kernel, const float *in,
              int64_t tokens, int64_t inF, const WeightMatrix &w,
              const Floats &b, const int32_t *positions,
              const float *residual, int64_t outF, float *out,
              bool gatedInput = false, const CacheAppendArgs *append = nullptr,
              int32_t *best = nullptr) {
  // A gated input holds [gate | up] halves of inF each.
  const int64_t width = gatedInput ? 2 * inF : inF;
  BufferView input(in, float32Type(), {{width, 1}, {tokens, width}});
  if (w.in != inF || w.out != outF)
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + ": weights of " +
                      std::to_string(w.in) + " x " + std::to_string(w.out) +
                      " for a " + std::to_string(inF) + " -> " +
                      std::to_string(outF) + " projection");
  // [panels][rows][words] (Model::Weights; bf16 pairs as uint32 words,
  // int8 with inputs in pairs).
  const halide_type_t weightType = w.pairs()
                                       ? halide_type_t{halide_type_uint, 32, 1}
                                       : halideType(w.type);
  BufferView weight(w.data(), weightType,
                    {{w.words(), 1}, {w.rows(), w.words()},
                     {w.panels(), w.rows() * w.words()}});
  BufferView scales(w.scales.data(), float32Type(), {{outF, 1}});
  BufferView bias(b.data(), float32Type(), {{outF, 1}});
  BufferView position(positions, int32Type(), {{tokens, 1}});
  BufferView res(residual, float32Type(), {{outF, 1}, {tokens, outF}});
  BufferView output(out, float32Type(), {{outF, 1}, {tokens, outF}});
  std::vector<KernelArg> args = {
      {"input", &input}, {"weight", &weight}, {"output", &output}};
  if (w.type == DType::I8)
    args.push_back({"weight_scales", &scales});
  if (!b.empty())
    args.push_back({"bias", &bias});
  if (positions)
    args.push_back({"positions", &position});
  if (residual)
    args.push_back({"residual", &res});
  std::optional<BufferView> slots, keyPool, valuePool, keyScales, valueScales;
  if (append) {
    const int64_t kv = append->kvHeads * append->headDim;
    slots.emplace(append->slots, int32Type(),
                  std::initializer_list<BufferView::Dim>{{tokens, 1}});
    for (auto [view, pool] : {std::pair{&keyPool, append->keyPool},
                              std::pair{&valuePool, append->valuePool}})
      view->emplace(pool, append->element,
                    std::initializer_list<BufferView::Dim>{
                        {append->headDim, 1},
                        {append->kvHeads, append->headDim},
                        {append->poolSlots, kv}});
    args.push_back({"cache_slots", &*slots});
    args.push_back({"key_cache", &*keyPool});
    args.push_back({"value_cache", &*valuePool});
  }
  if (append && append->keyScales) {
    for (auto [view, pool] : {std::pair{&keyScales, append->keyScales},
                              std::pair{&valueScales, append->valueScales}})
      view->emplace(
          pool, float32Type(),
          std::initializer_list<BufferView::Dim>{
              {append->kvHeads, 1}, {append->poolSlots, append->kvHeads}});
    args.push_back({"key_scales", &*keyScales});
    args.push_back({"value_scales", &*valueScales});
  }
  BufferView bestView(best, int32Type(), {{tokens, 1}});
  if (best)
    args.push_back({"best_token", &bestView});
  if (tokens <= 2 && kernel.fewTokens) {
    Kernel gemv{kernel.name + "_gemv", kernel.fewTokens,
                kernel.fewTokensMetadata};
    return callKernel(gemv, args, device);
  }
  return callKernel(kernel, args, device);
}

/// The lowest index of the largest of `logits` [vocabulary], -1 if one is
/// NaN: what a head kernel's fused argmax computes.
int32_t firstLargest(const float *logits, int vocabulary) {
  for (int i = 0; i < vocabulary; i++)
    if (std::isnan(logits[i]))
      return -1;
  return int32_t(std::max_element(logits, logits + vocabulary) - logits);
}

/// A [tokens][heads][D] view with rows `rowStride` floats apart.
BufferView headsView(const float *data, int64_t tokens, int64_t heads,
                     int64_t headDim, int64_t rowStride) {
  return BufferView(data, float32Type(),
                    {{headDim, 1},
                     {heads, headDim},
                     {tokens, rowStride},
                     {1, tokens * rowStride}});
}

enum class Mode { Prefill, Step };

/// A fused append into `layer` of `cache` at `slots`.
CacheAppendArgs appendTo(KvCache &cache, int layer, const int32_t *slots) {
  const KvCacheConfig &c = cache.config();
  CacheAppendArgs append{slots,
                         cache.writableKeyPages(layer),
                         cache.writableValuePages(layer),
                         halideType(c.dtype),
                         int64_t(c.numPages) * c.pageSize,
                         c.numKvHeads,
                         c.headDim};
  append.keyScales = cache.writableKeyScales(layer);
  append.valueScales = cache.writableValueScales(layer);
  return append;
}

/// A fused-append kernel run with no cache to fill (prefill without a
/// cache): `tokens` slots of -1 and a one-slot pool nothing is stored in.
CacheAppendArgs noCacheAppend(const PlanOp &op, Workspace &ws, int64_t tokens) {
  int32_t *slots = grow(ws.cacheSlots, tokens);
  std::fill(slots, slots + tokens, -1);
  float *pool = grow(ws.noCache, size_t(op.kvHeads) * op.headDim);
  CacheAppendArgs append{slots, pool,       pool,      halideType(op.cacheType),
                         1,     op.kvHeads, op.headDim};
  if (op.cacheType == DType::I8) // [1][kvHeads] scales fit in it too
    append.keyScales = append.valueScales = pool;
  return append;
}

} // namespace

/// The walk over one stack's ops (a friend of Model).
class ModelRunner {
public:
  struct Inputs {
    Mode mode;
    int tokens; // tokens in the batch (Step: one per sequence)
    const int32_t *ids, *positions;
    // Prefill with cross layers: the encoder output.
    const float *memory = nullptr;
    int memoryLength = 0;
    // Step: caches and sequences.
    KvCache *selfCache = nullptr;
    const KvCache *crossCache = nullptr;
    const SequenceId *selfSequences = nullptr, *crossSequences = nullptr;
    CrossAttentionTrace *trace = nullptr; // Step: the last cross layer
    int lastCrossLayer = -1;
    // Prefill into a cache: K/V of cached self layers go to
    // selfSequences[0] of selfCache, and only the last token's logits are
    // computed.
    bool fillCache = false;
    // With a head: each logits row's greedy token [rows] (-1: a NaN logit).
    int32_t *greedy = nullptr;
  };

  /// Runs the ops of `stack` (and the output head for the decoder). On
  /// return `normed` (after a final norm) or `x` holds the stack's output;
  /// with a head, `logits` [tokens][vocab].
  static Status run(const Model &model, bool decoderStack, const Inputs &in,
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
      bool inStack =
          decoderStack ? op.stack != "encoder" : op.stack == "encoder";
      if (!inStack)
        continue;
      const Model::Weights &w = *model.weights_[i];
      Status status;
      switch (op.kind) {
      case OpKind::Embedding: {
        BufferView ids(in.ids, int32Type(), {{t, 1}});
        BufferView positions(in.positions, int32Type(), {{t, 1}});
        BufferView table(w.table.data(), float32Type(),
                         {{d, 1}, {op.vocabSize, d}});
        BufferView positionTable(
            w.positionTable.data(), float32Type(),
            {{d, 1}, {op.maxPositions + op.positionOffset, d}});
        BufferView out(x, float32Type(), {{d, 1}, {t, d}});
        std::vector<KernelArg> args = {{"tokens", &ids},
                                       {"positions", &positions},
                                       {"table", &table},
                                       {"output", &out}};
        if (!w.positionTable.empty())
          args.push_back({"position_table", &positionTable});
        status = callKernel(op.kernel, args, device);
        break;
      }
      case OpKind::Norm: {
        BufferView input(x, float32Type(), {{d, 1}, {t, d}});
        BufferView weight(w.normWeight.data(), float32Type(), {{d, 1}});
        BufferView bias(w.normBias.data(), float32Type(), {{d, 1}});
        BufferView out(normed, float32Type(), {{d, 1}, {t, d}});
        std::vector<KernelArg> args = {
            {"input", &input}, {"weight", &weight}, {"output", &out}};
        if (op.layerNorm)
          args.push_back({"bias", &bias});
        status = callKernel(op.kernel, args, device);
        if (status && op.post) // x = norm(x)
          std::swap(x, normed);
        break;
      }
      case OpKind::Attention:
        status = attention(place, op, w, in, ws, normedIsCurrent ? normed : x,
                           d, op.cross ? crossLayer : selfLayer);
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
          status = linear(device, op.up, normedIsCurrent ? normed : x, t, d,
                          w.up, w.upBias, nullptr, nullptr, width, hidden);
        if (status)
          status =
              linear(device, op.down, hidden, t, op.intermediateSize, w.down,
                     w.downBias, nullptr, x, d, residual, op.gated);
        if (status)
          std::swap(x, residual);
        break;
      }
      case OpKind::OutputHead: {
        if (!logits)
          break;
        const float *input = normedIsCurrent ? normed : x;
        const int64_t rows = in.fillCache ? 1 : t; // prompt: the next token
        if (in.fillCache && t > 1) {               // the last token's row alone
          float *last = place.activation(ws.lastRow, size_t(d));
          status = place.status;
          if (status)
            status = place.copyRows(input, (t - 1) * d, d, last, d, 1);
          if (!status)
            break;
          input = last;
        }
        // A kernel with the argmax writes it whether or not it is wanted.
        int32_t *best = !op.argmax  ? nullptr
                        : in.greedy ? in.greedy
                                    : grow(ws.greedy, size_t(rows));
        status = linear(device, op.kernel, input, rows, d, w.head, w.headBias,
                        nullptr, nullptr, op.vocabSize, logits, false, nullptr,
                        best);
        if (status && in.greedy && !op.argmax) // a plan without it
          for (int64_t r = 0; r < rows; r++)
            in.greedy[r] =
                firstLargest(logits + r * op.vocabSize, op.vocabSize);
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

private:
  /// The slots and pools of a fused cache append: the new tokens' positions
  /// reserved in `cache` (prefill: positions [0, tokens) of the first
  /// sequence; step: each sequence's position), or, with no cache to fill,
  /// no slots and a one-slot pool nothing is stored in.
  static Status cacheAppendArgs(const Placement &place, const PlanOp &op,
                                const Inputs &in, Workspace &ws, KvCache *cache,
                                int layer,
                                std::optional<CacheAppendArgs> &append) {
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

  /// softmax(q·Kᵀ·scale) of every head over the cached keys, averaged
  /// over heads, per sequence.
  static Status traceWeights(const PlanOp &op, const KvCache &cache,
                             const SequenceId *sequences, const float *query,
                             int64_t batch, int layer,
                             CrossAttentionTrace &trace) {
    const int hq = op.queryHeads, hkv = op.kvHeads, hd = op.headDim;
    trace.weights.assign(batch, {});
    for (int64_t b = 0; b < batch; b++) {
      int length = cache.length(sequences[b]);
      std::vector<float> keys(size_t(length) * hkv * hd), values(keys.size());
      if (Status s = cache.read(sequences[b], layer, 0, length, keys.data(),
                                values.data());
          !s)
        return s;
      std::vector<float> &average = trace.weights[b];
      average.assign(length, 0.0f);
      std::vector<double> logits(length);
      for (int h = 0; h < hq; h++) {
        const float *qh = query + (b * hq + h) * hd;
        int kvHead = h / (hq / hkv);
        double top = -INFINITY, sum = 0;
        for (int j = 0; j < length; j++) {
          double dot = 0;
          for (int c = 0; c < hd; c++)
            dot += double(qh[c]) * keys[(size_t(j) * hkv + kvHead) * hd + c];
          logits[j] = dot * op.scale;
          top = std::max(top, logits[j]);
        }
        for (int j = 0; j < length; j++)
          sum += logits[j] = std::exp(logits[j] - top);
        for (int j = 0; j < length; j++)
          average[j] += float(logits[j] / sum / hq);
      }
    }
    return Status::ok();
  }

  /// Attention of one layer reading `input` (the norm before it, or the
  /// residual stream in post-norm blocks); writes ws.attention
  /// [tokens][Hq·D]. `layer` indexes the layer in its cache.
  static Status attention(Placement &place, const PlanOp &op,
                          const Model::Weights &w, const Inputs &in,
                          Workspace &ws, const float *input, int64_t dModel,
                          int layer) {
    const int64_t t = in.tokens, hq = op.queryHeads, hkv = op.kvHeads,
                  hd = op.headDim, q = hq * hd, kv = hkv * hd;
    const int32_t *ropePositions = op.rope ? in.positions : nullptr;
    const DeviceApi *device = place.device;
    float *attention = place.activation(ws.attention, t * q);
    if (!place.status)
      return place.status;

    if (in.mode == Mode::Step &&
        (!op.cached || !(op.cross ? in.crossCache : in.selfCache)))
      return invalid("layer " + op.name + " has no KV cache to decode with");
    // The cache this call appends the new tokens' K/V to, if any.
    KvCache *appendTo =
        !op.cross && op.cached && (in.mode == Mode::Step || in.fillCache)
            ? in.selfCache
            : nullptr;
    std::optional<CacheAppendArgs> append;
    if (op.fusedCacheAppend) {
      if (Status s =
              cacheAppendArgs(place, op, in, ws, appendTo, layer, append);
          !s)
        return s;
    }

    // Projections: fused [t][q + 2kv] or query [t][q] and, for self layers,
    // key/value [t][2kv] (cross layers' K/V come from memory or the cache).
    const int64_t width = op.fusedProjections ? q + 2 * kv : q;
    float *projected = place.activation(ws.projected, t * width);
    if (!place.status)
      return place.status;
    if (Status s =
            linear(device, op.query, input, t, dModel, w.query, w.queryBias,
                   ropePositions, nullptr, width, projected, false,
                   op.fusedProjections && append ? &*append : nullptr);
        !s)
      return s;
    // K and V rows: columns of `kvBase`, rows kvStride apart.
    const float *kvBase = projected, *keys = projected + q,
                *values = projected + q + kv;
    int64_t kvStride = width;
    if (!op.fusedProjections && !op.cross) {
      float *kvRows = place.activation(ws.key, t * 2 * kv);
      if (!place.status)
        return place.status;
      if (Status s = linear(device, op.keyValue, input, t, dModel, w.keyValue,
                            w.keyValueBias, ropePositions, nullptr, 2 * kv,
                            kvRows, false, append ? &*append : nullptr);
          !s)
        return s;
      kvBase = kvRows, keys = kvRows, values = kvRows + kv, kvStride = 2 * kv;
    }

    if (in.mode == Mode::Prefill) {
      int64_t kvLen = t;
      if (op.cross) {
        if (!in.memory)
          return invalid("layer " + op.name + " needs the encoder output");
        kvLen = in.memoryLength;
        float *kvRows = place.activation(ws.key, kvLen * 2 * kv);
        if (!place.status)
          return place.status;
        std::optional<CacheAppendArgs> noCache;
        if (op.fusedCacheAppend) // no cache here: nothing stored
          noCache = noCacheAppend(op, ws, kvLen);
        if (Status s =
                linear(device, op.keyValue, in.memory, kvLen, dModel,
                       w.keyValue, w.keyValueBias, nullptr, nullptr, 2 * kv,
                       kvRows, false, noCache ? &*noCache : nullptr);
            !s)
          return s;
        kvBase = kvRows, keys = kvRows, values = kvRows + kv, kvStride = 2 * kv;
      }
      if (appendTo && !op.fusedCacheAppend)
        shadows::hostReads(kvBase); // the cache is written from the host
      if (appendTo && !op.fusedCacheAppend)
        for (int64_t token = 0; token < t; token++)
          if (Status s = in.selfCache->write(
                  in.selfSequences[0], layer, int(token), 1,
                  keys + token * kvStride, values + token * kvStride);
              !s)
            return s;
      if (device) { // dense copies: device kernels take whole allocations
        float *keyRows = place.activation(ws.keyRows, kvLen * kv);
        float *valueRows = place.activation(ws.valueRows, kvLen * kv);
        Status s = place.status;
        if (s)
          s = place.copyRows(kvBase, keys - kvBase, kvStride, keyRows, kv,
                             kvLen);
        if (s)
          s = place.copyRows(kvBase, values - kvBase, kvStride, valueRows, kv,
                             kvLen);
        if (!s)
          return s;
        keys = keyRows, values = valueRows, kvStride = kv;
      }
      BufferView qv = headsView(projected, t, hq, hd, width);
      BufferView kview = headsView(keys, kvLen, hkv, hd, kvStride);
      BufferView vview = headsView(values, kvLen, hkv, hd, kvStride);
      BufferView out = headsView(attention, t, hq, hd, q);
      std::vector<KernelArg> args = {{"query", &qv},
                                     {"key", &kview},
                                     {"value", &vview},
                                     {"output", &out}};
      // One unpadded sequence: all its keys are real.
      const int32_t keyLength = int32_t(kvLen);
      BufferView lengths(&keyLength, int32Type(), {{1, 1}});
      if (op.keyPadding)
        args.push_back({"key_lengths", &lengths});
      return callKernel(op.prefill, args, device);
    }

    // Step: append this token's K/V to the self cache, then decode.
    const KvCache *cache = op.cross ? in.crossCache : in.selfCache;
    const SequenceId *sequences =
        op.cross ? in.crossSequences : in.selfSequences;
    if (appendTo && !op.fusedCacheAppend)
      shadows::hostReads(kvBase); // the cache is written from the host
    if (appendTo && !op.fusedCacheAppend)
      for (int64_t b = 0; b < t; b++)
        if (Status s =
                in.selfCache->write(sequences[b], layer, in.positions[b], 1,
                                    keys + b * kvStride, values + b * kvStride);
            !s)
          return s;
    // The decode kernel reads a dense query.
    float *query = place.activation(ws.query, t * q);
    if (!place.status)
      return place.status;
    if (Status s = place.copyRows(projected, 0, width, query, q, t); !s)
      return s;
    if (op.cross && in.trace && layer == in.lastCrossLayer) {
      shadows::hostReads(query); // the trace is computed on the host
      if (Status s =
              traceWeights(op, *cache, sequences, query, t, layer, *in.trace);
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
      lengths[b] = cache->length(sequences[b]);
    }
    const KvCacheConfig &c = cache->config();
    if (Status s = placeCache(place, *cache, layer); !s)
      return s;
    halide_type_t element = halideType(c.dtype);
    BufferView qv(query, float32Type(), {{hd, 1}, {hq, hd}, {1, q}, {t, q}});
    BufferView keyPages(
        cache->keyPages(layer), element,
        {{hd, 1}, {hkv, hd}, {c.pageSize, kv}, {c.numPages, c.pageSize * kv}});
    BufferView valuePages(
        cache->valuePages(layer), element,
        {{hd, 1}, {hkv, hd}, {c.pageSize, kv}, {c.numPages, c.pageSize * kv}});
    BufferView blockTable(table, int32Type(),
                          {{int64_t(maxPages), 1}, {t, int64_t(maxPages)}});
    BufferView seqLens(lengths, int32Type(), {{t, 1}});
    BufferView out(attention, float32Type(),
                   {{hd, 1}, {hq, hd}, {1, q}, {t, q}});
    std::vector<KernelArg> args = {
        {"query", &qv},        {"key_pages", &keyPages},
        {"value_pages", &valuePages}, {"block_table", &blockTable},
        {"seq_lens", &seqLens}, {"output", &out}};
    // I8: and the scale of every row.
    BufferView keyScales(
        cache->keyScales(layer), float32Type(),
        {{hkv, 1}, {c.pageSize, hkv}, {c.numPages, c.pageSize * hkv}});
    BufferView valueScales(
        cache->valueScales(layer), float32Type(),
        {{hkv, 1}, {c.pageSize, hkv}, {c.numPages, c.pageSize * hkv}});
    if (c.dtype == DType::I8) {
      args.push_back({"key_scales", &keyScales});
      args.push_back({"value_scales", &valueScales});
    }
    return callKernel(op.decode, args, device);
  }
};

namespace {
Status checkTokens(const int32_t *tokens, int count, int vocabulary,
                   const char *what) {
  if (!tokens || count < 1)
    return invalid(std::string(what) + ": no tokens");
  for (int i = 0; i < count; i++)
    if (tokens[i] < 0 || tokens[i] >= vocabulary)
      return invalid(std::string(what) + ": token id " +
                     std::to_string(tokens[i]) + " at index " +
                     std::to_string(i) + " is outside the vocabulary [0, " +
                     std::to_string(vocabulary) + ")");
  return Status::ok();
}

int embeddingPositions(const ModelPlan &plan, bool decoder) {
  for (const PlanOp &op : plan.ops)
    if (op.kind == OpKind::Embedding && (op.stack == "encoder") != decoder)
      return op.positions == "learned" ? op.maxPositions : 0;
  return 0;
}
} // namespace

Workspace::~Workspace() {
  for (const std::vector<float> *v :
       {&x, &residual, &normed, &attention, &hidden, &query, &keyRows,
        &valueRows, &lastRow, &crossRows})
    shadows::forget(v->data());
  shadows::forget(projected.data());
  shadows::forget(key.data());
}

Status Model::encode(const int32_t *tokens, int length,
                     std::vector<float> &memory, Workspace &ws) const {
  if (Status s = checkTokens(tokens, length, sourceVocabulary(), "encode"); !s)
    return s;
  if (int max = embeddingPositions(plan_, false); max && length > max)
    return invalid("encode: " + std::to_string(length) + " tokens exceed the " +
                   std::to_string(max) + " learned positions");
  std::vector<int32_t> positions(length);
  for (int i = 0; i < length; i++)
    positions[i] = i;
  ModelRunner::Inputs in{Mode::Prefill, length, tokens, positions.data()};
  const float *output = nullptr;
  if (Status s = ModelRunner::run(*this, false, in, ws, nullptr, &output); !s)
    return s;
  shadows::hostReads(output);
  memory.assign(output, output + size_t(length) * plan_.dModel);
  return Status::ok();
}

Status Model::storeCrossKeyValues(const float *memory, int length,
                                  KvCache &crossCache, SequenceId sequence,
                                  Workspace &ws) const {
  if (!memory || length < 1)
    return invalid("storeCrossKeyValues: empty encoder output");
  if (crossCache.length(sequence) != 0)
    return invalid("storeCrossKeyValues: sequence " + std::to_string(sequence) +
                   " must exist and be empty");
  if (Status s = crossCache.extend(sequence, length); !s)
    return s;
  // A cross layer whose K/V projection has the cache append fused in (what
  // attnc builds) stores its rows into the cache itself, on the device when
  // the model runs there; otherwise the host converts and writes them.
  Placement place{device_};
  std::vector<int32_t> slots(length);
  if (Status s = crossCache.reserveSlots(sequence, 0, length, slots.data());
      !s) {
    (void)crossCache.truncate(sequence, 0);
    return s;
  }
  int layer = 0;
  for (size_t i = 0; i < plan_.ops.size(); i++) {
    const PlanOp &op = plan_.ops[i];
    if (op.kind != OpKind::Attention || !op.cross)
      continue;
    const Weights &w = *weights_[i];
    const int64_t kv = int64_t(op.kvHeads) * op.headDim;
    // rows [length][2·kv]: each token's K | V.
    float *rows = place.activation(ws.key, size_t(length) * 2 * kv);
    Status s = place.status;
    std::optional<CacheAppendArgs> append;
    if (s && op.fusedCacheAppend) {
      s = placeCache(place, crossCache, layer);
      append = appendTo(crossCache, layer, slots.data());
    }
    if (s)
      s = linear(device_, op.keyValue, memory, length, plan_.dModel, w.keyValue,
                 w.keyValueBias, nullptr, nullptr, 2 * kv, rows, false,
                 append ? &*append : nullptr);
    if (s && !op.fusedCacheAppend) {
      shadows::hostReads(rows);
      float *keys = grow(ws.crossRows, size_t(length) * 2 * kv);
      float *values = keys + size_t(length) * kv;
      for (int64_t token = 0; token < length; token++) {
        std::memcpy(keys + token * kv, rows + token * 2 * kv, kv * 4);
        std::memcpy(values + token * kv, rows + token * 2 * kv + kv, kv * 4);
      }
      s = crossCache.write(sequence, layer, 0, length, keys, values);
    }
    layer++;
    if (!s) {
      (void)crossCache.truncate(sequence, 0);
      return s;
    }
  }
  return Status::ok();
}

Status Model::decodeStep(const SequenceId *selfSequences,
                         const SequenceId *crossSequences,
                         const int32_t *tokens, int batch, KvCache &selfCache,
                         const KvCache *crossCache, float *logits,
                         Workspace &ws, CrossAttentionTrace *trace,
                         int32_t *greedyTokens) const {
  if (batch < 1 || !selfSequences || !logits)
    return invalid("decodeStep: empty batch");
  if (Status s = checkTokens(tokens, batch, targetVocabulary(), "decodeStep");
      !s)
    return s;
  KvCacheConfig crossConfig;
  (void)crossCacheConfig(1, crossConfig);
  if (crossConfig.numLayers > 0) {
    if (!crossCache || !crossSequences)
      return invalid("decodeStep: the model cross-attends; give the cross "
                     "cache and its sequences");
    for (int b = 0; b < batch; b++)
      if (crossCache->length(crossSequences[b]) < 1)
        return invalid("decodeStep: cross sequence " +
                       std::to_string(crossSequences[b]) +
                       " holds no encoder output");
  }
  std::set<SequenceId> distinct(selfSequences, selfSequences + batch);
  if (int(distinct.size()) != batch)
    return invalid("decodeStep: a sequence appears twice in the batch");
  std::vector<int32_t> positions(batch);
  for (int b = 0; b < batch; b++) {
    positions[b] = selfCache.length(selfSequences[b]);
    if (positions[b] < 0)
      return invalid("decodeStep: unknown sequence " +
                     std::to_string(selfSequences[b]));
  }
  if (int max = embeddingPositions(plan_, true))
    for (int b = 0; b < batch; b++)
      if (positions[b] >= max)
        return Status(StatusCode::CapacityExceeded,
                      "decodeStep: position " + std::to_string(positions[b]) +
                          " is past the " + std::to_string(max) +
                          " learned positions");
  // Grow every sequence by one token; undo all of it on any failure.
  auto rollBack = [&](int count) {
    for (int b = 0; b < count; b++)
      (void)selfCache.truncate(selfSequences[b], positions[b]);
  };
  for (int b = 0; b < batch; b++)
    if (Status s = selfCache.extend(selfSequences[b], 1); !s) {
      rollBack(b);
      return s;
    }
  ModelRunner::Inputs in{Mode::Step, batch, tokens, positions.data()};
  in.selfCache = &selfCache;
  in.crossCache = crossCache;
  in.selfSequences = selfSequences;
  in.crossSequences = crossSequences;
  in.trace = trace;
  in.greedy = greedyTokens;
  in.lastCrossLayer = crossConfig.numLayers - 1;
  Status s = ModelRunner::run(*this, true, in, ws, logits, nullptr);
  if (!s)
    rollBack(batch);
  return s;
}

Status Model::prefill(const int32_t *tokens, int length, KvCache &selfCache,
                      SequenceId sequence, float *logits, Workspace &ws,
                      int32_t *greedyToken) const {
  if (!logits)
    return invalid("prefill: no logits buffer");
  if (Status s = checkTokens(tokens, length, targetVocabulary(), "prefill"); !s)
    return s;
  KvCacheConfig crossConfig;
  (void)crossCacheConfig(1, crossConfig);
  if (crossConfig.numLayers > 0)
    return invalid("prefill: the model cross-attends; decode it step by step");
  if (selfCache.length(sequence) != 0)
    return invalid("prefill: sequence " + std::to_string(sequence) +
                   " must exist and be empty");
  if (int max = embeddingPositions(plan_, true); max && length > max)
    return Status(StatusCode::CapacityExceeded,
                  "prefill: " + std::to_string(length) + " tokens exceed the " +
                      std::to_string(max) + " learned positions");
  if (Status s = selfCache.extend(sequence, length); !s)
    return s;
  std::vector<int32_t> positions(length);
  for (int i = 0; i < length; i++)
    positions[i] = i;
  ModelRunner::Inputs in{Mode::Prefill, length, tokens, positions.data()};
  in.selfCache = &selfCache;
  in.selfSequences = &sequence;
  in.fillCache = true;
  in.greedy = greedyToken;
  Status s = ModelRunner::run(*this, true, in, ws, logits, nullptr);
  if (!s)
    (void)selfCache.truncate(sequence, 0);
  return s;
}

Status Model::decodeWithoutCache(const int32_t *tokens, int length,
                                 const float *memory, int memoryLength,
                                 float *logits, Workspace &ws) const {
  if (!logits)
    return invalid("decodeWithoutCache: no logits buffer");
  if (Status s =
          checkTokens(tokens, length, targetVocabulary(), "decodeWithoutCache");
      !s)
    return s;
  std::vector<int32_t> positions(length);
  for (int i = 0; i < length; i++)
    positions[i] = i;
  ModelRunner::Inputs in{Mode::Prefill, length, tokens, positions.data()};
  in.memory = memory;
  in.memoryLength = memoryLength;
  return ModelRunner::run(*this, true, in, ws, logits, nullptr);
}

} // namespace attn::runtime
