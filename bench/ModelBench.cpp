//===- ModelBench.cpp - a whole checkpoint: load, prompt, decode ----------===//
//
// TinyLlama-1.1B's config.json (models/tinyllama) compiled three times at
// build time for this machine: with the linear kernels reading bf16 weights
// (its torch_dtype), f32 ones, int8 ones and int4 ones in groups of 128
// (both quantized at load). A decode step of one sequence streams
// every weight once, so its speed is bounded by weight bytes per token ÷
// the machine's read bandwidth (measured here, in the same run).
//
// With --model qwen3-0.6b or gemma-3-1b, the same for those published
// configs (models/<name>, bf16 only): #49's QK-norm, Gemma's norms and its
// sliding and global layers at the shapes people download. With --model
// qwen3-moe-a3b-half (bf16, int4), a mixture of experts: Qwen3-30B-A3B's
// 128 experts, 8 a token, at half its widths and 8 layers; a decoded token
// reads the router and its 8 experts of each layer (the plan's
// weight_bytes_per_token counts those). With --model deepseek-v2-lite-slim,
// DeepSeek-V2-Lite's latent attention as published (16 heads over cache
// rows of 512 + 64, a bf16 cache of 1152 B a token and layer), 6 layers
// with its 64 experts at half their width (6 a token, 2 shared): decode at
// long contexts (--context) reads the latent cache beside the weights.
//
//   attn-model-bench [--model M] --write DIR   random weights, as Hugging
//                                     Face publishes them: bf16, 2 shards,
//                                     index, and the config beside them
//   attn-model-bench [--model M] --weights DIR|FILE.gguf
//                    [--weight-dtype bf16|f32|int8|int4|int4g32|int8g32|
//                                    int8g16|int4g32m | --library LIB.so]
//                    [--packed-weights FILE] [--prompt 512] [--steps 64]
//                    [--context N]
//
// --library: time a library attnc --shared wrote instead of the linked one
// of the dtype (`attn-run FILE.gguf --compile-only` prints it): a plan of
// the weights' own making, e.g. a Q4_K_M file's mixed projections.
//
// --context N: decode after N cached tokens of filler rows (random keys and
// values written straight into the cache) instead of a prompt's prefill: a
// long context's decode, whose cost is the bytes and products over those
// rows whatever they hold, without the prefill of N tokens first.
// int4g32, int8g32, int8g16, int4g32m: int4 or int8 in groups of 32, int8
// in groups of 16, int4 in groups of 32 with a minimum per group, the plans
// of the model's GGUF file in Q4_0, Q8_0, Q6_K or Q4_K
// (tools/gguf_writer.py convert DIR FILE.gguf --type q4_0), whose blocks
// load as they are.
// --packed-weights: keep the laid-out weights in FILE (LoadOptions), so
// that the next run maps them, as attn-run does.
//
// Prints load time, peak resident memory against the weights' size in the
// plan's dtype plus the KV cache, prompt tokens/s and decode tokens/s with
// the weight bandwidth they reach. Not a test: run it by hand, one process
// per measurement (peak memory is the process's).
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/Roofline.h"

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/Model.h"
#include "attn/runtime/ModelLibrary.h"

#include "tinyllama_bf16.h"
#include "tinyllama_f32.h"
#include "tinyllama_int4.h"
#include "tinyllama_int4g32.h"
#include "tinyllama_int8.h"
#include "tinyllama_int8g16.h"
#include "tinyllama_int4g32m.h"
#include "tinyllama_int8g32.h"
#include "gemma_3_1b_32k.h"
#include "gemma_3_1b_bf16.h"
#include "qwen3_0_6b_bf16.h"
#include "qwen3_moe_half_bf16.h"
#include "qwen3_moe_half_int4.h"
#include "deepseek_v2_lite_slim_bf16.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <cerrno>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace attn::runtime;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double peakResidentBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) * 1024.0; // Linux: KiB
}

