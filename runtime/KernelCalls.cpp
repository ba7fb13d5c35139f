//===- KernelCalls.cpp - each kernel family called on plain arrays --------===//

#include "KernelCalls.h"

#include <cstring>

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
  case DType::MXFP4:
    return {halide_type_uint, 16, 1};
  }
  return float32Type();
}

namespace {
/// The argument `name`, a [tokens][heads][D] view of `rows` (rows `stride`
/// floats apart).
KernelArg heads(const char *name, RowsView rows, int64_t heads,
                int64_t headDim) {
  return {name,
          rows.data,
          float32Type(),
          {{headDim, 1},
           {heads, headDim},
           {rows.count, rows.stride},
           {1, rows.count * rows.stride}}};
}
} // namespace

/// A fused append into `layer` of `cache` at `slots`.
CacheAppendArgs appendTo(KvCache &cache, int layer, const int32_t *slots) {
  const KvCacheConfig &c = cache.config();
  const halide_type_t element = halideType(c.dtype);
  const KvCache::LayerPools pools = cache.pools(layer);
  CacheAppendArgs append{slots,
                         pools.keys,
                         pools.values,
                         element,
                         int64_t(cache.poolPages(layer)) * c.pageSize,
                         c.numKvHeads,
                         c.headDim};
  append.keyScales = pools.keyScales;
  append.valueScales = pools.valueScales;
  return append;
}

/// A fused-append kernel run with no cache to fill (prefill without a
/// cache): `tokens` slots of -1 and a one-slot pool nothing is stored in.
CacheAppendArgs noCacheAppend(const PlanOp &op, int64_t tokens,
                              IndexRows &slots, Activations &pool) {
  std::fill(slots.data(), slots.data() + tokens, -1);
  CacheAppendArgs append{
      slots.data(), pool.placed(), pool.placed(), halideType(op.cacheType), 1,
      op.kvHeads,   op.headDim};
  if (op.cacheType == DType::I8) // [1][kvHeads] scales fit in it too
    append.keyScales = append.valueScales = pool.placed();
  return append;
}

