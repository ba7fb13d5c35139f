//===- Model.cpp - loading a generated model's weights --------------------===//
//
// Maps each op of the plan to its checkpoint tensors (per naming
// convention), checks the file holds exactly those, and lays them out for
// the kernels. Running the model: ModelCalls.cpp (the public calls),
// ModelRunner.cpp (one forward pass), KernelCalls.cpp (each kernel).
//
//===----------------------------------------------------------------------===//

#include "DeviceShadows.h"
#include "Int4Checkpoint.h"
#include "ModelWeights.h"
#include "PackedWeights.h"

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/DeviceProbe.h"

#include <cmath>
#include <filesystem>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>

namespace attn::runtime {

const char *name(WeightNaming naming) {
  switch (naming) {
  case WeightNaming::Bart:
    return "bart";
  case WeightNaming::Llama:
    return "llama";
  case WeightNaming::Gpt2:
    return "gpt2";
  }
  return "?";
}

namespace {
/// How one naming convention spells an op's tensors.
struct Naming {
  WeightNaming kind;

  /// The tensor prefix of block `block` of `stack`.
  std::string block(const std::string &stack, int block) const {
    if (kind == WeightNaming::Llama)
      return "model.layers." + std::to_string(block) + ".";
    return "model." + stack + ".layers." + std::to_string(block) + ".";
  }
  std::string embedding(const std::string &stack) const {
    return kind == WeightNaming::Llama ? "model.embed_tokens"
                                       : "model." + stack + ".embed_tokens";
  }
  std::string positions(const std::string &stack) const {
    return "model." + stack + ".embed_positions";
  }
  std::string embeddingNorm(const std::string &stack) const {
    return "model." + stack + ".layernorm_embedding";
  }
  std::string finalNorm(const std::string &stack) const {
    return kind == WeightNaming::Llama ? "model.norm"
                                       : "model." + stack + ".layer_norm";
  }
  /// The norm of an attention layer (self or cross) or the FFN: before it
  /// (pre-norm) or after it (post-norm).
  std::string norm(const std::string &prefix, const PlanOp &next) const {
    bool llama = kind == WeightNaming::Llama;
    if (next.kind == OpKind::Ffn)
      return prefix + (llama ? "post_attention_layernorm" : "final_layer_norm");
    if (next.cross)
      return prefix + "encoder_attn_layer_norm";
    return prefix + (llama ? "input_layernorm" : "self_attn_layer_norm");
  }
  std::string attention(const std::string &prefix, bool cross) const {
    return prefix + (cross ? "encoder_attn." : "self_attn.");
  }
  /// Where a checkpoint with tied embeddings stores an embedding table or
  /// the head [vocab][d]: BART's model.shared, Llama's embed_tokens.
  std::vector<std::pair<std::string, std::vector<int64_t>>>
  sharedEmbedding(int64_t vocab, int64_t d) const {
    if (kind == WeightNaming::Llama)
      return {{"model.embed_tokens.weight", {vocab, d}}};
    return {{"model.shared.weight", {vocab, d}}};
  }
  const char *outputProjection() const {
    return kind == WeightNaming::Llama ? "o_proj" : "out_proj";
  }
  /// FFN projections: "up", "gate", "down".
  std::string ffn(const std::string &prefix, const std::string &role) const {
    if (kind == WeightNaming::Llama)
      return prefix + "mlp." + role + "_proj";
    return prefix + (role == "up"     ? "fc1"
                     : role == "down" ? "fc2"
                                      : "fc1_gate");
  }
};

/// The tensors of every op, with their shapes, in the plan's order. An
/// op's block within its stack counts the FFNs before it (each block ends
/// with one); a norm is named after the op it feeds.
/// GPT-2's tensors of op `i` (a family of its own: Conv1D, fused, tied).
void gpt2Names(const ModelPlan &plan, size_t i, int block, OpTensorNames &n) {
  const PlanOp &op = plan.ops[i];
  const int64_t d = plan.dModel;
  const std::string prefix = "transformer.h." + std::to_string(block) + ".";
  switch (op.kind) {
  case OpKind::Embedding:
    n.add("table", "transformer.wte.weight", {op.vocabSize, d});
    if (op.positions == "learned")
      n.add("positions", "transformer.wpe.weight", {op.maxPositions, d});
    break;
  case OpKind::Norm: {
    const PlanOp *next = i + 1 < plan.ops.size() ? &plan.ops[i + 1] : nullptr;
    std::string base = !next || next->kind == OpKind::OutputHead ||
                               next->kind == OpKind::Embedding
                           ? "transformer.ln_f"
                       : next->kind == OpKind::Ffn ? prefix + "ln_2"
                                                   : prefix + "ln_1";
    n.add("weight", base + ".weight", {d});
    n.add("bias", base + ".bias", {d});
    break;
  }
  case OpKind::Attention: {
    const int64_t q = int64_t(op.queryHeads) * op.headDim,
                  kv = int64_t(op.kvHeads) * op.headDim, width = q + 2 * kv;
    std::string qkv = prefix + "attn.c_attn.";
    for (auto [role, begin, count] :
         {std::tuple{"q", int64_t(0), q}, std::tuple{"k", q, kv},
          std::tuple{"v", q + kv, kv}}) {
      n.addConv1D(std::string(role) + ".weight", qkv + "weight", {d, width},
                  begin, count);
      n.addConv1D(std::string(role) + ".bias", qkv + "bias", {width}, begin,
                  count);
    }
    n.addConv1D("out.weight", prefix + "attn.c_proj.weight", {q, d}, 0, 0);
    n.addConv1D("out.bias", prefix + "attn.c_proj.bias", {d}, 0, 0);
    break;
  }
  case OpKind::Ffn: {
    const int64_t f = op.intermediateSize;
    n.addConv1D("up.weight", prefix + "mlp.c_fc.weight", {d, f}, 0, 0);
    n.addConv1D("up.bias", prefix + "mlp.c_fc.bias", {f}, 0, 0);
    n.addConv1D("down.weight", prefix + "mlp.c_proj.weight", {f, d}, 0, 0);
    n.addConv1D("down.bias", prefix + "mlp.c_proj.bias", {d}, 0, 0);
    break;
  }
  case OpKind::OutputHead:
    n.add("weight", "transformer.wte.weight", {op.vocabSize, d}); // tied
    break;
  }
}

std::vector<OpTensorNames> tensorNames(const ModelPlan &plan,
                                       WeightNaming namingKind) {
  if (namingKind == WeightNaming::Gpt2) {
    std::vector<OpTensorNames> names(plan.ops.size());
    int block = 0;
    for (size_t i = 0; i < plan.ops.size(); i++) {
      gpt2Names(plan, i, block, names[i]);
      block += plan.ops[i].kind == OpKind::Ffn;
    }
    // A bare GPT2Model's checkpoint names them without "transformer.".
    const std::string prefix = "transformer.";
    for (OpTensorNames &op : names)
      for (OpTensorNames::Entry &entry : op.entries)
        if (entry.tensor.compare(0, prefix.size(), prefix) == 0)
          entry.alternatives.push_back(
              {entry.tensor.substr(prefix.size()), entry.shape});
    return names;
  }
  Naming naming{namingKind};
  // A linear layer's weight: `role`.weight, or the tensors of a checkpoint
  // that holds it quantized (Int4Checkpoint.h), `role`.qweight and so on.
  auto addLinear = [&](OpTensorNames &n, const std::string &role,
                       const std::string &base, int64_t out, int64_t in) {
    if (!plan.weightFormat) {
      n.add(role + ".weight", base + ".weight", {out, in});
      return;
    }
    for (const Int4TensorSpec &tensor :
         int4Tensors(*plan.weightFormat, out, in, plan.weightGroup)) {
      n.add(role + tensor.suffix, base + tensor.suffix, tensor.shape);
      n.entries.back().type = tensor.type;
    }
  };
  std::vector<OpTensorNames> names(plan.ops.size());
  std::map<std::string, int> blockOfStack; // FFNs seen per stack
  const int64_t d = plan.dModel;
  for (size_t i = 0; i < plan.ops.size(); i++) {
    const PlanOp &op = plan.ops[i];
    OpTensorNames &n = names[i];
    std::string stack = op.stack.empty() ? "decoder" : op.stack;
    std::string prefix = naming.block(stack, blockOfStack[stack]);
    switch (op.kind) {
    case OpKind::Embedding:
      n.add("table", naming.embedding(stack) + ".weight", {op.vocabSize, d},
            naming.sharedEmbedding(op.vocabSize, d));
      if (op.positions == "learned")
        n.add("positions", naming.positions(stack) + ".weight",
              {op.maxPositions + op.positionOffset, d});
      break;
    case OpKind::Norm: {
      // A pre norm is named after the sublayer it feeds, a post norm after
      // the one it follows (whose block an FFN has already counted).
      const PlanOp *next = i + 1 < plan.ops.size() ? &plan.ops[i + 1] : nullptr;
      const PlanOp *sublayer =
          op.post ? (i > 0 ? &plan.ops[i - 1] : nullptr) : next;
      bool named = sublayer && sublayer->stack == op.stack &&
                   (sublayer->kind == OpKind::Attention ||
                    sublayer->kind == OpKind::Ffn);
      std::string base = naming.finalNorm(stack);
      if (op.post && sublayer && sublayer->kind == OpKind::Embedding)
        base = naming.embeddingNorm(stack);
      else if (named && op.post && sublayer->kind == OpKind::Ffn)
        base = naming.norm(naming.block(stack, blockOfStack[stack] - 1),
                           *sublayer);
      else if (named)
        base = naming.norm(prefix, *sublayer);
      n.add("weight", base + ".weight", {d});
      if (op.layerNorm)
        n.add("bias", base + ".bias", {d});
      break;
    }
    case OpKind::Attention: {
      std::string base = naming.attention(prefix, op.cross);
      const int64_t q = int64_t(op.queryHeads) * op.headDim,
                    kv = int64_t(op.kvHeads) * op.headDim;
      for (auto [role, proj, rows, cols] :
           {std::tuple{"q", "q_proj", q, d}, std::tuple{"k", "k_proj", kv, d},
            std::tuple{"v", "v_proj", kv, d},
            std::tuple{"out", naming.outputProjection(), d, q}}) {
        addLinear(n, role, base + proj, rows, cols);
        if (std::string(role) == "out" ? op.outputBias : op.bias)
          n.add(std::string(role) + ".bias", base + proj + ".bias", {rows});
      }
      break;
    }
    case OpKind::Ffn: {
      const int64_t f = op.intermediateSize;
      std::vector<std::pair<std::string, std::vector<int64_t>>> roles = {
          {"up", {f, d}}, {"down", {d, f}}};
      if (op.gated)
        roles.insert(roles.begin(), {"gate", {f, d}});
      for (const auto &[role, shape] : roles) {
        addLinear(n, role, naming.ffn(prefix, role), shape[0], shape[1]);
        if (op.bias)
          n.add(role + ".bias", naming.ffn(prefix, role) + ".bias", {shape[0]});
      }
      blockOfStack[stack]++;
      break;
    }
    case OpKind::OutputHead:
      // A tied Llama-family head is the embedding, whatever lm_head.weight
      // a checkpoint also holds (load() tolerates it), and an untied one
      // must have its own. BART and Marian heads are tied to the embeddings
      // in most checkpoints (saved once, under the embedding's name), and
      // keep the head's bias as the buffer final_logits_bias [1][vocab].
      if (namingKind == WeightNaming::Llama && op.tied)
        n.add("weight", naming.embedding(stack) + ".weight",
              {op.vocabSize, d});
      else if (namingKind == WeightNaming::Llama)
        n.add("weight", "lm_head.weight", {op.vocabSize, d});
      else
        n.add("weight", "lm_head.weight", {op.vocabSize, d},
              naming.sharedEmbedding(op.vocabSize, d));
      if (op.bias)
        n.add("bias", "lm_head.bias", {op.vocabSize},
              {{"final_logits_bias", {1, op.vocabSize}}});
      break;
    }
  }
  return names;
}

/// The distinct tensors `names` refer to, in order (fused and tied tensors
/// serve several roles).
std::vector<ExpectedTensor>
distinctTensors(const std::vector<OpTensorNames> &names) {
  std::vector<ExpectedTensor> expected;
  std::set<std::string> seen;
  for (const OpTensorNames &op : names)
    for (const OpTensorNames::Entry &entry : op.entries)
      if (seen.insert(entry.tensor).second)
        expected.push_back({entry.tensor, entry.type, entry.shape});
  return expected;
}

/// Fails where two of the plan's ops expect one tensor in different shapes
/// (only a tampered or hand-written plan does: a fused or tied tensor
/// serves its roles in one shape); the loader packs each op's weights by its
/// own shape, so the file's single tensor would be read past its end.
Status checkSharedShapes(const ModelPlan &plan,
                         const std::vector<OpTensorNames> &names) {
  std::map<std::string, std::pair<const std::vector<int64_t> *, size_t>> first;
  auto text = [](const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); i++)
      s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  };
  for (size_t i = 0; i < names.size(); i++)
    for (const OpTensorNames::Entry &entry : names[i].entries) {
      auto [at, inserted] = first.try_emplace(entry.tensor, &entry.shape, i);
      if (!inserted && *at->second.first != entry.shape)
        return Status(StatusCode::InvalidArgument,
                      "the plan's ops '" + plan.ops[at->second.second].name +
                          "' and '" + plan.ops[i].name + "' expect tensor '" +
                          entry.tensor + "' as " + text(*at->second.first) +
                          " and " + text(entry.shape));
    }
  return Status::ok();
}

