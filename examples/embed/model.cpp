// A whole model from the install tree: a Llama-style config.json compiled by
// the installed attnc (attn_add_model), run by the installed runtime
// (attn::runtime): random weights written as a checkpoint, loaded, a prompt
// processed and four tokens decoded greedily.
#include "embed_llama.h"

#include "attn/runtime/Model.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace attn::runtime;

int fail(const Status &s) {
  std::fprintf(stderr, "embed-model: %s\n", s.message().c_str());
  return 1;
}

int main() {
  const auto *table =
      reinterpret_cast<const KernelEntry *>(embed_llama_kernel_table);
  ModelPlan plan;
  if (Status s = parsePlan(embed_llama_plan_json, table,
                           EMBED_LLAMA_KERNEL_TABLE_SIZE, plan);
      !s)
    return fail(s);
  char dir[] = "/tmp/embed-model.XXXXXX";
  if (!mkdtemp(dir))
    return std::perror("mkdtemp"), 1;
  const std::string weights = std::string(dir) + "/model.safetensors";
  Status s = Model::writeRandomWeights(plan, WeightNaming::Llama, 1, weights);
  std::unique_ptr<Model> model;
  if (s)
    s = Model::load(embed_llama_plan_json, table, EMBED_LLAMA_KERNEL_TABLE_SIZE,
                    dir, model); // tensor names as the plan says: Llama's
  unlink(weights.c_str());
  rmdir(dir);
  if (!s)
    return fail(s);
  KvCacheConfig config;
  KvCache cache;
  SequenceId sequence;
  if (!(s = model->selfCacheConfig(1, config)) ||
      !(s = KvCache::create(config, cache)) ||
      !(s = cache.addSequence(sequence)))
    return fail(s);
  ExecutionContext context(*model);
  std::vector<float> logits(model->targetVocabulary());
  const int32_t prompt[] = {1, 2, 3};
  int32_t token = -1;
  if (!(s = model->prefill(prompt, 3, cache, sequence, logits.data(), context,
                           &token)))
    return fail(s);
  std::printf("embed-model: prompt 1 2 3 ->");
  for (int step = 0; step < 4; step++) {
    std::printf(" %d", token);
    int32_t next = -1;
    if (!(s = model->decodeStep(&sequence, nullptr, &token, 1, cache, nullptr,
                                logits.data(), context, nullptr, &next)))
      return fail(s);
    token = next;
  }
  std::printf(" (greedy, random weights)\n");
  return 0;
}
