//===- DeviceModelTest.cpp - whole models on a GPU API vs on the CPU ------===//
//
// Libraries generated with a CPU target and a GPU API (attnc
// --target=x86-64-avx2,opencl or ...,cuda) hold both kernel sets, so one
// weights file loads twice: Model::load runs the CPU kernels, Model::load
// with `<model>_device_api` the GPU ones, with weights, KV caches and
// activations on the device. Every path must give the CPU's logits: prefill
// into a cache, decode steps over it for a batch with a forked sequence
// (copy-on-write of a shared page), recomputation without a cache, an
// encoder-decoder with cross-attention K/V stored on the device, an int8
// cache (rows quantized by the K/V projections), and greedy generation. fp32 on
// both sides, summed in different orders: logits of O(1) agree to 1e-4
// (observed on PoCL: ~1e-6).
//
// Built once per GPU API (ATTN_GPU_API); skips where no device of the API
// runs here. CI runs the OpenCL build on PoCL's CPU device.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/DeviceProbe.h"
#include "attn/runtime/Generator.h"
#include "attn/runtime/Model.h"
#include "attn/runtime/attn_runtime.h"

#define ATTN_STRING2(x) #x
#define ATTN_STRING(x) ATTN_STRING2(x)
#define ATTN_CAT3(a, b, c) a##b##c
#define ATTN_JOIN(a, b, c) ATTN_CAT3(a, b, c)
/// A generated model's symbol: ATTN_GPU_API's build of `model`.
#define MODEL(model, what) ATTN_JOIN(ATTN_GPU_API, _##model##_, what)
#include ATTN_LLAMA_HEADER       // <api>_llama.h
#include ATTN_ENCDEC_HEADER      // <api>_encdec.h
#include ATTN_ENCDEC_INT8_HEADER // <api>_encdec_int8.h
#include ATTN_LLAMA_BF16_HEADER  // <api>_llama_bf16.h

#include "TestDirectory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <dlfcn.h>

using namespace attn::runtime;

#ifdef ATTN_APPLICATION_CL_CONTEXT
// The application's own OpenCL context and queue, handed to the model
// library's Halide runtime by overriding its weak halide_acquire_cl_context
// (docs/cuda-tensor-cores.md, "One context and stream"): every device call
// of these tests, the runtime's copies included, then runs in it.
namespace {
std::atomic<int> applicationContextUses{0};
void *applicationContext, *applicationQueue;

bool createApplicationContext() {
  void *cl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!cl)
    return false;
  using Platforms = int32_t (*)(uint32_t, void **, uint32_t *);
  using Devices = int32_t (*)(void *, uint64_t, uint32_t, void **, uint32_t *);
  using Context = void *(*)(const intptr_t *, uint32_t, void *const *, void *,
                            void *, int32_t *);
  using Queue = void *(*)(void *, void *, uint64_t, int32_t *);
  auto platforms = reinterpret_cast<Platforms>(dlsym(cl, "clGetPlatformIDs"));
  auto devices = reinterpret_cast<Devices>(dlsym(cl, "clGetDeviceIDs"));
  auto context = reinterpret_cast<Context>(dlsym(cl, "clCreateContext"));
  auto queue = reinterpret_cast<Queue>(dlsym(cl, "clCreateCommandQueue"));
  void *platform = nullptr, *device = nullptr;
  uint32_t count = 0;
  int32_t error = 0;
  if (!platforms || !devices || !context || !queue ||
      platforms(1, &platform, &count) != 0 || count == 0 ||
      devices(platform, 0xFFFFFFFF, 1, &device, &count) != 0 || count == 0)
    return false;
  const intptr_t properties[] = {0x1084 /* CL_CONTEXT_PLATFORM */,
                                 intptr_t(platform), 0};
  applicationContext =
      context(properties, 1, &device, nullptr, nullptr, &error);
  if (!applicationContext || error != 0)
    return false;
  applicationQueue = queue(applicationContext, device, 0, &error);
  return applicationQueue && error == 0;
}
} // namespace