/// out [tokens][outF] = act(in [tokens][inF] · W + b) (+ residual)
/// (+ RoPE by `positions` when the kernel has it) (+ K/V into the cache)
/// (+ best [tokens], each row's argmax, for a kernel with the argmax).
Status linear(const DeviceApi *device, const LinearCall &call) {
  const Kernel &kernel = call.kernel;
  const WeightMatrix &w = call.weights;
  const int64_t tokens = call.tokens, inF = call.inputs, outF = call.outputs;
  // The grouped expert variant reads the whole stack: `stacked` experts.
  const int64_t stacked = call.experts && outF > 0 ? w.out / outF : 1;
  if (w.in != inF || w.out != stacked * outF)
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + ": weights of " +
                      std::to_string(w.in) + " x " + std::to_string(w.out) +
                      " for a " + std::to_string(inF) + " -> " +
                      std::to_string(outF) + " projection");
  if (call.experts && !kernel.grouped)
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + " has no grouped expert variant");
  // A gated input holds [gate | up] halves of inF each.
  const int64_t width = call.gatedInput ? 2 * inF : inF;
  // W: [panels][rows][words] (Model::Weights; bf16 pairs as uint32 words,
  // int8 with inputs in pairs).
  const halide_type_t weightType =
      w.pairs() ? halide_type_t{halide_type_uint, 32, 1} : halideType(w.type);
  std::vector<KernelArg> args = {
      {"input", call.input, float32Type(), {{width, 1}, {tokens, width}}},
      {"weight",
       w.placed(),
       weightType,
       {{w.words(), 1},
        {w.rows(), w.words()},
        {w.panels(), w.rows() * w.words()}}},
      {"output", call.output, float32Type(), {{outF, 1}, {tokens, outF}}}};
  // int8: a scale per output feature, or as int4's; int4: [panels][groups]
  // [16], as are its zero points.
  const bool perGroup =
      w.type == DType::I4 || w.type == DType::MXFP4 || w.group > 0;
  const int64_t groups = perGroup ? w.int4Layout().groups() : 0;
  const BufferShape groupShape = {
      {kInt4Panel, 1}, {groups, kInt4Panel}, {w.panels(), groups * kInt4Panel}};
  if (call.experts)
    args.push_back({"expert_index", call.experts, int32Type(), {{tokens, 1}}});
  if (w.type == DType::I8 && !w.group)
    args.push_back(
        {"weight_scales", w.scales.placed(), float32Type(), {{w.out, 1}}});
  if (w.type == DType::I4 || (w.type == DType::I8 && w.group))
    args.push_back(
        {"weight_scales", w.scales.placed(), float32Type(), groupShape});
  if (w.type == DType::MXFP4) // the E8M0 bytes
    args.push_back({"weight_scales", w.exponents.placed(),
                    halide_type_t{halide_type_uint, 8, 1}, groupShape});
  if (!w.zeros.empty())
    args.push_back({"weight_zeros", w.zeros.placed(),
                    halide_type_t{halide_type_uint, 8, 1}, groupShape});
  if (!w.mins.empty())
    args.push_back({"weight_mins", w.mins.placed(), float32Type(), groupShape});
  if (!call.bias.empty())
    args.push_back({"bias", call.bias.placed(), float32Type(), {{w.out, 1}}});
  if (call.positions)
    args.push_back({"positions", call.positions, int32Type(), {{tokens, 1}}});
  if (call.qkNorm)
    args.push_back({"qk_norm_weight",
                    call.qkNorm->placed(),
                    float32Type(),
                    {{int64_t(call.qkNorm->size()), 1}}});
  if (call.residual.data)
    args.push_back({"residual",
                    call.residual,
                    float32Type(),
                    {{outF, 1}, {tokens, outF}}});
  if (const CacheAppendArgs *append = call.append) {
    // Pools [poolSlots][kvHeads][headDim], int8 row scales
    // [poolSlots][kvHeads].
    const int64_t kv = append->kvHeads * append->headDim;
    const BufferShape pool = {{append->headDim, 1},
                              {append->kvHeads, append->headDim},
                              {append->poolSlots, kv}},
                      scales = {{append->kvHeads, 1},
                                {append->poolSlots, append->kvHeads}};
    args.push_back({"cache_slots", append->slots, int32Type(), {{tokens, 1}}});
    args.push_back({"key_cache", append->keyPool, append->element, pool});
    args.push_back({"value_cache", append->valuePool, append->element, pool});
    if (append->keyScales.data) {
      args.push_back({"key_scales", append->keyScales, float32Type(), scales});
      args.push_back(
          {"value_scales", append->valueScales, float32Type(), scales});
    }
  }
  if (call.best)
    args.push_back({"best_token", call.best, int32Type(), {{tokens, 1}}});
  if (call.experts) {
    for (int64_t m = 0; m < tokens; m++)
      if (call.experts[m] < 0 || call.experts[m] >= stacked)
        return Status(StatusCode::InvalidArgument,
                      "kernel " + kernel.name + ": expert " +
                          std::to_string(call.experts[m]) + " of " +
                          std::to_string(stacked));
    Kernel grouped{kernel.name + "_experts", kernel.grouped,
                   kernel.groupedMetadata};
    return callKernel(grouped, args, device);
  }
  if (tokens <= 2 && kernel.fewTokens) {
    Kernel gemv{kernel.name + "_gemv", kernel.fewTokens,
                kernel.fewTokensMetadata};
    return callKernel(gemv, args, device);
  }
  return callKernel(kernel, args, device);
}

Status embed(const DeviceApi *device, const PlanOp &op, const Floats &rows,
             const Floats &positionRows, TokenRows tokens, Placed<float> out) {
  const int64_t t = tokens.count, d = int64_t(rows.size()) / op.vocabSize;
  std::vector<KernelArg> args = {
      {"tokens", tokens.ids, int32Type(), {{t, 1}}},
      {"positions", tokens.positions, int32Type(), {{t, 1}}},
      {"table", rows.placed(), float32Type(), {{d, 1}, {op.vocabSize, d}}},
      {"output", out, float32Type(), {{d, 1}, {t, d}}}};
  if (!positionRows.empty())
    args.push_back({"position_table",
                    positionRows.placed(),
                    float32Type(),
                    {{d, 1}, {op.maxPositions + op.positionOffset, d}}});
  return callKernel(op.kernel, args, device);
}

Status norm(const DeviceApi *device, const PlanOp &op, const Floats &scale,
            const Floats &shift, RowsView in, Placed<float> out,
            Placed<const float> residual) {
  const int64_t d = int64_t(scale.size()), t = in.count;
  if (in.stride != d)
    return Status(StatusCode::InvalidArgument,
                  "norm " + op.name + ": rows of " + std::to_string(in.stride) +
                      " floats for a weight of " + std::to_string(d));
  std::vector<KernelArg> args = {
      {"input", in.data, float32Type(), {{d, 1}, {t, d}}},
      {"weight", scale.placed(), float32Type(), {{d, 1}}},
      {"output", out, float32Type(), {{d, 1}, {t, d}}}};
  if (op.layerNorm)
    args.push_back({"bias", shift.placed(), float32Type(), {{d, 1}}});
  if (op.residualAdd)
    args.push_back({"residual", residual, float32Type(), {{d, 1}, {t, d}}});
  return callKernel(op.kernel, args, device);
}