/// Buffers a checkpoint may carry that change nothing: recomputed rotary
/// frequencies (older Llama uploads), GPT-2's causal-mask buffers.
bool isHarmlessBuffer(const std::string &tensor, WeightNaming naming) {
  auto endsWith = [&](const std::string &suffix) {
    return tensor.size() >= suffix.size() &&
           tensor.compare(tensor.size() - suffix.size(), suffix.size(),
                          suffix) == 0;
  };
  if (naming == WeightNaming::Llama)
    return endsWith(".self_attn.rotary_emb.inv_freq");
  // GPT-2's head is wte: transformers ties lm_head.weight to it (an upload
  // that saved both has two equal copies).
  if (naming == WeightNaming::Gpt2)
    return endsWith(".attn.bias") || endsWith(".attn.masked_bias") ||
           tensor == "lm_head.weight";
  return false;
}

} // namespace

void OpTensorNames::add(
    const std::string &role, const std::string &tensor,
    std::vector<int64_t> shape,
    std::vector<std::pair<std::string, std::vector<int64_t>>> alternatives) {
  Entry entry{role, tensor, std::move(shape)};
  entry.alternatives = std::move(alternatives);
  entries.push_back(std::move(entry));
}

void OpTensorNames::addConv1D(const std::string &role,
                              const std::string &tensor,
                              std::vector<int64_t> shape, int64_t columnBegin,
                              int64_t columnCount) {
  entries.push_back(
      {role, tensor, std::move(shape), true, columnBegin, columnCount});
}