extern "C" int halide_acquire_cl_context(void *, void **context, void **queue,
                                         bool create) {
  static const bool created = createApplicationContext();
  if (!created)
    return create ? -1 : 0;
  applicationContextUses++;
  *context = applicationContext;
  *queue = applicationQueue;
  return 0;
}

extern "C" int halide_release_cl_context(void *) { return 0; }
#endif

namespace {

const std::string kApi = ATTN_STRING(ATTN_GPU_API);
constexpr double kTolerance = 1e-4;

struct Library {
  const char *name, *plan;
  const attnc_kernel_entry *table;
  size_t size;
  const attnc_device_api *device;
  WeightNaming naming;
};

#define LIBRARY(model, naming)                                                 \
  Library {                                                                    \
#model, MODEL(model, plan_json), MODEL(model, kernel_table),               \
        sizeof MODEL(model, kernel_table) /                                    \
            sizeof MODEL(model, kernel_table)[0], &MODEL(model, device_api),   \
                                              naming                           \
  }

const Library kLlama = LIBRARY(llama, WeightNaming::Llama);
const Library kEncDec = LIBRARY(encdec, WeightNaming::Bart);
const Library kEncDecInt8 = LIBRARY(encdec_int8, WeightNaming::Bart);
const Library kLlamaBf16 = LIBRARY(llama_bf16, WeightNaming::Llama);

/// The same random weights, loaded for the CPU and for the device.
struct Pair {
  std::unique_ptr<Model> cpu, gpu;
};

Pair loadBoth(const Library &library) {
  Pair pair;
  const auto *table = reinterpret_cast<const KernelEntry *>(library.table);
  ModelPlan plan;
  Status s = parsePlan(library.plan, table, library.size, plan);
  EXPECT_TRUE(s) << s.message();
  std::string path =
      attn::test::testDirectory() + "/" + kApi + "_" + library.name + ".safetensors";
  s = Model::writeRandomWeights(plan, library.naming, 11, path);
  EXPECT_TRUE(s) << s.message();
  s = Model::load(library.plan, table, library.size, path, library.naming,
                  pair.cpu);
  EXPECT_TRUE(s) << s.message();
  s = Model::load(library.plan, table, library.size, path, library.naming,
                  *reinterpret_cast<const DeviceApi *>(library.device),
                  pair.gpu);
  EXPECT_TRUE(s) << s.message();
  return pair;
}

double maxDifference(const std::vector<float> &a, const std::vector<float> &b) {
  double worst = a.size() == b.size() ? 0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); i++)
    worst = std::max(worst, std::isnan(a[i]) || std::isnan(b[i])
                                ? INFINITY
                                : std::fabs(double(a[i]) - b[i]));
  return worst;
}

class DeviceModelTest : public testing::Test {
protected:
  void SetUp() override {
    if (std::string why = whyNoDevice(kApi); !why.empty())
      GTEST_SKIP() << why;
  }
};

/// One model's caches and execution context on one side.
struct Side {
  explicit Side(const Model &model) : context(model) {}
  KvCache self, cross;
  ExecutionContext context;
};

void makeCaches(const Model &model, int sequences, Side &side) {
  KvCacheConfig config;
  ASSERT_TRUE(model.selfCacheConfig(sequences, config));
  ASSERT_TRUE(KvCache::create(config, side.self));
  KvCacheConfig crossConfig;
  ASSERT_TRUE(model.crossCacheConfig(sequences, crossConfig));
  if (crossConfig.numLayers > 0)
    ASSERT_TRUE(KvCache::create(crossConfig, side.cross));
}

