//===- KernelCalls.cpp - each kernel family called on plain arrays --------===//

#include "KernelCalls.h"

#include "DevicePlacement.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace attn::runtime {

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
  case DType::I4: // four to a uint16 word
    return {halide_type_uint, 16, 1};
  }
  return float32Type();
}

namespace {
/// A [tokens][heads][D] view with rows `rowStride` floats apart.
BufferView headsView(const float *data, int64_t tokens, int64_t heads,
                     int64_t headDim, int64_t rowStride) {
  return BufferView(data, float32Type(),
                    {{headDim, 1},
                     {heads, headDim},
                     {tokens, rowStride},
                     {1, tokens * rowStride}});
}

} // namespace

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

/// out [tokens][outF] = act(in [tokens][inF] · W + b) (+ residual)
/// (+ RoPE by `positions` when the kernel has it) (+ K/V into the cache)
/// (+ best [tokens], each row's argmax, for a kernel with the argmax).
Status linear(const DeviceApi *device, const LinearCall &call) {
  const Kernel &kernel = call.kernel;
  const WeightMatrix &w = call.weights;
  const Floats &b = call.bias;
  const float *in = call.input, *residual = call.residual;
  float *out = call.output;
  const int64_t tokens = call.tokens, inF = call.inputs, outF = call.outputs;
  const int32_t *positions = call.positions;
  const CacheAppendArgs *append = call.append;
  const bool gatedInput = call.gatedInput;
  int32_t *best = call.best;
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
  const halide_type_t weightType =
      w.pairs() ? halide_type_t{halide_type_uint, 32, 1} : halideType(w.type);
  BufferView weight(w.data(), weightType,
                    {{w.words(), 1},
                     {w.rows(), w.words()},
                     {w.panels(), w.rows() * w.words()}});
  // int8: [out]; int4: [panels][groups][16], as are its zero points.
  const int64_t groups = w.type == DType::I4 ? w.int4Layout().groups() : 0;
  BufferView scales =
      w.type == DType::I4
          ? BufferView(w.scales.data(), float32Type(),
                       {{kInt4Panel, 1},
                        {groups, kInt4Panel},
                        {w.panels(), groups * kInt4Panel}})
          : BufferView(w.scales.data(), float32Type(), {{outF, 1}});
  BufferView zeros(w.zeros.data(), halide_type_t{halide_type_uint, 8, 1},
                   {{kInt4Panel, 1},
                    {groups, kInt4Panel},
                    {w.panels(), groups * kInt4Panel}});
  BufferView bias(b.data(), float32Type(), {{outF, 1}});
  BufferView position(positions, int32Type(), {{tokens, 1}});
  BufferView res(residual, float32Type(), {{outF, 1}, {tokens, outF}});
  BufferView output(out, float32Type(), {{outF, 1}, {tokens, outF}});
  std::vector<KernelArg> args = {
      {"input", &input}, {"weight", &weight}, {"output", &output}};
  if (w.type == DType::I8 || w.type == DType::I4)
    args.push_back({"weight_scales", &scales});
  if (!w.zeros.empty())
    args.push_back({"weight_zeros", &zeros});
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

Status embed(const DeviceApi *device, const PlanOp &op, const Floats &rows,
             const Floats &positionRows, TokenRows tokens, float *out) {
  const int64_t t = tokens.count, d = int64_t(rows.size()) / op.vocabSize;
  BufferView idView(tokens.ids, int32Type(), {{t, 1}});
  BufferView positionView(tokens.positions, int32Type(), {{t, 1}});
  BufferView table(rows.data(), float32Type(), {{d, 1}, {op.vocabSize, d}});
  BufferView positionTable(positionRows.data(), float32Type(),
                           {{d, 1}, {op.maxPositions + op.positionOffset, d}});
  BufferView output(out, float32Type(), {{d, 1}, {t, d}});
  std::vector<KernelArg> args = {{"tokens", &idView},
                                 {"positions", &positionView},
                                 {"table", &table},
                                 {"output", &output}};
  if (!positionRows.empty())
    args.push_back({"position_table", &positionTable});
  return callKernel(op.kernel, args, device);
}

Status norm(const DeviceApi *device, const PlanOp &op, const Floats &scale,
            const Floats &shift, RowsView in, float *out) {
  const int64_t d = int64_t(scale.size()), t = in.count;
  if (in.stride != d)
    return Status(StatusCode::InvalidArgument,
                  "norm " + op.name + ": rows of " + std::to_string(in.stride) +
                      " floats for a weight of " + std::to_string(d));
  BufferView input(in.data, float32Type(), {{d, 1}, {t, d}});
  BufferView weight(scale.data(), float32Type(), {{d, 1}});
  BufferView bias(shift.data(), float32Type(), {{d, 1}});
  BufferView output(out, float32Type(), {{d, 1}, {t, d}});
  std::vector<KernelArg> args = {
      {"input", &input}, {"weight", &weight}, {"output", &output}};
  if (op.layerNorm)
    args.push_back({"bias", &bias});
  return callKernel(op.kernel, args, device);
}

Status prefillAttention(const DeviceApi *device, const PlanOp &op,
                        RowsView query, RowsView keys, RowsView values,
                        float *out) {
  const int64_t hq = op.queryHeads, hkv = op.kvHeads, hd = op.headDim,
                t = query.count, kvLen = keys.count;
  BufferView qv = headsView(query.data, t, hq, hd, query.stride);
  BufferView kview = headsView(keys.data, kvLen, hkv, hd, keys.stride);
  BufferView vview = headsView(values.data, kvLen, hkv, hd, values.stride);
  BufferView output = headsView(out, t, hq, hd, hq * hd);
  std::vector<KernelArg> args = {
      {"query", &qv}, {"key", &kview}, {"value", &vview}, {"output", &output}};
  // One unpadded sequence: all its keys are real.
  const int32_t keyLength = int32_t(kvLen);
  BufferView lengths(&keyLength, int32Type(), {{1, 1}});
  if (op.keyPadding)
    args.push_back({"key_lengths", &lengths});
  return callKernel(op.prefill, args, device);
}

Status decodeAttention(const DeviceApi *device, const PlanOp &op,
                       const KvCache &cache, int layer,
                       const DecodeBatch &batch, float *out) {
  const int64_t hq = op.queryHeads, hkv = op.kvHeads, hd = op.headDim,
                q = hq * hd, kv = hkv * hd, t = batch.batch,
                maxPages = batch.maxPages;
  const float *query = batch.query;
  const int32_t *table = batch.blockTable, *lengths = batch.lengths;
  const KvCacheConfig &c = cache.config();
  halide_type_t element = halideType(c.dtype);
  BufferView qv(query, float32Type(), {{hd, 1}, {hq, hd}, {1, q}, {t, q}});
  BufferView keyPages(
      cache.keyPages(layer), element,
      {{hd, 1}, {hkv, hd}, {c.pageSize, kv}, {c.numPages, c.pageSize * kv}});
  BufferView valuePages(
      cache.valuePages(layer), element,
      {{hd, 1}, {hkv, hd}, {c.pageSize, kv}, {c.numPages, c.pageSize * kv}});
  BufferView blockTable(table, int32Type(), {{maxPages, 1}, {t, maxPages}});
  BufferView seqLens(lengths, int32Type(), {{t, 1}});
  BufferView output(out, float32Type(), {{hd, 1}, {hq, hd}, {1, q}, {t, q}});
  std::vector<KernelArg> args = {{"query", &qv},
                                 {"key_pages", &keyPages},
                                 {"value_pages", &valuePages},
                                 {"block_table", &blockTable},
                                 {"seq_lens", &seqLens},
                                 {"output", &output}};
  // I8: and the scale of every row.
  BufferView keyScales(
      cache.keyScales(layer), float32Type(),
      {{hkv, 1}, {c.pageSize, hkv}, {c.numPages, c.pageSize * hkv}});
  BufferView valueScales(
      cache.valueScales(layer), float32Type(),
      {{hkv, 1}, {c.pageSize, hkv}, {c.numPages, c.pageSize * hkv}});
  if (c.dtype == DType::I8) {
    args.push_back({"key_scales", &keyScales});
    args.push_back({"value_scales", &valueScales});
  }
  return callKernel(op.decode, args, device);
}

/// The lowest index of the largest of `logits` [vocabulary], -1 if one is
/// NaN: what a head kernel's fused argmax computes.
int32_t firstLargest(const float *logits, int vocabulary) {
  for (int i = 0; i < vocabulary; i++)
    if (std::isnan(logits[i]))
      return -1;
  return int32_t(std::max_element(logits, logits + vocabulary) - logits);
}

} // namespace attn::runtime
