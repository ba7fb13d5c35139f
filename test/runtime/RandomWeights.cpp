//===- RandomWeights.cpp - random Llama weights for llama_tiny ------------===//
//
// random-llama-weights OUT: writes seeded random weights with Hugging Face
// Llama names for the generated llama_tiny model (the fixture of
// model-c-api-test, which cannot make a safetensors file in C).
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Model.h"

#include "llama_tiny.h"

#include <cstdio>

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
  if (s)
    s = Model::writeRandomWeights(plan, WeightNaming::Llama, 42, argv[1]);
  if (!s) {
    std::fprintf(stderr, "random-llama-weights: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