TEST_F(DeviceModelTest, DecoderPrefillForkAndStepsMatchTheCpu) {
  Pair m = loadBoth(kLlama);
  ASSERT_TRUE(m.cpu && m.gpu);
  EXPECT_EQ(m.gpu->device(), kApi);
  const int vocabulary = m.cpu->targetVocabulary();
  Side cpu(*m.cpu), gpu(*m.gpu);
  makeCaches(*m.cpu, 2, cpu);
  makeCaches(*m.gpu, 2, gpu);
  // 13 tokens: most of the first page (16 tokens), which the fork shares.
  const std::vector<int32_t> prompt = {3, 14, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
  std::vector<float> cpuLogits(vocabulary), gpuLogits(vocabulary);
  SequenceId cpuA, gpuA, cpuB, gpuB;
  ASSERT_TRUE(cpu.self.addSequence(cpuA));
  ASSERT_TRUE(gpu.self.addSequence(gpuA));
  int32_t cpuGreedy = -1, gpuGreedy = -1;
  Status s = m.cpu->prefill(prompt.data(), int(prompt.size()), cpu.self, cpuA,
                            cpuLogits.data(), cpu.context, &cpuGreedy);
  ASSERT_TRUE(s) << s.message();
  s = m.gpu->prefill(prompt.data(), int(prompt.size()), gpu.self, gpuA,
                     gpuLogits.data(), gpu.context, &gpuGreedy);
  ASSERT_TRUE(s) << s.message();
  EXPECT_LE(maxDifference(cpuLogits, gpuLogits), kTolerance);
  EXPECT_EQ(cpuGreedy, gpuGreedy);

  // B shares A's pages; its first step copies the shared last page.
  ASSERT_TRUE(cpu.self.fork(cpuA, cpuB));
  ASSERT_TRUE(gpu.self.fork(gpuA, gpuB));
  std::vector<int32_t> tokens = {cpuGreedy, 4};
  for (int step = 0; step < 5; step++) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    std::vector<float> cpuStep(2 * vocabulary), gpuStep(2 * vocabulary);
    std::vector<int32_t> cpuBest(2), gpuBest(2);
    SequenceId cpuBatch[] = {cpuA, cpuB}, gpuBatch[] = {gpuA, gpuB};
    s = m.cpu->decodeStep(cpuBatch, nullptr, tokens.data(), 2, cpu.self,
                          nullptr, cpuStep.data(), cpu.context, nullptr,
                          cpuBest.data());
    ASSERT_TRUE(s) << s.message();
    s = m.gpu->decodeStep(gpuBatch, nullptr, tokens.data(), 2, gpu.self,
                          nullptr, gpuStep.data(), gpu.context, nullptr,
                          gpuBest.data());
    ASSERT_TRUE(s) << s.message();
    EXPECT_LE(maxDifference(cpuStep, gpuStep), kTolerance);
    EXPECT_EQ(cpuBest, gpuBest);
    tokens = cpuBest;
  }
  EXPECT_TRUE(gpu.self.checkInvariants());

  // Without a cache: the whole prefix at once.
  std::vector<int32_t> prefix = prompt;
  prefix.push_back(7);
  std::vector<float> cpuAll(prefix.size() * vocabulary), gpuAll(cpuAll.size());
  ASSERT_TRUE(m.cpu->decodeWithoutCache(prefix.data(), int(prefix.size()),
                                        nullptr, 0, cpuAll.data(),
                                        cpu.context));
  s = m.gpu->decodeWithoutCache(prefix.data(), int(prefix.size()), nullptr, 0,
                                gpuAll.data(), gpu.context);
  ASSERT_TRUE(s) << s.message();
  EXPECT_LE(maxDifference(cpuAll, gpuAll), kTolerance);
}

