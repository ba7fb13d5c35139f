//===- FuzzPlan.cpp - a plan against its kernels: load and one step -------===//
//
// One input: a plan (the JSON attnc writes beside a model library), taken
// as an application would take a tampered one, against llama_tiny's real
// kernel table: parsed, loaded with random weights of the shapes it asks
// for, then a prompt prefilled and one token decoded. Every disagreement
// with the kernels must be a status (the kernels' own checks become
// KernelFailed), never an abort or an out-of-bounds access.
//
//===----------------------------------------------------------------------===//

#include "FuzzScratch.h"

#include "attn/runtime/Model.h"
#include "attn/runtime/Safetensors.h"

#include "llama_tiny.h"

#include <cstdint>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace attn::runtime;

namespace {
const KernelEntry *table() {
  return reinterpret_cast<const KernelEntry *>(llama_tiny_kernel_table);
}

/// Random weights of every tensor `plan` names, written to a private file;
/// false when the plan's tensors are too large to be worth writing.
bool writeWeights(const ModelPlan &plan, const std::string &path) {
  std::vector<ExpectedTensor> tensors =
      Model::requiredTensors(plan, WeightNaming::Llama);
  std::vector<std::vector<float>> values;
  std::vector<const float *> data;
  size_t total = 0;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-0.2f, 0.2f);
  for (ExpectedTensor &tensor : tensors) {
    size_t count = 1;
    for (int64_t extent : tensor.shape) {
      if (extent < 0 || extent > (1 << 20))
        return false;
      count *= size_t(extent);
    }
    if ((total += count) > (size_t(1) << 22))
      return false;
    values.emplace_back(count);
    for (float &v : values.back())
      v = uniform(rng);
    data.push_back(values.back().data());
  }
  return bool(writeSafetensors(path, tensors, data));
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  const std::string &path = fuzzScratchFile("weights.safetensors");
  const std::string text(reinterpret_cast<const char *>(bytes), size);
  ModelPlan plan;
  if (!parsePlan(text, table(), LLAMA_TINY_KERNEL_TABLE_SIZE, plan))
    return 0;
  if (!writeWeights(plan, path))
    return 0;
  std::unique_ptr<Model> model;
  if (!Model::load(text, table(), LLAMA_TINY_KERNEL_TABLE_SIZE, path,
                   WeightNaming::Llama, model))
    return 0;
  KvCacheConfig config;
  KvCache cache;
  SequenceId sequence;
  if (!model->selfCacheConfig(1, config) || config.numPages > 4096 ||
      !KvCache::create(config, cache) || !cache.addSequence(sequence))
    return 0;
  ExecutionContext context(*model);
  std::vector<float> logits(size_t(std::max(0, model->targetVocabulary())));
  const std::vector<int32_t> prompt = {1, 2, 3};
  int32_t next = -1;
  if (!model->prefill(prompt.data(), int(prompt.size()), cache, sequence,
                      logits.data(), context, &next))
    return 0;
  int32_t token = next < 0 ? 0 : next;
  (void)model->decodeStep(&sequence, nullptr, &token, 1, cache, nullptr,
                          logits.data(), context, nullptr, &next);
  return 0;
}