const OpTensorNames::Entry *OpTensorNames::find(const std::string &role) const {
  for (const Entry &entry : entries)
    if (entry.role == role)
      return &entry;
  return nullptr;
}

std::vector<ExpectedTensor> Model::requiredTensors(const ModelPlan &plan,
                                                   WeightNaming naming) {
  return distinctTensors(tensorNames(plan, naming));
}

Status Model::writeRandomWeights(const ModelPlan &plan, WeightNaming naming,
                                 uint64_t seed, const std::string &path,
                                 TensorType stored) {
  if (plan.weightFormat)
    return Status(StatusCode::InvalidArgument,
                  std::string("random weights for a plan that reads a ") +
                      int4FormatName(*plan.weightFormat) +
                      " checkpoint: write a float checkpoint and quantize "
                      "it (tools/quantize_checkpoint.py)");
  // Norm tensors by the ops they belong to, not by name patterns.
  std::set<std::string> normWeights, normBiases;
  std::vector<OpTensorNames> names = tensorNames(plan, naming);
  for (size_t i = 0; i < plan.ops.size(); i++)
    if (plan.ops[i].kind == OpKind::Norm)
      for (const OpTensorNames::Entry &entry : names[i].entries)
        (entry.role == "weight" ? normWeights : normBiases)
            .insert(entry.tensor);
  std::vector<ExpectedTensor> tensors = requiredTensors(plan, naming);
  for (ExpectedTensor &tensor : tensors)
    tensor.type = stored;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<float>> values;
  std::vector<const float *> data;
  for (const ExpectedTensor &tensor : tensors) {
    size_t count = 1;
    for (int64_t extent : tensor.shape)
      count *= size_t(extent);
    float range = 1.0f / std::sqrt(float(tensor.shape.back()));
    std::uniform_real_distribution<float> uniform(-range, range);
    values.emplace_back(count);
    for (float &v : values.back())
      v = normWeights.count(tensor.name)  ? 1.0f
          : normBiases.count(tensor.name) ? 0.0f
                                          : uniform(rng);
    data.push_back(values.back().data());
  }
  return writeSafetensors(path, tensors, data);
}