TEST_F(DeviceModelTest, Bf16CacheMatchesTheCpu) {
  // GPU kernels keep a bf16 pool as its uint16 bits (the runtime retypes
  // its bf16 views for them); the rounding is the CPU's, so both caches
  // hold the same bytes.
  Pair m = loadBoth(kLlamaBf16);
  ASSERT_TRUE(m.cpu && m.gpu);
  const int vocabulary = m.cpu->targetVocabulary();
  Side cpu(*m.cpu), gpu(*m.gpu);
  makeCaches(*m.cpu, 1, cpu);
  makeCaches(*m.gpu, 1, gpu);
  EXPECT_EQ(gpu.self.config().dtype, DType::BF16);
  SequenceId a, b;
  ASSERT_TRUE(cpu.self.addSequence(a));
  ASSERT_TRUE(gpu.self.addSequence(b));
  const std::vector<int32_t> prompt = {1, 5, 9, 14, 2, 6, 5, 3, 16, 8, 2};
  std::vector<float> cpuLogits(vocabulary), gpuLogits(vocabulary);
  ASSERT_TRUE(m.cpu->prefill(prompt.data(), int(prompt.size()), cpu.self, a,
                             cpuLogits.data(), cpu.context));
  Status s = m.gpu->prefill(prompt.data(), int(prompt.size()), gpu.self, b,
                            gpuLogits.data(), gpu.context);
  ASSERT_TRUE(s) << s.message();
  EXPECT_LE(maxDifference(cpuLogits, gpuLogits), kTolerance);
  for (int step = 0; step < 8; step++) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    int32_t token = (step * 7 + 3) % vocabulary;
    ASSERT_TRUE(m.cpu->decodeStep(&a, nullptr, &token, 1, cpu.self, nullptr,
                                  cpuLogits.data(), cpu.context));
    s = m.gpu->decodeStep(&b, nullptr, &token, 1, gpu.self, nullptr,
                          gpuLogits.data(), gpu.context);
    ASSERT_TRUE(s) << s.message();
    EXPECT_LE(maxDifference(cpuLogits, gpuLogits), kTolerance);
  }
}

TEST_F(DeviceModelTest, DecodeStepsKeepCachesAndActivationsOnTheDevice) {
  Pair m = loadBoth(kLlama);
  ASSERT_TRUE(m.gpu);
  Side gpu(*m.gpu);
  makeCaches(*m.gpu, 3, gpu);
  SequenceId a, b, c;
  ASSERT_TRUE(gpu.self.addSequence(a));
  ASSERT_TRUE(gpu.self.addSequence(b));
  const std::vector<int32_t> prompt = {3, 14, 1, 5};
  std::vector<float> logits(2 * m.gpu->targetVocabulary());
  for (SequenceId s : {a, b})
    ASSERT_TRUE(m.gpu->prefill(prompt.data(), int(prompt.size()), gpu.self, s,
                               logits.data(), gpu.context));
  SequenceId batch[] = {a, b};
  std::vector<int32_t> tokens = {1, 2}, best(2);
  auto step = [&] {
    Status s =
        m.gpu->decodeStep(batch, nullptr, tokens.data(), 2, gpu.self, nullptr,
                          logits.data(), gpu.context, nullptr, best.data());
    ASSERT_TRUE(s) << s.message();
    tokens = best;
  };
  step(); // the step's activations get their device copies
  DeviceResidentCopies before = deviceResidentCopies();
  // A fork shares a's pages; its first step copies the shared page (on the
  // device), then both grow into a second page (pages of 16 tokens).
  ASSERT_TRUE(gpu.self.fork(a, c));
  batch[1] = c;
  for (int i = 0; i < 14; i++)
    step();
  EXPECT_TRUE(gpu.self.checkInvariants());
  DeviceResidentCopies after = deviceResidentCopies();
  EXPECT_EQ(after.toDevice, before.toDevice);
  EXPECT_EQ(after.toHost, before.toHost);
}

TEST_F(DeviceModelTest, ACacheFilledOnTheDeviceDecodesOnTheCpu) {
  // One cache, prefilled by the GPU model, then stepped by the CPU model
  // and back: each side sees what the other wrote.
  Pair m = loadBoth(kLlama);
  ASSERT_TRUE(m.cpu && m.gpu);
  const int vocabulary = m.cpu->targetVocabulary();
  Side shared(*m.gpu), reference(*m.cpu);
  makeCaches(*m.cpu, 1, shared);
  makeCaches(*m.cpu, 1, reference);
  SequenceId a, r;
  ASSERT_TRUE(shared.self.addSequence(a));
  ASSERT_TRUE(reference.self.addSequence(r));
  const std::vector<int32_t> prompt = {4, 1, 16, 2, 9};
  std::vector<float> logits(vocabulary), expected(vocabulary);
  ASSERT_TRUE(m.gpu->prefill(prompt.data(), int(prompt.size()), shared.self, a,
                             logits.data(), shared.context));
  ASSERT_TRUE(m.cpu->prefill(prompt.data(), int(prompt.size()), reference.self,
                             r, expected.data(), reference.context));
  ExecutionContext cpuContext(*m.cpu);
  for (int step = 0; step < 4; step++) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    const Model &model = step % 2 == 0 ? *m.cpu : *m.gpu;
    ExecutionContext &context = step % 2 == 0 ? cpuContext : shared.context;
    int32_t token = 3 + step;
    Status s = model.decodeStep(&a, nullptr, &token, 1, shared.self, nullptr,
                                logits.data(), context);
    ASSERT_TRUE(s) << s.message();
    ASSERT_TRUE(m.cpu->decodeStep(&r, nullptr, &token, 1, reference.self,
                                  nullptr, expected.data(), reference.context));
    EXPECT_LE(maxDifference(logits, expected), kTolerance);
  }
}