Status prefillAttention(const DeviceApi *device, const PlanOp &op,
                        RowsView query, RowsView keys, RowsView values,
                        const Floats &sinks, Placed<float> out) {
  const int64_t hq = op.queryHeads, hkv = op.kvHeads, hd = op.headDim;
  // One unpadded sequence: all its keys are real.
  const int32_t keyLength = int32_t(keys.count);
  std::vector<KernelArg> args = {
      heads("query", query, hq, hd), heads("key", keys, hkv, hd),
      heads("value", values, hkv, hd),
      heads("output", {out, hq * hd, query.count}, hq, hd)};
  if (op.keyPadding)
    args.push_back({"key_lengths", &keyLength, int32Type(), {{1, 1}}});
  if (op.sinks)
    args.push_back({"sinks", sinks.placed(), float32Type(), {{hq, 1}}});
  return callKernel(op.prefill, args, device);
}

Status decodeAttention(const DeviceApi *device, const PlanOp &op,
                       const KvCache &cache, int layer,
                       const DecodeBatch &batch, const Floats &sinks,
                       Placed<float> out) {
  const int64_t hq = op.queryHeads, hkv = op.kvHeads, hd = op.headDim,
                q = hq * hd, kv = hkv * hd, t = batch.batch,
                maxPages = batch.maxPages;
  const KvCacheConfig &c = cache.config();
  const halide_type_t element = halideType(c.dtype);
  const KvCache::LayerPools pools = cache.pools(layer);
  // Pages [poolPages][pageSize][Hkv][D]; int8 row scales
  // [poolPages][pageSize][Hkv].
  const int64_t poolPages = cache.poolPages(layer);
  const BufferShape rows = {{hd, 1}, {hq, hd}, {1, q}, {t, q}},
                    pages = {{hd, 1},
                             {hkv, hd},
                             {c.pageSize, kv},
                             {poolPages, c.pageSize * kv}},
                    scales = {{hkv, 1},
                              {c.pageSize, hkv},
                              {poolPages, c.pageSize * hkv}};
  std::vector<KernelArg> args = {
      {"query", batch.query, float32Type(), rows},
      {"key_pages", pools.keys, element, pages},
      {"value_pages", pools.values, element, pages},
      {"block_table",
       batch.blockTable,
       int32Type(),
       {{maxPages, 1}, {t, maxPages}}},
      {"seq_lens", batch.lengths, int32Type(), {{t, 1}}},
      {"output", out, float32Type(), rows}};
  if (c.dtype == DType::I8) {
    args.push_back({"key_scales", pools.keyScales, float32Type(), scales});
    args.push_back({"value_scales", pools.valueScales, float32Type(), scales});
  }
  if (op.sinks)
    args.push_back({"sinks", sinks.placed(), float32Type(), {{hq, 1}}});
  return callKernel(op.decode, args, device);
}

Status copyRows(const DeviceApi *device, RowsView from, int64_t offset,
                int64_t width, Placed<float> to) {
  const int64_t rows = from.count;
  if (!device) {
    for (int64_t r = 0; r < rows; r++)
      std::memcpy(to.data + r * width,
                  from.data.data + offset + r * from.stride,
                  width * sizeof(float));
    return Status::ok();
  }
  if (!from.data.copy || !to.copy)
    return Status(StatusCode::InvalidArgument,
                  "a device copy between buffers without device copies");
  // `to` holds columns [offset, offset + width) of `from`'s coordinates:
  // Halide copies the region of `to` found in `from`.
  halide_dimension_t fromDims[2] = {
      {0, int32_t(offset + width), 1, 0},
      {0, int32_t(rows), int32_t(from.stride), 0}};
  halide_dimension_t toDims[2] = {{int32_t(offset), int32_t(width), 1, 0},
                                  {0, int32_t(rows), int32_t(width), 0}};
  halide_buffer_t source{}, target{};
  source.host =
      reinterpret_cast<uint8_t *>(const_cast<float *>(from.data.data));
  target.host = reinterpret_cast<uint8_t *>(to.data);
  source.type = target.type = float32Type();
  source.dimensions = target.dimensions = 2;
  source.dim = fromDims;
  target.dim = toDims;
  return copyOnDevice(*device, *from.data.copy, source, *to.copy, target);
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