Status Model::load(const std::string &planJson, const KernelEntry *table,
                   size_t tableSize, const std::string &weightsPath,
                   WeightNaming naming, std::unique_ptr<Model> &model) {
  return load(planJson, table, tableSize, weightsPath, naming, nullptr, "",
              model);
}

Status Model::load(const std::string &planJson, const KernelEntry *table,
                   size_t tableSize, const std::string &weightsPath,
                   WeightNaming naming, const DeviceApi &device,
                   std::unique_ptr<Model> &model) {
  return load(planJson, table, tableSize, weightsPath, naming, &device, "",
              model);
}

Status Model::namingOf(const ModelPlan &plan, WeightNaming &naming) {
  for (WeightNaming candidate :
       {WeightNaming::Llama, WeightNaming::Gpt2, WeightNaming::Bart})
    if (plan.weightNaming == name(candidate)) {
      naming = candidate;
      return Status::ok();
    }
  return Status(StatusCode::InvalidArgument,
                "the plan does not say how its checkpoint names tensors "
                "(weight_naming '" +
                    plan.weightNaming +
                    "'): attnc states it for Hugging Face configs; pass a "
                    "WeightNaming");
}

namespace {
/// The tensor naming `planJson` states (plans of Hugging Face configs).
Status planNaming(const std::string &planJson, const KernelEntry *table,
                  size_t tableSize, WeightNaming &naming) {
  ModelPlan plan;
  if (Status status = parsePlan(planJson, table, tableSize, plan); !status)
    return status;
  return Model::namingOf(plan, naming);
}
} // namespace