void checkEncoderDecoder(const Library &library) {
  Pair m = loadBoth(library);
  ASSERT_TRUE(m.cpu && m.gpu);
  const int vocabulary = m.cpu->targetVocabulary();
  Side cpu(*m.cpu), gpu(*m.gpu);
  makeCaches(*m.cpu, 2, cpu);
  makeCaches(*m.gpu, 2, gpu);
  const std::vector<std::vector<int32_t>> sources = {{4, 8, 1, 10, 3, 4},
                                                     {2, 7, 1}};
  SequenceId cpuSelf[2], gpuSelf[2], cpuCross[2], gpuCross[2];
  for (int b = 0; b < 2; b++) {
    std::vector<float> cpuMemory, gpuMemory;
    const std::vector<int32_t> &source = sources[b];
    Status s = m.cpu->encode(source.data(), int(source.size()), cpuMemory,
                             cpu.context);
    ASSERT_TRUE(s) << s.message();
    s = m.gpu->encode(source.data(), int(source.size()), gpuMemory,
                      gpu.context);
    ASSERT_TRUE(s) << s.message();
    EXPECT_LE(maxDifference(cpuMemory, gpuMemory), kTolerance);
    for (Side *side : {&cpu, &gpu}) {
      SequenceId &self = side == &cpu ? cpuSelf[b] : gpuSelf[b];
      SequenceId &cross = side == &cpu ? cpuCross[b] : gpuCross[b];
      ASSERT_TRUE(side->self.addSequence(self));
      ASSERT_TRUE(side->cross.addSequence(cross));
    }
    ASSERT_TRUE(m.cpu->storeCrossKeyValues(cpuMemory.data(), int(source.size()),
                                           cpu.cross, cpuCross[b],
                                           cpu.context));
    s = m.gpu->storeCrossKeyValues(gpuMemory.data(), int(source.size()),
                                   gpu.cross, gpuCross[b], gpu.context);
    ASSERT_TRUE(s) << s.message();
  }
  std::vector<int32_t> tokens = {0, 0};
  for (int step = 0; step < 4; step++) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    std::vector<float> cpuLogits(2 * vocabulary), gpuLogits(2 * vocabulary);
    CrossAttentionTrace cpuTrace, gpuTrace;
    Status s =
        m.cpu->decodeStep(cpuSelf, cpuCross, tokens.data(), 2, cpu.self,
                          &cpu.cross, cpuLogits.data(), cpu.context, &cpuTrace);
    ASSERT_TRUE(s) << s.message();
    s = m.gpu->decodeStep(gpuSelf, gpuCross, tokens.data(), 2, gpu.self,
                          &gpu.cross, gpuLogits.data(), gpu.context, &gpuTrace);
    ASSERT_TRUE(s) << s.message();
    EXPECT_LE(maxDifference(cpuLogits, gpuLogits), kTolerance);
    ASSERT_EQ(cpuTrace.weights.size(), 2u);
    ASSERT_EQ(gpuTrace.weights.size(), 2u);
    for (int b = 0; b < 2; b++)
      EXPECT_LE(maxDifference(cpuTrace.weights[b], gpuTrace.weights[b]),
                kTolerance);
    for (int b = 0; b < 2; b++)
      tokens[b] =
          int32_t(std::max_element(cpuLogits.begin() + b * vocabulary,
                                   cpuLogits.begin() + (b + 1) * vocabulary) -
                  (cpuLogits.begin() + b * vocabulary));
  }
}