/// Resident now (/proc/self/statm), against the peak: what loading
/// holds at once beyond what stays.
double residentBytes() {
  long pages = 0, resident = 0;
  if (FILE *statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(statm);
  }
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

int fail(const std::string &message) {
  std::fprintf(stderr, "attn-model-bench: error: %s\n", message.c_str());
  return 1;
}

const KernelEntry *entries(const attnc_kernel_entry *table) {
  return reinterpret_cast<const KernelEntry *>(table);
}

/// A benchmarked config (models/<name>/config.json) and its libraries by
/// weight dtype (null: not compiled for it).
struct BenchModel {
  const char *name, *label;
  const attnc_model_library *bf16, *f32, *int8, *int4;
  /// int4 and int8 in groups of 32, int8 in groups of 16, int4 in groups
  /// of 32 with minimums: the plans of the model's GGUF file in Q4_0, Q8_0,
  /// Q6_K and Q4_K.
  const attnc_model_library *int4g32 = nullptr, *int8g32 = nullptr,
                            *int8g16 = nullptr, *int4g32m = nullptr;
};
const BenchModel kModels[] = {
    {"tinyllama", "TinyLlama-1.1B", &tinyllama_bf16_library,
     &tinyllama_f32_library, &tinyllama_int8_library, &tinyllama_int4_library,
     &tinyllama_int4g32_library, &tinyllama_int8g32_library,
     &tinyllama_int8g16_library, &tinyllama_int4g32m_library},
    {"qwen3-0.6b", "Qwen3-0.6B", &qwen3_0_6b_bf16_library, nullptr, nullptr,
     nullptr},
    {"gemma-3-1b", "Gemma-3-1B", &gemma_3_1b_bf16_library, nullptr, nullptr,
     nullptr},
    {"gemma-3-1b-32k", "Gemma-3-1B (32K, bf16 cache)", &gemma_3_1b_32k_library,
     nullptr, nullptr, nullptr},
    {"qwen3-moe-a3b-half", "Qwen3-30B-A3B (half width, 8 layers)",
     &qwen3_moe_half_bf16_library, nullptr, nullptr,
     &qwen3_moe_half_int4_library},
    {"deepseek-v2-lite-slim",
     "DeepSeek-V2-Lite (its latent attention, 6 layers, half-width experts, "
     "bf16 cache)",
     &deepseek_v2_lite_slim_bf16_library, nullptr, nullptr, nullptr}};

const BenchModel *findModel(const std::string &name) {
  for (const BenchModel &model : kModels)
    if (name == model.name)
      return &model;
  return nullptr;
}

int writeRandomCheckpoint(const BenchModel &bench, const std::string &dir) {
  ModelPlan plan;
  const attnc_model_library &d = *bench.bf16;
  if (Status s = parsePlan(d.plan_json, entries(d.kernels), d.kernel_count,
                           plan);
      !s)
    return fail(s.message());
  WeightNaming naming;
  if (Status s = Model::namingOf(plan, naming); !s)
    return fail(s.message());
  std::vector<ExpectedTensor> tensors = Model::requiredTensors(plan, naming);
  std::vector<std::vector<float>> values;
  std::vector<const float *> data;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (ExpectedTensor &tensor : tensors) {
    size_t count = 1;
    for (int64_t extent : tensor.shape)
      count *= size_t(extent);
    // 1-D tensors are norm weights in these models (no biases): 1 as the
    // model applies them (Gemma stores w for 1 + w).
    const bool norm = tensor.shape.size() == 1;
    const float range = norm ? 0.0f : 1.0f / std::sqrt(float(tensor.shape[1]));
    values.emplace_back(count);
    for (float &v : values.back())
      v = norm ? 1.0f - plan.normWeightOffset : range * uniform(rng);
    tensor.type = TensorType::BF16;
    data.push_back(values.back().data());
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail("cannot create " + dir + ": " + std::strerror(errno));
  double start = now();
  if (Status s = writeCheckpoint(dir, tensors, data, 2); !s)
    return fail(s.message());
  // The config beside the weights: a Hugging Face folder (the peers read it).
  std::ifstream config(std::string(ATTN_BENCH_MODELS) + "/" + bench.name +
                           "/config.json",
                       std::ios::binary);
  std::ofstream(dir + "/config.json", std::ios::binary) << config.rdbuf();
  std::printf("wrote %zu tensors to %s in %.1f s\n", tensors.size(),
              dir.c_str(), now() - start);
  return 0;
}

/// --weight-dtype's names and each one's library in a BenchModel.
const std::pair<const char *, const attnc_model_library *BenchModel::*>
    kWeightDTypes[] = {{"bf16", &BenchModel::bf16},
                       {"f32", &BenchModel::f32},
                       {"int8", &BenchModel::int8},
                       {"int4", &BenchModel::int4},
                       {"int4g32", &BenchModel::int4g32},
                       {"int8g32", &BenchModel::int8g32},
                       {"int8g16", &BenchModel::int8g16},
                       {"int4g32m", &BenchModel::int4g32m}};

bool isWeightDType(const std::string &dtype) {
  for (const auto &[name, library] : kWeightDTypes)
    if (dtype == name)
      return true;
  return false;
}

/// The library compiled for `dtype` (bf16 unless another is named); null
/// where the model has none.
const attnc_model_library *libraryFor(const BenchModel &model,
                                      const std::string &dtype) {
  for (const auto &[name, library] : kWeightDTypes)
    if (dtype == name)
      return model.*library;
  return nullptr;
}

/// Fills positions [0, count) of `sequence` with random rows in every layer
/// (keys only where the cache's values are its keys).
Status fillContext(KvCache &cache, SequenceId sequence, int count) {
  const KvCacheConfig &c = cache.config();
  if (Status s = cache.extend(sequence, count); !s)
    return s;
  const int block = 256;
  const size_t row = size_t(c.numKvHeads) * c.headDim;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> keys(block * row), values(block * row);
  for (float *v : {keys.data(), values.data()})
    for (size_t i = 0; i < block * row; i++)
      v[i] = uniform(rng);
  for (int layer = 0; layer < c.numLayers; layer++)
    for (int at = 0; at < count; at += block)
      if (Status s = cache.write(sequence, layer, at,
                                 std::min(block, count - at), keys.data(),
                                 values.data());
          !s)
        return s;
  return Status::ok();
}

int run(const BenchModel &bench, const std::string &weights,
        const std::string &dtype, const std::string &libraryPath,
        const std::string &packed, int promptLength, int steps, int context) {
  // The bench's library for the dtype, or one attnc --shared wrote (a
  // plan of the weights' own making: a GGUF file's mixed blocks).
  std::shared_ptr<const ModelLibrary> library;
  if (!libraryPath.empty()) {
    if (Status s = ModelLibrary::open(libraryPath, library); !s)
      return fail(s.message());
  } else {
    const attnc_model_library *compiled = libraryFor(bench, dtype);
    if (!compiled)
      return fail(std::string(bench.name) + " is not compiled for " + dtype +
                  " weights");
    if (Status s = ModelLibrary::linked(*compiled, library); !s)
      return fail(s.message());
  }
  const nlohmann::json planJson =
      nlohmann::json::parse(library->descriptor().plan_json);
  const double weightBytesPerToken = planJson["weight_bytes_per_token"];
  // Each cached token's bytes over all layers (keys and values, or the
  // latent rows alone): what a decode step reads per token of context.
  const double kvBytesPerToken = planJson["kv_bytes_per_token"];

  double start = now();
  std::unique_ptr<Model> model;
  if (Status s =
          Model::load(library, weights, model, {.packedWeights = packed});
      !s)
    return fail(s.message());
  const double loadSeconds = now() - start;
  const double afterLoad = peakResidentBytes(),
               residentAfterLoad = residentBytes();

  KvCacheConfig config;
  KvCache cache;
  SequenceId sequence;
  if (Status s = model->selfCacheConfig(1, config); !s)
    return fail(s.message());
  const int warmup = 4; // decode steps that warm the thread pool and caches
  const int before = context ? context : promptLength;
  if (before + warmup + steps > config.maxSequenceLength)
    return fail("--prompt (or --context) + --steps + 4 must be <= " +
                std::to_string(config.maxSequenceLength) + ", the max length");
  if (Status s = KvCache::create(config, cache); !s)
    return fail(s.message());
  // The pools are zeroed at creation: all of them resident from here.
  const double cacheResident = residentBytes() - residentAfterLoad;
  if (Status s = cache.addSequence(sequence); !s)
    return fail(s.message());
  ExecutionContext execution(*model);
  std::vector<int32_t> prompt(promptLength);
  // The ids ../shared/peers/llamacpp feeds llama.cpp: modulo 32000 (or a
  // smaller vocabulary).
  for (int i = 0; i < promptLength; i++)
    prompt[i] = (i * 7919 + 1) % std::min(model->targetVocabulary(), 32000);
  std::vector<float> logits(model->targetVocabulary());
  int32_t token = 0;
  start = now();
  Status filled = context ? fillContext(cache, sequence, context)
                          : model->prefill(prompt.data(), promptLength, cache,
                                           sequence, logits.data(), execution,
                                           &token);
  if (!filled)
    return fail(filled.message());
  const double promptSeconds = now() - start;
  double decodeStart = 0;
  for (int step = 0; step < warmup + steps; step++) {
    if (step == warmup)
      decodeStart = now();
    int32_t next = 0;
    if (Status s =
            model->decodeStep(&sequence, nullptr, &token, 1, cache, nullptr,
                              logits.data(), execution, nullptr, &next);
        !s)
      return fail(s.message());
    token = next;
  }
  const double tokensPerSecond = steps / (now() - decodeStart);
  const double peak = peakResidentBytes();

  const int threads = int(std::thread::hardware_concurrency());
  attn::Roofline roofline = attn::measureRoofline(threads);
  const double weightGBps = weightBytesPerToken * tokensPerSecond / 1e9;
  std::printf("model: %s shape, %s weights, %.2f GB read per "
              "decoded token, KV cache %.1f MiB (resident +%.1f MiB)\n",
              bench.label,
              libraryPath.empty()
                  ? dtype.c_str()
                  : ("the library's (" +
                     planJson["weight_dtype"].get<std::string>() + " and own)")
                        .c_str(),
              weightBytesPerToken / 1e9,
              double(cache.poolBytes()) / (1 << 20),
              cacheResident / (1 << 20));
  std::printf("load: %.2f s, weights %s; peak RSS after load %.2f GB "
              "(resident %.2f GB)\n",
              loadSeconds, model->weightSource().c_str(), afterLoad / 1e9,
              residentAfterLoad / 1e9);
  if (context)
    std::printf("context: %d filler tokens written in %.2f s\n", context,
                promptSeconds);
  else
    std::printf("prompt: %d tokens in %.2f s = %.1f tokens/s\n", promptLength,
                promptSeconds, promptLength / promptSeconds);
  std::printf("decode: %d steps after %d, context %d..%d: %.2f tokens/s = "
              "%.1f GB/s of weights = %.0f%% of read bandwidth %.1f GB/s "
              "(triad %.1f GB/s), %d threads\n",
              steps, warmup, before, before + warmup + steps, tokensPerSecond,
              weightGBps, 100.0 * weightGBps / roofline.readGBps,
              roofline.readGBps, roofline.triadGBps, threads);
  // With the cache each step reads (its mean context's rows) beside them.
  const double meanContext = before + warmup + (steps + 1) / 2.0,
               cacheBytes = kvBytesPerToken * meanContext,
               readGBps = (weightBytesPerToken + cacheBytes) *
                          tokensPerSecond / 1e9;
  std::printf("decode reads %.3f GB of weights and %.3f GB of cache a token "
              "(%.0f B a cached token): %.1f GB/s = %.0f%% of read "
              "bandwidth\n",
              weightBytesPerToken / 1e9, cacheBytes / 1e9, kvBytesPerToken,
              readGBps, 100.0 * readGBps / roofline.readGBps);
  std::printf("peak RSS %.2f GB\n", peak / 1e9);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string write, weights, dtype = "bf16", packed, modelName = "tinyllama",
      libraryPath;
  int promptLength = 512, steps = 64, context = 0;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fail(arg + " needs a value");
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--write")
      write = value();
    else if (arg == "--weights")
      weights = value();
    else if (arg == "--model")
      modelName = value();
    else if (arg == "--weight-dtype")
      dtype = value();
    else if (arg == "--packed-weights")
      packed = value();
    else if (arg == "--library")
      libraryPath = value();
    else if (arg == "--prompt")
      promptLength = std::atoi(value().c_str());
    else if (arg == "--steps")
      steps = std::atoi(value().c_str());
    else if (arg == "--context")
      context = std::atoi(value().c_str());
    else
      return fail("unknown option '" + arg + "'"), 2;
  }
  const BenchModel *bench = findModel(modelName);
  if (!bench)
    return fail("--model must be tinyllama, qwen3-0.6b, gemma-3-1b, "
                "gemma-3-1b-32k, qwen3-moe-a3b-half or deepseek-v2-lite-slim, "
                "got '" +
                modelName + "'"),
           2;
  if (!write.empty())
    return writeRandomCheckpoint(*bench, write);
  if (weights.empty() || !isWeightDType(dtype) || promptLength < 1 ||
      steps < 1 || context < 0) {
    std::string weightDTypes;
    for (const auto &[name, library] : kWeightDTypes)
      weightDTypes += (weightDTypes.empty() ? "" : "|") + std::string(name);
    return fail("usage: attn-model-bench [--model tinyllama|qwen3-0.6b|"
                "gemma-3-1b|gemma-3-1b-32k|qwen3-moe-a3b-half|"
                "deepseek-v2-lite-slim] --write DIR | --weights DIR "
                "[--weight-dtype " + weightDTypes + " | --library LIB.so] "
                "[--packed-weights FILE] "
                "[--prompt N] [--steps N] [--context N] "
                "(prompt or context + steps + 4 <= the model's max length)"),
           2;
  }
  return run(*bench, weights, dtype, libraryPath, packed, promptLength, steps,
             context);
}
