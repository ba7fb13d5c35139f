//===- WriteRandomCheckpoint.cpp - random weights for a model library -----===//
//
// write-random-checkpoint LIB.so OUT.safetensors: loads a model library
// attnc --shared wrote (ModelLibrary::open) and writes seeded random bf16
// weights for its plan, named as its plan says: a checkpoint as Hugging
// Face publishes one, for attn-run's test.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Model.h"
#include "attn/runtime/ModelLibrary.h"

#include <cstdio>

using namespace attn::runtime;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: write-random-checkpoint LIB.so OUT.safetensors\n");
    return 2;
  }
  std::shared_ptr<const ModelLibrary> library;
  ModelPlan plan;
  WeightNaming naming;
  Status s = ModelLibrary::open(argv[1], library);
  if (s) {
    const attnc_model_library &d = library->descriptor();
    s = parsePlan(d.plan_json, d.kernels, d.kernel_count, plan);
  }
  if (s)
    s = Model::namingOf(plan, naming);
  if (s)
    s = Model::writeRandomWeights(plan, naming, 7, argv[2], TensorType::BF16);
  if (!s) {
    std::fprintf(stderr, "write-random-checkpoint: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