/// A second source's cross-attention K/V go straight into the device's
/// pools (the K/V projection appends them), and decode steps with both move
/// no resident allocation.
void checkCrossAttentionStaysOnTheDevice(const Library &library) {
  Pair m = loadBoth(library);
  ASSERT_TRUE(m.gpu);
  Side gpu(*m.gpu);
  makeCaches(*m.gpu, 2, gpu);
  const std::vector<std::vector<int32_t>> sources = {{4, 8, 1, 10, 3},
                                                     {2, 7, 1, 9, 9, 9, 5}};
  SequenceId self[2], cross[2];
  std::vector<float> memory[2];
  std::vector<float> logits(2 * m.gpu->targetVocabulary());
  std::vector<int32_t> tokens = {0, 0};
  auto store = [&](int b) {
    ASSERT_TRUE(gpu.self.addSequence(self[b]));
    ASSERT_TRUE(gpu.cross.addSequence(cross[b]));
    Status s =
        m.gpu->storeCrossKeyValues(memory[b].data(), int(sources[b].size()),
                                   gpu.cross, cross[b], gpu.context);
    ASSERT_TRUE(s) << s.message();
  };
  auto step = [&](int batch) {
    Status s = m.gpu->decodeStep(self, cross, tokens.data(), batch, gpu.self,
                                 &gpu.cross, logits.data(), gpu.context);
    ASSERT_TRUE(s) << s.message();
  };
  for (int b = 0; b < 2; b++)
    ASSERT_TRUE(m.gpu->encode(sources[b].data(), int(sources[b].size()),
                              memory[b], gpu.context));
  store(0);
  step(1); // the caches get their device copies
  DeviceResidentCopies before = deviceResidentCopies();
  store(1); // the second source's K/V go straight into the device's pools
  for (int i = 0; i < 3; i++)
    step(2);
  DeviceResidentCopies after = deviceResidentCopies();
  EXPECT_EQ(after.toDevice, before.toDevice);
  EXPECT_EQ(after.toHost, before.toHost);
}

TEST_F(DeviceModelTest, CrossAttentionKeysAndValuesAreStoredOnTheDevice) {
  checkCrossAttentionStaysOnTheDevice(kEncDec);
}

TEST_F(DeviceModelTest, Int8CachesAreWrittenOnTheDevice) {
  checkCrossAttentionStaysOnTheDevice(kEncDecInt8);
}

TEST_F(DeviceModelTest, EncoderDecoderMatchesTheCpu) {
  checkEncoderDecoder(kEncDec);
}

TEST_F(DeviceModelTest, Int8CacheMatchesTheCpu) {
  checkEncoderDecoder(kEncDecInt8);
}

TEST_F(DeviceModelTest, GreedyGenerationMatchesTheCpu) {
  Pair m = loadBoth(kLlama);
  ASSERT_TRUE(m.cpu && m.gpu);
  std::vector<std::vector<int32_t>> generated;
  for (const Model *model : {m.cpu.get(), m.gpu.get()}) {
    std::unique_ptr<Generator> generator;
    ASSERT_TRUE(Generator::create(*model, 3, generator));
    for (const std::vector<int32_t> &prompt :
         {std::vector<int32_t>{1, 2, 3}, std::vector<int32_t>{9},
          std::vector<int32_t>{5, 5, 5, 5, 5, 5, 5, 5, 5}}) {
      GenerationRequest request;
      request.prompt = prompt;
      request.maxNewTokens = 6;
      int id;
      ASSERT_TRUE(generator->submit(request, id));
    }
    Status s = generator->run();
    ASSERT_TRUE(s) << s.message();
    for (int id = 0; id < generator->requests(); id++)
      generated.push_back(generator->tokens(id));
  }
  ASSERT_EQ(generated.size(), 6u);
  for (int id = 0; id < 3; id++)
    EXPECT_EQ(generated[id], generated[id + 3]) << "request " << id;
}

