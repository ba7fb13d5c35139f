//===- Model.cpp - loading a generated model --------------------------------===//
//
// Parses the plan, opens the checkpoint and gets the weights: mapped from a
// packed-weights file (PackedWeights.h) or laid out from the checkpoint
// (WeightLayout.cpp, by the tensor names of TensorNames.h). Running the
// model: ModelCalls.cpp (the public calls), ModelRunner.cpp (one forward
// pass), KernelCalls.cpp (each kernel).
//
//===----------------------------------------------------------------------===//

#include "ModelWeights.h"
#include "PackedWeights.h"
#include "TensorNames.h"

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/DeviceProbe.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <set>

namespace attn::runtime {

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
  for (const PlanOp &op : plan.ops)
    if (op.experts.count && op.experts.weightType == DType::MXFP4)
      return Status(StatusCode::InvalidArgument,
                    "random weights for op '" + op.name +
                        "', whose experts a checkpoint stores in MXFP4: write "
                        "a float checkpoint and quantize it "
                        "(tools/quantize_checkpoint.py)");
  // Norm tensors by the ops they belong to, not by name patterns.
  std::set<std::string> normWeights, normBiases;
  std::vector<OpTensorNames> names = tensorNames(plan, naming);
  for (size_t i = 0; i < plan.ops.size(); i++)
    for (const OpTensorNames::Entry &entry : names[i].entries)
      if (plan.ops[i].kind == OpKind::Norm)
        (entry.role == "weight" ? normWeights : normBiases)
            .insert(entry.tensor);
      else if (entry.role == "q_norm.weight" || entry.role == "k_norm.weight")
        normWeights.insert(entry.tensor); // QK-norm's
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
      v = normWeights.count(tensor.name)  ? 1.0f - plan.normWeightOffset
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
       {WeightNaming::Llama, WeightNaming::Gemma, WeightNaming::Gemma3,
        WeightNaming::Phi3, WeightNaming::Mixtral, WeightNaming::DeepSeek,
        WeightNaming::GptOss, WeightNaming::Gpt2, WeightNaming::Bart})
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

Model::~Model() = default;

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
    installErrorHandler(*device);
  }
  if (Status status = parsePlan(planJson, table, tableSize, result->plan_,
                                device ? device->name : "cpu");
      !status)
    return status;
  const ModelPlan &plan = result->plan_;
  // Experts run on host views of their stacked weights (Experts.h), and so
  // do a latent layer's heads (LatentAttention.h).
  for (const PlanOp &op : plan.ops)
    if (device && (op.experts.count || op.latent.rank))
      return Status(StatusCode::InvalidArgument,
                    "'" + op.name + "' is " +
                        (op.experts.count ? "a mixture of experts"
                                          : "a latent attention layer") +
                        ": attnc runs those on the CPU only, not on " +
                        device->name);
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
  // On a device the weights are copied there once, here.
  result->device_ = device;
  if (device)
    for (const auto &weights : result->weights_)
      if (Status s = weights->placeOn(*device); !s)
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
                   int passRows, KvCacheConfig &config) {
  KvCacheConfig result;
  int window = 0; // the widest sliding window
  for (const PlanOp &op : plan.ops) {
    if (op.kind != OpKind::Attention || !op.cached || op.cross != cross)
      continue;
    if (result.numLayers == 0) {
      result.numKvHeads = op.kvHeads;
      result.headDim = op.headDim;
      result.dtype = op.cacheType;
      result.pageSize = op.pageSize;
      result.maxSequenceLength = op.maxLength;
      result.keysOnly = op.latent.rank > 0; // latent rows: values are keys
    } else if (op.kvHeads != result.numKvHeads ||
               op.headDim != result.headDim || op.cacheType != result.dtype ||
               op.pageSize != result.pageSize ||
               op.maxLength != result.maxSequenceLength ||
               (op.latent.rank > 0) != result.keysOnly) {
      return Status(StatusCode::InvalidArgument,
                    "layer " + op.name +
                        " caches with another geometry than the layers "
                        "before it; one cache serves them all");
    }
    result.numLayers++;
    result.windows.push_back(op.window);
    window = std::max(window, op.window);
  }
  if (window == 0)
    result.windows.clear();
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
    // Each sequence's window, and one sequence's rows beyond it in a pass.
    if (window > 0)
      result.windowPages = int(std::min<int64_t>(
          pages, kvPagesPerSequence(result.maxSequenceLength, result.pageSize,
                                    window) *
                         maxSequences +
                     (std::max(passRows, 0) + result.pageSize - 1) /
                         result.pageSize));
  }
  config = result;
  return Status::ok();
}
} // namespace

Status Model::selfCacheConfig(int maxSequences, KvCacheConfig &config,
                              int passRows) const {
  return cacheConfig(plan_, false, maxSequences, passRows, config);
}

Status Model::crossCacheConfig(int maxSequences, KvCacheConfig &config) const {
  return cacheConfig(plan_, true, maxSequences, 0, config);
}

} // namespace attn::runtime
