//===- ModelCalls.cpp - Model's public calls: encode, prefill, decode -----===//
//
// Each call checks its arguments (token ids in the vocabulary, positions
// within the learned ones, sequences that exist and are distinct), grows the
// KV caches it fills and undoes that on any failure, then runs one forward
// pass (ModelRunner.cpp).
//
//===----------------------------------------------------------------------===//

#include "ContextBuffers.h"
#include "KernelCalls.h"
#include "ModelRunner.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

namespace attn::runtime {

namespace {
Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

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

Status Model::encode(const int32_t *tokens, int length,
                     std::vector<float> &memory,
                     ExecutionContext &context) const {
  if (Status s = checkTokens(tokens, length, sourceVocabulary(), "encode"); !s)
    return s;
  if (int max = embeddingPositions(plan_, false); max && length > max)
    return invalid("encode: " + std::to_string(length) + " tokens exceed the " +
                   std::to_string(max) + " learned positions");
  std::vector<int32_t> positions(length);
  for (int i = 0; i < length; i++)
    positions[i] = i;
  ModelRunner::Inputs in{Mode::Prefill, length, tokens, positions.data()};
  Placed<const float> output;
  if (Status s = ModelRunner::run(*this, false, in, context, nullptr, &output);
      !s)
    return s;
  if (output.copy)
    output.copy->hostReads();
  memory.assign(output.data, output.data + size_t(length) * plan_.dModel);
  return Status::ok();
}

Status Model::storeCrossKeyValues(const float *memory, int length,
                                  KvCache &crossCache, SequenceId sequence,
                                  ExecutionContext &context) const {
  if (!memory || length < 1)
    return invalid("storeCrossKeyValues: empty encoder output");
  if (&context.model_ != this)
    return invalid("storeCrossKeyValues: an execution context made for "
                   "another model");
  ExecutionContext::Buffers &buffers = *context.buffers_;
  if (Status s = buffers.reserve({0, length, 0, 0}); !s)
    return s;
  if (crossCache.length(sequence) != 0)
    return invalid("storeCrossKeyValues: sequence " + std::to_string(sequence) +
                   " must exist and be empty");
  if (Status s = crossCache.extend(sequence, length); !s)
    return s;
  // A cross layer whose K/V projection has the cache append fused in (what
  // attnc builds) stores its rows into the cache itself, on the device when
  // the model runs there; otherwise the host converts and writes them.
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
    ProjectionRows &rows = buffers.attention.keyValue;
    Status s;
    std::optional<CacheAppendArgs> append;
    if (op.fusedCacheAppend) {
      if (device_)
        s = crossCache.placeOn(*device_, layer);
      append = appendTo(crossCache, layer, slots.data());
    }
    if (s) {
      LinearCall call{op.keyValue, w.keyValue,   w.keyValueBias, memory,
                      length,      plan_.dModel, 2 * kv,         rows.placed()};
      call.append = append ? &*append : nullptr;
      s = linear(device_, call);
    }
    if (s && !op.fusedCacheAppend) {
      rows.hostReads();
      float *keys = buffers.crossRows.data();
      float *values = keys + size_t(length) * kv;
      const float *kvRows = rows.data();
      for (int64_t token = 0; token < length; token++) {
        std::memcpy(keys + token * kv, kvRows + token * 2 * kv, kv * 4);
        std::memcpy(values + token * kv, kvRows + token * 2 * kv + kv, kv * 4);
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
                         ExecutionContext &context, CrossAttentionTrace *trace,
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
  Status s = ModelRunner::run(*this, true, in, context, logits, nullptr);
  if (!s)
    rollBack(batch);
  return s;
}

Status Model::prefill(const int32_t *tokens, int length, KvCache &selfCache,
                      SequenceId sequence, float *logits,
                      ExecutionContext &context, int32_t *greedyToken) const {
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
  // The prompt attends over its own K/V: the first query reading the cache
  // is the next token's.
  if (Status s = selfCache.extend(sequence, length, /*firstQuery=*/length); !s)
    return s;
  std::vector<int32_t> positions(length);
  for (int i = 0; i < length; i++)
    positions[i] = i;
  ModelRunner::Inputs in{Mode::Prefill, length, tokens, positions.data()};
  in.selfCache = &selfCache;
  in.selfSequences = &sequence;
  in.fillCache = true;
  const int32_t last = length - 1; // the next token's logits alone
  in.headRows = &last;
  in.headRowCount = 1;
  in.greedy = greedyToken;
  Status s = ModelRunner::run(*this, true, in, context, logits, nullptr);
  if (!s)
    (void)selfCache.truncate(sequence, 0);
  return s;
}

Status Model::append(const SequenceId *sequences, const int32_t *tokens,
                     int rows, KvCache &selfCache, const int32_t *headRows,
                     int headRowCount, float *logits, ExecutionContext &context,
                     int32_t *greedyTokens) const {
  if (rows < 1 || !sequences)
    return invalid("append: no rows");
  if (Status s = checkTokens(tokens, rows, targetVocabulary(), "append"); !s)
    return s;
  KvCacheConfig crossConfig;
  (void)crossCacheConfig(1, crossConfig);
  if (crossConfig.numLayers > 0)
    return invalid("append: the model cross-attends; use decodeStep");
  if (headRowCount < 0 || (headRowCount > 0 && (!headRows || !logits)))
    return invalid("append: head rows without a logits buffer");
  for (int r = 0; r < headRowCount; r++)
    if (headRows[r] < 0 || headRows[r] >= rows ||
        (r > 0 && headRows[r] <= headRows[r - 1]))
      return invalid("append: head rows must ascend within [0, " +
                     std::to_string(rows) + ")");
  // Each row's position: its sequence's length plus the rows of that
  // sequence before it.
  struct Grown {
    SequenceId sequence;
    int before, rows; // length before the call, rows appended
  };
  std::vector<Grown> grown;
  std::vector<int32_t> positions(rows);
  for (int r = 0; r < rows; r++) {
    auto g = std::find_if(grown.begin(), grown.end(), [&](const Grown &g) {
      return g.sequence == sequences[r];
    });
    if (g == grown.end()) {
      int length = selfCache.length(sequences[r]);
      if (length < 0)
        return invalid("append: unknown sequence " +
                       std::to_string(sequences[r]));
      g = grown.insert(grown.end(), {sequences[r], length, 0});
    }
    positions[r] = g->before + g->rows++;
  }
  if (int max = embeddingPositions(plan_, true))
    for (int r = 0; r < rows; r++)
      if (positions[r] >= max)
        return Status(StatusCode::CapacityExceeded,
                      "append: position " + std::to_string(positions[r]) +
                          " is past the " + std::to_string(max) +
                          " learned positions");
  auto rollBack = [&](size_t count) {
    for (size_t g = 0; g < count; g++)
      (void)selfCache.truncate(grown[g].sequence, grown[g].before);
  };
  for (size_t g = 0; g < grown.size(); g++)
    if (Status s = selfCache.extend(grown[g].sequence, grown[g].rows); !s) {
      rollBack(g);
      return s;
    }
  ModelRunner::Inputs in{Mode::Step, rows, tokens, positions.data()};
  in.selfCache = &selfCache;
  in.selfSequences = sequences;
  in.headRows = headRows;
  in.headRowCount = headRowCount;
  in.greedy = headRowCount > 0 ? greedyTokens : nullptr;
  Status s = ModelRunner::run(*this, true, in, context,
                              headRowCount > 0 ? logits : nullptr, nullptr);
  if (!s)
    rollBack(grown.size());
  return s;
}

Status Model::decodeWithoutCache(const int32_t *tokens, int length,
                                 const float *memory, int memoryLength,
                                 float *logits,
                                 ExecutionContext &context) const {
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
  return ModelRunner::run(*this, true, in, context, logits, nullptr);
}

} // namespace attn::runtime