Status Model::load(const std::string &planJson, const KernelEntry *table,
                   size_t tableSize, const std::string &weightsPath,
                   std::unique_ptr<Model> &model) {
  WeightNaming naming;
  if (Status status = planNaming(planJson, table, tableSize, naming); !status)
    return status;
  return load(planJson, table, tableSize, weightsPath, naming, nullptr, "",
              model);
}

Status Model::load(std::shared_ptr<const ModelLibrary> library,
                   const std::string &weightsPath,
                   std::unique_ptr<Model> &model, const LoadOptions &options) {
  const bool onDevice = options.onDevice;
  if (!library)
    return Status(StatusCode::InvalidArgument, "no model library");
  const attnc_model_library &d = library->descriptor();
  if (onDevice && !d.device_api)
    return Status(StatusCode::InvalidArgument,
                  std::string("model library '") + d.name +
                      "' has no GPU kernels (attnc --target=...,cuda adds "
                      "them)");
  WeightNaming naming;
  if (Status status = planNaming(d.plan_json, d.kernels, d.kernel_count, naming);
      !status)
    return status;
  std::unique_ptr<Model> loaded;
  if (Status status = load(d.plan_json, d.kernels, d.kernel_count, weightsPath,
                           naming, onDevice ? d.device_api : nullptr,
                           options.packedWeights, loaded);
      !status)
    return status;
  loaded->library_ = std::move(library);
  model = std::move(loaded);
  return Status::ok();
}

