//===- RandomWeights.cpp - random Llama weights for llama_tiny ------------===//
//
// random-llama-weights OUT: writes seeded random weights with Hugging Face
// Llama names for the generated llama_tiny model (the fixture of
// model-c-api-test, which cannot make a safetensors file in C).
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Model.h"

#include "llama_tiny.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace attn::runtime;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: random-llama-weights OUT.safetensors\n");
    return 2;
  }
  ModelPlan plan;
  Status s =
      parsePlan(llama_tiny_plan_json,
                reinterpret_cast<const KernelEntry *>(llama_tiny_kernel_table),
                LLAMA_TINY_KERNEL_TABLE_SIZE, plan);
  std::vector<ExpectedTensor> tensors =
      Model::requiredTensors(plan, WeightNaming::Llama);
  std::mt19937 rng(42);
  std::vector<std::vector<float>> values;
  std::vector<const float *> data;
  for (const ExpectedTensor &tensor : tensors) {
    size_t count = 1;
    for (int64_t extent : tensor.shape)
      count *= size_t(extent);
    float range = 1.5f / std::sqrt(float(tensor.shape.back()));
    std::uniform_real_distribution<float> uniform(-range, range);
    bool norm = tensor.name.find("norm") != std::string::npos;
    values.emplace_back(count);
    for (float &v : values.back())
      v = norm ? 1.0f : uniform(rng);
    data.push_back(values.back().data());
  }
  if (s)
    s = writeSafetensors(argv[1], tensors, data);
  if (!s) {
    std::fprintf(stderr, "random-llama-weights: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
