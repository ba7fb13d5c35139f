//===- Model.cpp - loading a generated model's weights --------------------===//
//
// Maps each op of the plan to its checkpoint tensors (per naming
// convention), checks the file holds exactly those, and lays them out for
// the kernels. Running the model is ModelRunner.cpp.
//
//===----------------------------------------------------------------------===//

#include "ModelWeights.h"

#include <cstring>

namespace attn::runtime {

const char *name(WeightNaming naming) {
  switch (naming) {
  case WeightNaming::Bart:
    return "bart";
  }
  return "?";
}

namespace {
/// Where an op's tensors live under the Bart convention. `block` is the
/// op's block within its stack; `next` the op after it (a norm is named
/// after what it feeds).
std::string bartPrefix(const PlanOp &op, int block) {
  std::string stack = op.stack.empty() ? "decoder" : op.stack;
  return "model." + stack + ".layers." + std::to_string(block) + ".";
}

/// The tensors of every op, with their shapes, in the plan's order.
std::vector<OpTensorNames> tensorNames(const ModelPlan &plan) {
  std::vector<OpTensorNames> names(plan.ops.size());
  std::map<std::string, int> blockOfStack; // FFNs seen per stack
  const int64_t d = plan.dModel;
  for (size_t i = 0; i < plan.ops.size(); i++) {
    const PlanOp &op = plan.ops[i];
    OpTensorNames &n = names[i];
    std::string stack = op.stack.empty() ? "decoder" : op.stack;
    int block = blockOfStack[stack];
    std::string prefix = bartPrefix(op, block);
    switch (op.kind) {
    case OpKind::Embedding:
      n.add("table", "model." + stack + ".embed_tokens.weight",
            {op.vocabSize, d});
      if (op.positions == "learned")
        n.add("positions", "model." + stack + ".embed_positions.weight",
              {op.maxPositions, d});
      break;
    case OpKind::Norm: {
      const PlanOp *next = i + 1 < plan.ops.size() ? &plan.ops[i + 1] : nullptr;
      bool sameStack = next && next->stack == op.stack;
      std::string base;
      if (sameStack && next->kind == OpKind::Attention)
        base = prefix + (next->cross ? "encoder_attn_layer_norm"
                                     : "self_attn_layer_norm");
      else if (sameStack && next->kind == OpKind::Ffn)
        base = prefix + "final_layer_norm";
      else
        base = "model." + stack + ".layer_norm";
      n.add("weight", base + ".weight", {d});
      if (op.layerNorm)
        n.add("bias", base + ".bias", {d});
      break;
    }
    case OpKind::Attention: {
      std::string base = prefix + (op.cross ? "encoder_attn." : "self_attn.");
      const int64_t q = int64_t(op.queryHeads) * op.headDim,
                    kv = int64_t(op.kvHeads) * op.headDim;
      for (auto [role, proj, rows, cols] :
           {std::tuple{"q", "q_proj", q, d}, std::tuple{"k", "k_proj", kv, d},
            std::tuple{"v", "v_proj", kv, d},
            std::tuple{"out", "out_proj", d, q}}) {
        n.add(std::string(role) + ".weight", base + proj + ".weight",
              {rows, cols});
        if (op.bias)
          n.add(std::string(role) + ".bias", base + proj + ".bias", {rows});
      }
      break;
    }
    case OpKind::Ffn:
      n.add("fc1.weight", prefix + "fc1.weight", {op.intermediateSize, d});
      n.add("fc2.weight", prefix + "fc2.weight", {d, op.intermediateSize});
      if (op.bias) {
        n.add("fc1.bias", prefix + "fc1.bias", {op.intermediateSize});
        n.add("fc2.bias", prefix + "fc2.bias", {d});
      }
      blockOfStack[stack]++;
      break;
    case OpKind::OutputHead:
      n.add("weight", "lm_head.weight", {op.vocabSize, d});
      if (op.bias)
        n.add("bias", "lm_head.bias", {op.vocabSize});
      break;
    }
  }
  return names;
}

/// A tensor's floats (the mapping guarantees no alignment: copied out).
std::vector<float> copyOut(const TensorView &tensor) {
  std::vector<float> values(tensor.bytes / sizeof(float));
  std::memcpy(values.data(), tensor.data, tensor.bytes);
  return values;
}

/// Writes W [out][in] (PyTorch's layout) transposed into columns
/// [column, column + out) of `dst` [in][width].
void appendTransposed(std::vector<float> &dst, int64_t width, int64_t column,
                      const std::vector<float> &w, int64_t out, int64_t in) {
  dst.resize(size_t(in * width));
  for (int64_t o = 0; o < out; o++)
    for (int64_t k = 0; k < in; k++)
      dst[size_t(k * width + column + o)] = w[size_t(o * in + k)];
}
} // namespace

void OpTensorNames::add(const std::string &role, const std::string &tensor,
                        std::vector<int64_t> shape) {
  entries.push_back({role, tensor, std::move(shape)});
}

const std::string *OpTensorNames::tensor(const std::string &role) const {
  for (const Entry &entry : entries)
    if (entry.role == role)
      return &entry.tensor;
  return nullptr;
}

std::vector<ExpectedTensor> Model::requiredTensors(const ModelPlan &plan,
                                                   WeightNaming) {
  std::vector<ExpectedTensor> expected;
  for (const OpTensorNames &op : tensorNames(plan))
    for (const OpTensorNames::Entry &entry : op.entries)
      expected.push_back({entry.tensor, TensorType::F32, entry.shape});
  return expected;
}

Status Model::load(const std::string &planJson, const KernelEntry *table,
                   size_t tableSize, const std::string &weightsPath,
                   WeightNaming naming, std::unique_ptr<Model> &model) {
  std::unique_ptr<Model> result(new Model());
  if (Status status = parsePlan(planJson, table, tableSize, result->plan_);
      !status)
    return status;
  const ModelPlan &plan = result->plan_;
  SafetensorsFile file;
  if (Status status = SafetensorsFile::open(weightsPath, file); !status)
    return status;
  std::vector<OpTensorNames> names = tensorNames(plan);
  if (Status status = checkTensors(file, requiredTensors(plan, naming));
      !status)
    return Status(status.code(), std::string(name(naming)) + " weights in '" +
                                     weightsPath + "': " + status.message());

  auto get = [&](const OpTensorNames &n, const char *role) {
    const std::string *tensor = n.tensor(role);
    return tensor ? copyOut(*file.find(*tensor)) : std::vector<float>();
  };
  const int64_t d = plan.dModel;
  for (size_t i = 0; i < plan.ops.size(); i++) {
    const PlanOp &op = plan.ops[i];
    const OpTensorNames &n = names[i];
    auto w = std::make_shared<Weights>();
    switch (op.kind) {
    case OpKind::Embedding:
      w->table = get(n, "table");
      w->positionTable = get(n, "positions");
      break;
    case OpKind::Norm:
      w->normWeight = get(n, "weight");
      w->normBias = get(n, "bias");
      break;
    case OpKind::Attention: {
      const int64_t q = int64_t(op.queryHeads) * op.headDim,
                    kv = int64_t(op.kvHeads) * op.headDim;
      std::vector<float> wq = get(n, "q.weight"), wk = get(n, "k.weight"),
                         wv = get(n, "v.weight"), bq = get(n, "q.bias"),
                         bk = get(n, "k.bias"), bv = get(n, "v.bias");
      // Fused: [d][q | k | v]. Else [d][q] and [d][k | v].
      std::vector<float> &kvWeights =
          op.fusedProjections ? w->query : w->keyValue;
      std::vector<float> &kvBias =
          op.fusedProjections ? w->queryBias : w->keyValueBias;
      const int64_t queryWidth = op.fusedProjections ? q + 2 * kv : q;
      const int64_t kvColumn = op.fusedProjections ? q : 0;
      appendTransposed(w->query, queryWidth, 0, wq, q, d);
      appendTransposed(kvWeights, kvColumn + 2 * kv, kvColumn, wk, kv, d);
      appendTransposed(kvWeights, kvColumn + 2 * kv, kvColumn + kv, wv, kv, d);
      if (op.bias) {
        w->queryBias = bq;
        kvBias.insert(kvBias.end(), bk.begin(), bk.end());
        kvBias.insert(kvBias.end(), bv.begin(), bv.end());
      }
      appendTransposed(w->output, d, 0, get(n, "out.weight"), d, q);
      w->outputBias = get(n, "out.bias");
      break;
    }
    case OpKind::Ffn:
      appendTransposed(w->up, op.intermediateSize, 0, get(n, "fc1.weight"),
                       op.intermediateSize, d);
      appendTransposed(w->down, d, 0, get(n, "fc2.weight"), d,
                       op.intermediateSize);
      w->upBias = get(n, "fc1.bias");
      w->downBias = get(n, "fc2.bias");
      break;
    case OpKind::OutputHead:
      appendTransposed(w->head, op.vocabSize, 0, get(n, "weight"), op.vocabSize,
                       d);
      w->headBias = get(n, "bias");
      break;
    }
    result->weights_.push_back(std::move(w));
  }
  model = std::move(result);
  return Status::ok();
}

int Model::sourceVocabulary() const {
  for (const PlanOp &op : plan_.ops)
    if (op.kind == OpKind::Embedding && op.stack == "encoder")
      return op.vocabSize;
  return 0;
}

int Model::targetVocabulary() const {
  for (const PlanOp &op : plan_.ops)
    if (op.kind == OpKind::OutputHead)
      return op.vocabSize;
  return 0;
}

namespace {
/// Cache geometry of the decoder's cached layers of one kind.
Status cacheConfig(const ModelPlan &plan, bool cross, int maxSequences,
                   KvCacheConfig &config) {
  KvCacheConfig result;
  for (const PlanOp &op : plan.ops) {
    if (op.kind != OpKind::Attention || !op.cached || op.cross != cross)
      continue;
    if (result.numLayers == 0) {
      result.numKvHeads = op.kvHeads;
      result.headDim = op.headDim;
      result.dtype = op.cacheType;
      result.pageSize = op.pageSize;
      result.maxSequenceLength = op.maxLength;
    } else if (op.kvHeads != result.numKvHeads ||
               op.headDim != result.headDim || op.cacheType != result.dtype ||
               op.pageSize != result.pageSize ||
               op.maxLength != result.maxSequenceLength) {
      return Status(StatusCode::InvalidArgument,
                    "layer " + op.name +
                        " caches with another geometry than the layers "
                        "before it; one cache serves them all");
    }
    result.numLayers++;
  }
  if (maxSequences < 1)
    return Status(StatusCode::InvalidArgument, "maxSequences must be >= 1");
  if (result.numLayers > 0) {
    int pagesPerSequence =
        (result.maxSequenceLength + result.pageSize - 1) / result.pageSize;
    result.numPages = pagesPerSequence * maxSequences;
  }
  config = result;
  return Status::ok();
}
} // namespace

Status Model::selfCacheConfig(int maxSequences, KvCacheConfig &config) const {
  return cacheConfig(plan_, false, maxSequences, config);
}

Status Model::crossCacheConfig(int maxSequences, KvCacheConfig &config) const {
  return cacheConfig(plan_, true, maxSequences, config);
}

} // namespace attn::runtime