Model::~Model() {
  if (device_)
    for (const auto &weights : weights_)
      for (const auto &[data, bytes] : weights->tensors())
        shadows::forget(data);
}

Status Model::layOut(const ModelPlan &plan, WeightNaming naming,
                     const std::string &weightsPath, const Checkpoint &file,
                     std::vector<std::shared_ptr<const Weights>> &weights) {
  std::vector<OpTensorNames> names = tensorNames(plan, naming);
  // Every linear kernel of a GPTQ or AWQ model reads zero points: the
  // checkpoint's, and 8 where loading quantizes (the output head).
  const bool zeros = plan.weightFormat.has_value();
  Status failure = Status::ok(); // of a quantized layer's tensors
  // Where the file lacks a tensor but holds one of its alternatives (a tied
  // copy), the alternative stands in; unused alternatives may stay in the
  // file (a checkpoint that stores both copies).
  std::set<std::string> tolerated;
  for (OpTensorNames &op : names)
    for (OpTensorNames::Entry &entry : op.entries) {
      if (!file.find(entry.tensor))
        for (const auto &[alternative, shape] : entry.alternatives)
          if (file.find(alternative)) {
            entry.tensor = alternative;
            entry.shape = shape;
            break;
          }
      for (const auto &alternative : entry.alternatives)
        tolerated.insert(alternative.first);
    }
  if (Status status = checkSharedShapes(plan, names); !status)
    return status;
  for (const auto &[tensor, view] : file.tensors())
    if (isHarmlessBuffer(tensor, naming))
      tolerated.insert(tensor);
  for (const PlanOp &op : plan.ops) { // transformers ties over it
    if (op.kind == OpKind::OutputHead && op.tied)
      tolerated.insert("lm_head.weight");
    // Marian's sinusoids are a frozen table transformers fills itself: the
    // kernel computes them, whether or not the checkpoint saved them.
    if (op.kind == OpKind::Embedding && op.positions == "sinusoidal_halves")
      tolerated.insert(Naming{naming}.positions(op.stack.empty() ? "decoder"
                                                                 : op.stack) +
                       ".weight");
  }
  if (Status status = checkTensors(file, distinctTensors(names), tolerated);
      !status)
    return Status(status.code(), std::string(name(naming)) + " weights in '" +
                                     weightsPath + "': " + status.message());

  auto get = [&](const OpTensorNames &n, const char *role) {
    const OpTensorNames::Entry *entry = n.find(role);
    if (!entry)
      return PooledVector<float>();
    const TensorView &tensor = *file.find(entry->tensor);
    PooledVector<float> values(tensor.bytes / byteSize(tensor.type));
    readFloats(tensor, values.data());
    file.release(tensor);
    if (!entry->conv1d)
      return values;
    // [in][out] (or [out] for a bias), columns [begin, begin + count).
    const int64_t out = entry->shape.back(), begin = entry->columnBegin,
                  count = entry->columnCount ? entry->columnCount : out;
    if (entry->shape.size() == 1)
      return PooledVector<float>(values.begin() + begin,
                                 values.begin() + begin + count);
    const int64_t in = entry->shape[0];
    PooledVector<float> transposed(size_t(count * in));
    for (int64_t o = 0; o < count; o++)
      for (int64_t k = 0; k < in; k++)
        transposed[size_t(o * in + k)] = values[size_t(k * out + begin + o)];
    return transposed;
  };
  // A linear weight's rows, read from the file a panel at a time (GPT-2's
  // Conv1D slices, [in][out] in the file, are transposed whole first).
  // `done` releases the tensors' pages once packed.
  std::vector<const TensorView *> packed;
  auto rows = [&](const OpTensorNames &n, const char *role) -> WeightRows {
    const OpTensorNames::Entry *entry = n.find(role);
    const std::string quantizedRole =
        std::string(role).substr(0, std::string(role).find('.')) + ".qweight";
    if (const OpTensorNames::Entry *q = n.find(quantizedRole);
        !entry && q && plan.weightFormat) {
      // [in/8][out] (GPTQ) or [in][out/8] (AWQ): the layer's shape.
      const bool awq = *plan.weightFormat == Int4Format::Awq;
      const int64_t out = awq ? q->shape[1] * 8 : q->shape[1],
                    in = awq ? q->shape[0] : q->shape[0] * 8;
      std::shared_ptr<const Int4Layer> layer;
      const std::string base =
          q->tensor.substr(0, q->tensor.size() - std::string(".qweight").size());
      if (Status opened = Int4Layer::open(file, base, *plan.weightFormat, out,
                                          in, plan.weightGroup, layer);
          !opened) {
        if (failure) // the first problem is the one reported
          failure = opened;
        return {};
      }
      WeightRows result;
      result.count = out;
      result.readInt4 = [layer](int64_t first, int64_t count, uint8_t *u,
                                float *scales, uint8_t *zeros) {
        layer->read(first, count, u, scales, zeros);
      };
      return result;
    }
    if (!entry)
      return {};
    if (entry->conv1d) {
      auto values = std::make_shared<PooledVector<float>>(get(n, role));
      const int64_t in = entry->shape[0];
      return {int64_t(values->size()) / in,
              [values, in](int64_t first, int64_t count, float *out) {
                std::copy_n(values->data() + first * in, count * in, out);
              }};
    }
    const TensorView *tensor = file.find(entry->tensor);
    packed.push_back(tensor);
    const int64_t in = tensor->shape[1];
    const size_t rowBytes = size_t(in) * byteSize(tensor->type);
    return {tensor->shape[0], [tensor, rowBytes](int64_t first, int64_t count,
                                                 float *out) {
              TensorView slice = *tensor;
              slice.data = static_cast<const char *>(tensor->data) +
                           size_t(first) * rowBytes;
              slice.bytes = size_t(count) * rowBytes;
              readFloats(slice, out);
            }};
  };
  auto done = [&] {
    for (const TensorView *tensor : packed)
      file.release(*tensor);
    packed.clear();
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
      const WeightRows wq = rows(n, "q.weight"), wk = rows(n, "k.weight"),
                       wv = rows(n, "v.weight");
      const PooledVector<float> bq = get(n, "q.bias"), bk = get(n, "k.bias"),
                   bv = get(n, "v.bias");
      // Fused: Q | K | V. Else Q, and K | V.
      const int64_t panel = plan.weightPanel;
      if (op.fusedProjections) {
        w->query.pack({wq, wk, wv}, d, panel, plan.weightType,
                      plan.weightGroup, zeros);
      } else {
        w->query.pack({wq}, d, panel, plan.weightType, plan.weightGroup, zeros);
        w->keyValue.pack({wk, wv}, d, panel, plan.weightType, plan.weightGroup, zeros);
      }
      if (op.bias) {
        w->queryBias = bq;
        PooledVector<float> &kvBias =
            (op.fusedProjections ? w->queryBias : w->keyValueBias).edit();
        kvBias.insert(kvBias.end(), bk.begin(), bk.end());
        kvBias.insert(kvBias.end(), bv.begin(), bv.end());
      }
      w->output.pack({rows(n, "out.weight")}, q, panel, plan.weightType,
                     plan.weightGroup, zeros);
      done();
      w->outputBias = get(n, "out.bias");
      break;
    }
    case OpKind::Ffn: {
      // Gated: up is gate | up, the halves the down kernel pairs.
      const int64_t f = op.intermediateSize;
      const WeightRows gate = rows(n, "gate.weight"), up = rows(n, "up.weight"),
                       down = rows(n, "down.weight");
      if (op.gated) {
        w->up.pack({gate, up}, d, plan.weightPanel, plan.weightType,
                   plan.weightGroup, zeros);
        w->upBias = get(n, "gate.bias");
      } else {
        w->up.pack({up}, d, plan.weightPanel, plan.weightType,
                   plan.weightGroup, zeros);
      }
      const PooledVector<float> upBias = get(n, "up.bias");
      PooledVector<float> &bias = w->upBias.edit();
      bias.insert(bias.end(), upBias.begin(), upBias.end());
      w->down.pack({down}, f, plan.weightPanel, plan.weightType,
                   plan.weightGroup, zeros);
      done();
      w->downBias = get(n, "down.bias");
      break;
    }
    case OpKind::OutputHead: {
      w->head.pack({rows(n, "weight")}, d, plan.weightPanel, plan.weightType,
                   plan.weightGroup, zeros);
      done();
      w->headBias = get(n, "bias");
      break;
    }
    }
    if (!failure)
      return failure;
    weights.push_back(std::move(w));
  }
  return Status::ok();
}