#ifdef ATTN_APPLICATION_CL_CONTEXT
TEST_F(DeviceModelTest, DeviceWorkRunsInTheApplicationsContext) {
  Pair m = loadBoth(kLlama);
  ASSERT_TRUE(m.gpu);
  Side gpu(*m.gpu);
  makeCaches(*m.gpu, 1, gpu);
  SequenceId a;
  ASSERT_TRUE(gpu.self.addSequence(a));
  const int before = applicationContextUses.load();
  const std::vector<int32_t> prompt = {3, 1, 4};
  std::vector<float> logits(m.gpu->targetVocabulary());
  Status s = m.gpu->prefill(prompt.data(), int(prompt.size()), gpu.self, a,
                            logits.data(), gpu.context);
  ASSERT_TRUE(s) << s.message();
  EXPECT_GT(applicationContextUses.load(), before);
}
#endif

/// Greedy tokens of `prompt` through the C API, on the device or not.
std::vector<int32_t>
generateThroughTheCApi(const std::string &weights, const void *device,
                       const std::vector<int32_t> &prompt) {
  attn_model *model = nullptr;
  attn_status status = attn_model_load_on_device(
      kLlama.plan, kLlama.table, kLlama.size, weights.c_str(),
      ATTN_NAMING_LLAMA, device, &model);
  EXPECT_EQ(status, ATTN_OK) << attn_last_error();
  attn_generator *generator = nullptr;
  int32_t request = -1, count = 0;
  std::vector<int32_t> tokens(8);
  attn_finish_reason reason;
  if (model && attn_generator_create(model, 1, &generator) == ATTN_OK &&
      attn_generator_submit(generator, prompt.data(), int32_t(prompt.size()), 8,
                            nullptr, 0, nullptr, nullptr, nullptr,
                            &request) == ATTN_OK &&
      attn_generator_run(generator) == ATTN_OK)
    EXPECT_EQ(attn_generator_result(generator, request, tokens.data(),
                                    int32_t(tokens.size()), &count, &reason),
              ATTN_OK);
  attn_generator_destroy(generator);
  attn_model_destroy(model);
  tokens.resize(count);
  return tokens;
}

TEST_F(DeviceModelTest, CApiLoadsOnTheDevice) {
  Pair m = loadBoth(kLlama); // writes the weights file
  const std::string weights =
      attn::test::testDirectory() + "/" + kApi + "_" + kLlama.name + ".safetensors";
  const std::vector<int32_t> prompt = {2, 7, 1, 8};
  std::vector<int32_t> cpu = generateThroughTheCApi(weights, nullptr, prompt);
  std::vector<int32_t> gpu =
      generateThroughTheCApi(weights, kLlama.device, prompt);
  EXPECT_EQ(cpu.size(), 8u);
  EXPECT_EQ(cpu, gpu);
}

TEST(DeviceModelLoad, WithoutADeviceLoadingSaysWhy) {
  const std::string why = whyNoDevice(kApi);
  if (why.empty())
    GTEST_SKIP() << "a " << kApi << " device is present";
  const auto *table = reinterpret_cast<const KernelEntry *>(kLlama.table);
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kLlama.plan, table, kLlama.size, plan));
  const std::string path = attn::test::testDirectory() + "/" + kApi +
                           "_nodevice.safetensors";
  ASSERT_TRUE(Model::writeRandomWeights(plan, kLlama.naming, 1, path));
  std::unique_ptr<Model> model;
  Status s =
      Model::load(kLlama.plan, table, kLlama.size, path, kLlama.naming,
                  *reinterpret_cast<const DeviceApi *>(kLlama.device), model);
  EXPECT_EQ(s.code(), StatusCode::NotFound);
  EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  EXPECT_FALSE(model);
}

TEST(DeviceModelLoad, ALibraryWithoutTheDevicesKernelsIsRefused) {
  std::string plan = kLlama.plan;
  const std::string listed = "\"" + kApi + "\"";
  plan.replace(plan.find(listed), listed.size(), "\"metal\"");
  ModelPlan parsed;
  Status s =
      parsePlan(plan, reinterpret_cast<const KernelEntry *>(kLlama.table),
                kLlama.size, parsed, kApi);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("holds no " + kApi + " kernels"),
            std::string::npos)
      << s.message();
}

} // namespace