Status Model::load(const std::string &planJson, const KernelEntry *table,
                   size_t tableSize, const std::string &weightsPath,
                   WeightNaming naming, const DeviceApi *device,
                   const std::string &packedPath,
                   std::unique_ptr<Model> &model) {
  std::unique_ptr<Model> result(new Model());
  if (device) {
    if (!device->name || !device->load_driver || !device->device_interface)
      return Status(StatusCode::InvalidArgument, "an incomplete device API");
    if (std::string why = whyNoDevice(device->name); !why.empty())
      return Status(StatusCode::NotFound,
                    "cannot run on " + std::string(device->name) + ": " + why);
    if (device->load_driver() != 0)
      return Status(StatusCode::NotFound,
                    "cannot load the " + std::string(device->name) + " driver");
    shadows::installErrorHandler(*device);
  }
  if (Status status = parsePlan(planJson, table, tableSize, result->plan_,
                                device ? device->name : "cpu");
      !status)
    return status;
  const ModelPlan &plan = result->plan_;
  Checkpoint file;
  if (Status status = Checkpoint::open(weightsPath, file); !status)
    return status;
  // A packed-weights file for this checkpoint and plan spares laying it
  // out; any other (absent, stale, corrupt) is replaced once it is.
  uint64_t key = 0;
  std::string why; // the packed file was not used
  if (!packedPath.empty()) {
    Status status = PackedWeights::key(planJson, naming, file, key);
    if (status)
      status = PackedWeights::map(packedPath, key, plan.ops.size(),
                                  result->weights_);
    if (status)
      result->weightSource_ = "mapped from '" + packedPath + "'";
    else
      why = status.code() == StatusCode::NotFound &&
                    !std::filesystem::exists(packedPath)
                ? "none yet"
                : status.message();
  }
  if (result->weights_.empty()) {
    if (Status status = layOut(plan, naming, weightsPath, file,
                               result->weights_);
        !status)
      return status;
    file.close();
    result->weightSource_ = "laid out from '" + weightsPath + "'";
    if (!packedPath.empty()) {
      Status written = PackedWeights::write(packedPath, key, result->weights_);
      result->weightSource_ +=
          " (packed weights: " + why + "; " +
          (written ? "written to '" + packedPath + "'" : written.message()) +
          ")";
    }
  }
  // On a device the weights are copied there once, here; forgotten by
  // ~Model.
  result->device_ = device;
  if (device)
    for (const auto &weights : result->weights_)
      for (const auto &[data, bytes] : weights->tensors())
        if (Status s = shadows::track(*device, data, bytes,
                                      /*hostHasData=*/true);
            !s)
          return s;
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
    const int64_t pagesPerSequence =
        (int64_t(result.maxSequenceLength) + result.pageSize - 1) /
        result.pageSize;
    const int64_t pages = pagesPerSequence * maxSequences;
    if (pages > std::numeric_limits<int32_t>::max())
      return Status(StatusCode::CapacityExceeded,
                    std::to_string(maxSequences) + " sequences of " +
                        std::to_string(result.maxSequenceLength) +
                        " tokens need " + std::to_string(pages) +
                        " cache pages, more than a cache can index");
    result.numPages = int(pages);
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
