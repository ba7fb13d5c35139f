//===- OpSemanticsTest.cpp - the math-level ops against the kernels -------===//
//
// The math-level ops state what attention computes (AttnOps.td); the Halide
// kernels implement it. Here each of a seeded random matrix of attn.sdpa ops
// (MHA / GQA / MQA, causal or not, sliding windows, softcap, ALiBi, default
// or explicit scale; q_len below, equal to and above kv_len) is parsed and
// verified as attnc would, interpreted from its attributes
// (mlir::attn::interpretSdpa), and its attributes converted to a kernel spec
// by attnc's own conversion (attnc::attentionSettings). The kernel built
// from that spec must match the interpretation, and the interpretation must
// match the tests' independent double reference (Reference.h): two
// references written apart, one of them from the op's description.
//
// Tolerances: kernel against either reference 1e-5 absolute in fp32 (as in
// SdpaTest.cpp); the two double references agree to 1e-12.
//
// attn.rope likewise, against the RoPE epilogue of the linear kernel attnc
// fuses it into (identity weights, so the kernel's output is the rotated
// input): theta and the scaling rules (default, linear, llama3) converted
// by attnc's own conversion (attnc::ropeScaling). Tolerance 2e-5: fp32
// angles up to 300 rad, as both compute them, then fp32 cos/sin in the
// kernel against double in the interpreter.
//
// attn.project likewise, against the linear kernel with its bias and
// residual epilogue (tolerance 1e-4: fp32 sums of up to 160 products); and
// the cache ops (declare, append, view) against the runtime's KvCache, whose
// pools the decode kernels read.
//
//===----------------------------------------------------------------------===//

#include "../SdpaOpSource.h"
#include "OpSemanticsOps.h"
#include "Reference.h"

#include "attn/runtime/KvCache.h"
#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace attn::test;

namespace {

/// One attn.sdpa and the shapes it runs on.
struct OpCase : SdpaOpAttributes {
  int batch, qLen, kvLen;
};

std::string sdpaSource(const OpCase &c) { return sdpaFuncSource(c, "f"); }

std::vector<OpCase> makeCases() {
  std::mt19937 rng(20261202);
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + rng() % values.size());
  };
  std::vector<OpCase> cases;
  for (int n = 0; n < 24; n++) {
    OpCase c;
    c.kvHeads = pick({1, 2, 3});
    c.queryHeads = c.kvHeads * pick({1, 2, 4});
    c.headDim = pick({8, 13, 32, 64});
    c.causal = n % 2 == 0;
    if (n % 4 == 0) // windows are causal
      c.window = pick({1, 4, 30});
    if (n % 3 == 1)
      c.scale = 0.3f;
    if (n % 5 == 2)
      c.softcap = 1.5f;
    c.alibi = n % 6 == 3;
    c.batch = 1 + int(rng() % 2);
    c.kvLen = pick({1, 9, 70});
    c.qLen = n % 3 == 0 ? c.kvLen : pick({1, 4, 20}); // below, equal, above
    cases.push_back(c);
  }
  return cases;
}

/// The kernel attnc builds for `settings` on the host, run on q, k and v.
std::vector<float> runKernel(const attn::AttentionSettings &settings,
                             const OpCase &c, const std::vector<float> &q,
                             const std::vector<float> &k,
                             const std::vector<float> &v) {
  attn::SdpaSpec spec;
  static_cast<attn::AttentionSettings &>(spec) = settings;
  spec.functionName = "semantics";
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, target);
  Halide::Buffer<float> qb(c.headDim, c.queryHeads, c.qLen, c.batch),
      kb(c.headDim, c.kvHeads, c.kvLen, c.batch),
      vb(c.headDim, c.kvHeads, c.kvLen, c.batch),
      out(c.headDim, c.queryHeads, c.qLen, c.batch);
  std::copy(q.begin(), q.end(), qb.data());
  std::copy(k.begin(), k.end(), kb.data());
  std::copy(v.begin(), v.end(), vb.data());
  Halide::ParamMap params;
  params.set(kernel.inputs[0], qb);
  params.set(kernel.inputs[1], kb);
  params.set(kernel.inputs[2], vb);
  kernel.pipeline.realize(out, target, params);
  return std::vector<float>(out.data(), out.data() + out.number_of_elements());
}

class SdpaSemanticsTest : public testing::TestWithParam<OpCase> {};

TEST_P(SdpaSemanticsTest, KernelsComputeWhatTheOpSays) {
  const OpCase &c = GetParam();
  const std::string source = sdpaSource(c);
  SCOPED_TRACE(source + "batch " + std::to_string(c.batch) + " q_len " +
               std::to_string(c.qLen) + " kv_len " + std::to_string(c.kvLen));
  std::mt19937 rng(11);
  std::vector<float> q = randomVector(size_t(c.batch) * c.qLen * c.queryHeads *
                                          c.headDim,
                                      rng),
                     k = randomVector(size_t(c.batch) * c.kvLen * c.kvHeads *
                                          c.headDim,
                                      rng),
                     v = randomVector(k.size(), rng);
  InterpretedSdpa op =
      interpretSdpaSource(source, q, k, v, c.batch, c.qLen, c.kvLen);
  ASSERT_TRUE(op.error.empty()) << op.error;

  // The tests' own reference, from the case (not from the op).
  AttentionShape shape{
      c.batch,   c.qLen,
      c.kvLen,   c.queryHeads,
      c.kvHeads, c.headDim,
      c.causal,  c.scale ? c.scale : 1 / std::sqrt(float(c.headDim)),
      c.window,  c.softcap};
  if (c.alibi)
    shape.alibi = attn::alibiSlopes(c.queryHeads);
  std::vector<double> expected =
      referenceAttention(shape, q.data(), k.data(), v.data());
  double disagreement = 0;
  for (size_t i = 0; i < expected.size(); i++)
    disagreement =
        std::max(disagreement, std::fabs(expected[i] - op.result[i]));
  EXPECT_LE(disagreement, 1e-12) << "the op's interpretation and the tests' "
                                    "reference disagree";

  std::vector<float> got = runKernel(op.settings, c, q, k, v);
  EXPECT_LE(maxAbsError(got, op.result), 1e-5);
  EXPECT_LE(maxAbsError(got, expected), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(RandomOps, SdpaSemanticsTest,
                         testing::ValuesIn(makeCases()));

// The comparison sees each attribute: a kernel built without the op's
// window (or softcap, or ALiBi) is caught.
TEST(SdpaSemanticsTest, AKernelThatIgnoresAnAttributeIsCaught) {
  OpCase c{{4, 2, 16, true, 3, 0, 1.5f, true}, 1, 12, 12};
  std::mt19937 rng(3);
  std::vector<float> q = randomVector(size_t(12) * 4 * 16, rng),
                     k = randomVector(size_t(12) * 2 * 16, rng),
                     v = randomVector(k.size(), rng);
  InterpretedSdpa op = interpretSdpaSource(sdpaSource(c), q, k, v, 1, 12, 12);
  ASSERT_TRUE(op.error.empty()) << op.error;
  EXPECT_LE(maxAbsError(runKernel(op.settings, c, q, k, v), op.result), 1e-5);
  for (int drop = 0; drop < 3; drop++) {
    attn::AttentionSettings wrong = op.settings;
    if (drop == 0)
      wrong.window = 0;
    if (drop == 1)
      wrong.softcap = 0;
    if (drop == 2)
      wrong.alibi = false;
    EXPECT_GT(maxAbsError(runKernel(wrong, c, q, k, v), op.result), 1e-3)
        << "dropping attribute " << drop << " went unnoticed";
  }
}

// The op's verifier runs on the way in: an invalid op is no reference.
TEST(SdpaSemanticsTest, InvalidOpsAreRefusedBeforeInterpretation) {
  OpCase c{{3, 2, 16, true, 0, 0, 0, false}, 1, 4, 4}; // 3 heads over 2
  InterpretedSdpa op = interpretSdpaSource(sdpaSource(c), {}, {}, {}, 1, 4, 4);
  EXPECT_NE(op.error.find("num_query_heads"), std::string::npos) << op.error;
}

struct ProjectCase {
  int in, out;
  bool bias, residual;
  int heads; ///< > 0: the result split into heads of out / heads channels
  int batch, seq;
};

/// A func holding the one attn.project of `c`, dynamic batch and length.
std::string projectSource(const ProjectCase &c) {
  const std::string input = "tensor<?x?x" + std::to_string(c.in) + "xf32>";
  const std::string weight =
      "tensor<" + std::to_string(c.in) + "x" + std::to_string(c.out) + "xf32>";
  const std::string bias = "tensor<" + std::to_string(c.out) + "xf32>";
  const std::string result =
      c.heads ? "tensor<?x?x" + std::to_string(c.heads) + "x" +
                    std::to_string(c.out / c.heads) + "xf32>"
              : "tensor<?x?x" + std::to_string(c.out) + "xf32>";
  std::string arguments = "%x: " + input + ", %w: " + weight;
  std::string operands = "%x, %w", types = input + ", " + weight;
  if (c.bias) {
    arguments += ", %b: " + bias;
    operands += " bias(%b)";
    types += ", " + bias;
  }
  if (c.residual) {
    arguments += ", %r: " + result;
    operands += " residual(%r)";
    types += ", " + result;
  }
  return "func.func @f(" + arguments + ") -> " + result +
         " {\n  %y = attn.project " + operands + " : (" + types + ") -> " +
         result + "\n  func.return %y : " + result + "\n}\n";
}

/// The linear kernel attnc generates for a projection with `bias` and
/// `residual`, run on `input` [tokens][in] with W `weight` [in][out].
std::vector<float> runProjection(int in, int out, bool bias, bool residual,
                                 int tokens, const std::vector<float> &input,
                                 const std::vector<float> &weight,
                                 std::vector<float> biasValues,
                                 std::vector<float> residualValues) {
  attn::LinearSpec spec;
  spec.functionName = "project_semantics";
  spec.inFeatures = in;
  spec.outFeatures = out;
  spec.bias = bias;
  spec.residual = residual;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  Halide::Buffer<> packed = attn::packLinearWeights(weight.data(), in, out);
  Halide::Buffer<float> x(const_cast<float *>(input.data()), in, tokens),
      b(biasValues.data(), out), r(residualValues.data(), out, tokens),
      output(out, tokens);
  // The kernel's inputs in their declared order (kernelBuffers).
  Halide::ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], x);
  params.set(kernel.inputs[next++], packed);
  if (bias)
    params.set(kernel.inputs[next++], b);
  if (residual)
    params.set(kernel.inputs[next++], r);
  kernel.pipeline.realize(output, target, params);
  return std::vector<float>(output.data(),
                            output.data() + output.number_of_elements());
}

class ProjectSemanticsTest : public testing::TestWithParam<ProjectCase> {};

// attn.project interpreted from its description against the linear kernel
// attnc generates for it (bias and residual in its epilogue). Tolerance
// 1e-4 absolute: fp32 sums of up to 160 products of numbers in [-1, 1].
TEST_P(ProjectSemanticsTest, TheLinearKernelComputesWhatTheOpSays) {
  const ProjectCase &c = GetParam();
  const std::string source = projectSource(c);
  SCOPED_TRACE(source);
  const int tokens = c.batch * c.seq;
  std::mt19937 rng(29);
  std::vector<float> x = randomVector(size_t(tokens) * c.in, rng),
                     w = randomVector(size_t(c.in) * c.out, rng),
                     b = c.bias ? randomVector(c.out, rng)
                                : std::vector<float>(),
                     r = c.residual ? randomVector(size_t(tokens) * c.out, rng)
                                    : std::vector<float>();
  InterpretedProject op = interpretProjectSource(source, x, w, b, r, tokens);
  ASSERT_TRUE(op.error.empty()) << op.error;
  std::vector<float> got =
      runProjection(c.in, c.out, op.bias, op.residual, tokens, x, w, b, r);
  EXPECT_LE(maxAbsError(got, op.result), 1e-4);
  // Dropping the bias or the residual from the kernel is seen.
  if (c.bias || c.residual)
    EXPECT_GT(maxAbsError(runProjection(c.in, c.out, false, false, tokens, x, w,
                                        {}, {}),
                          op.result),
              1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, ProjectSemanticsTest,
    testing::Values(ProjectCase{8, 16, false, false, 0, 1, 3},
                    ProjectCase{64, 96, true, false, 4, 2, 5},
                    ProjectCase{160, 40, true, true, 0, 1, 7},
                    ProjectCase{32, 64, false, true, 2, 3, 2},
                    ProjectCase{48, 17, true, true, 0, 2, 9}));

// Operands that disagree with the op are no reference.
TEST(ProjectSemanticsTest, OperandsOfOtherSizesAreRefused) {
  ProjectCase c{8, 16, true, false, 0, 1, 2};
  InterpretedProject op = interpretProjectSource(
      projectSource(c), std::vector<float>(16, 1.0f),
      std::vector<float>(8 * 16, 1.0f), std::vector<float>(15, 0.0f), {}, 2);
  EXPECT_NE(op.error.find("sizes disagree"), std::string::npos) << op.error;
}

/// A decode step's cache ops at the math level: declare, append two
/// chunks, view, for a cache of `dtype` (MLIR's spelling).
std::string cacheSource(const std::string &dtype, int heads, int headDim,
                        int maxLength) {
  const std::string cache =
      "!attn.cache<heads = " + std::to_string(heads) +
      ", head_dim = " + std::to_string(headDim) +
      ", #attn.kv_cache<paged, page_size = 4, dtype = " + dtype +
      ", max_length = " + std::to_string(maxLength) + ">>";
  const std::string rows = "tensor<?x?x" + std::to_string(heads) + "x" +
                           std::to_string(headDim) + "xf32>";
  return "func.func @f(%k1: " + rows + ", %v1: " + rows + ", %k2: " + rows +
         ", %v2: " + rows + ") -> (" + rows + ", " + rows +
         ") {\n  %c0 = attn.cache_declare : " + cache +
         "\n  %c1 = attn.cache_append %c0, %k1, %v1 : " + cache + ", " + rows +
         "\n  %c2 = attn.cache_append %c1, %k2, %v2 : " + cache + ", " + rows +
         "\n  %keys, %values = attn.cache_view %c2 : " + cache + " -> " + rows +
         "\n  func.return %keys, %values : " + rows + ", " + rows + "\n}\n";
}

class CacheSemanticsTest : public testing::TestWithParam<attn::DType> {};

// The cache ops interpreted from their descriptions (values converted to
// the cache's element type with LLVM's APFloat, i8 rows quantized as
// #attn.kv_cache says) against the runtime's KvCache, their in-place
// implementation, whose pools the decode kernels read: the same values
// back, exactly for f32, f16 and bf16; i8 within 1e-6 (its scale is a
// float division on both sides, then a product the runtime rounds to
// float).
TEST_P(CacheSemanticsTest, TheRuntimeCacheStoresWhatTheOpsSay) {
  const attn::DType dtype = GetParam();
  const int batch = 2, heads = 2, headDim = 8, maxLength = 12;
  const std::string source =
      cacheSource(attn::dtypeName(dtype), heads, headDim, maxLength);
  SCOPED_TRACE(source);
  std::mt19937 rng(41);
  const size_t row = size_t(heads) * headDim;
  std::vector<CacheAppendArguments> appends = {
      {randomVector(batch * 5 * row, rng), randomVector(batch * 5 * row, rng),
       5},
      {randomVector(batch * 3 * row, rng), randomVector(batch * 3 * row, rng),
       3}};
  for (float &x : appends[1].key) // values beyond f16's and bf16's precision
    x *= 1000.0f;
  InterpretedCacheView op = interpretCacheSource(source, batch, appends);
  ASSERT_TRUE(op.error.empty()) << op.error;
  ASSERT_EQ(op.kvLen, 8);

  attn::runtime::KvCacheConfig config;
  config.numLayers = 1;
  config.numKvHeads = heads;
  config.headDim = headDim;
  config.dtype = dtype;
  config.pageSize = 4;
  config.numPages = 8;
  config.maxSequenceLength = maxLength;
  attn::runtime::KvCache cache;
  ASSERT_TRUE(attn::runtime::KvCache::create(config, cache).ok());
  std::vector<float> keys, values;
  for (int b = 0; b < batch; b++) {
    attn::runtime::SequenceId id;
    ASSERT_TRUE(cache.addSequence(id).ok());
    int position = 0;
    for (const CacheAppendArguments &a : appends) {
      ASSERT_TRUE(cache.extend(id, a.tokens).ok());
      const size_t at = size_t(b) * a.tokens * row;
      ASSERT_TRUE(cache
                      .write(id, 0, position, a.tokens, a.key.data() + at,
                             a.value.data() + at)
                      .ok());
      position += a.tokens;
    }
    std::vector<float> k(position * row), v(position * row);
    ASSERT_TRUE(cache.read(id, 0, 0, position, k.data(), v.data()).ok());
    keys.insert(keys.end(), k.begin(), k.end());
    values.insert(values.end(), v.begin(), v.end());
  }
  const double tolerance = dtype == attn::DType::I8 ? 1e-6 * 1000 : 0.0;
  EXPECT_LE(maxAbsError(keys, op.keys), tolerance);
  EXPECT_LE(maxAbsError(values, op.values), tolerance);
  // The narrow types did round: the interpretation is no copy of the input.
  if (dtype != attn::DType::F32)
    EXPECT_GT(maxAbsError(appends[1].key,
                          std::vector<double>(op.keys.begin() + 5 * row,
                                              op.keys.begin() + 8 * row)),
              1e-3);
}

INSTANTIATE_TEST_SUITE_P(DTypes, CacheSemanticsTest,
                         testing::Values(attn::DType::F32, attn::DType::F16,
                                         attn::DType::BF16, attn::DType::I8),
                         [](const testing::TestParamInfo<attn::DType> &info) {
                           return std::string(attn::dtypeName(info.param));
                         });

// Appending past max_length is an error, as the runtime's is.
TEST(CacheSemanticsTest, AppendingPastMaxLengthIsRefused) {
  const size_t row = 2 * 8;
  std::vector<CacheAppendArguments> appends = {
      {std::vector<float>(10 * row, 1.0f), std::vector<float>(10 * row, 1.0f),
       10},
      {std::vector<float>(3 * row, 1.0f), std::vector<float>(3 * row, 1.0f),
       3}};
  InterpretedCacheView op =
      interpretCacheSource(cacheSource("f32", 2, 8, 12), 1, appends);
  EXPECT_NE(op.error.find("past the cache's max_length (12 tokens)"),
            std::string::npos)
      << op.error;
}

struct RopeCase {
  int heads, headDim;
  float theta;
  std::string scaling; ///< the MLIR dictionary, or empty
  int batch, seq;
};

std::string ropeSource(const RopeCase &c) {
  const std::string input = "tensor<?x?x" + std::to_string(c.heads) + "x" +
                            std::to_string(c.headDim) + "xf32>";
  std::ostringstream theta; // MLIR float literals need a point
  theta << std::scientific << c.theta;
  return "func.func @f(%x: " + input + ", %pos: tensor<?x?xi32>) -> " + input +
         " {\n  %r = attn.rope %x, %pos {theta = " + theta.str() + " : f32" +
         (c.scaling.empty() ? "" : ", scaling = " + c.scaling) +
         "} : " + input + ", tensor<?x?xi32>\n  func.return %r : " + input +
         "\n}\n";
}

std::vector<RopeCase> makeRopeCases() {
  const std::string llama3 =
      "{rope_type = \"llama3\", factor = 8.0, low_freq_factor = 1.0, "
      "high_freq_factor = 4.0, original_max_position_embeddings = 64}";
  return {{1, 8, 10000, "", 1, 5},
          {3, 16, 10000, "", 2, 7},
          {4, 64, 500000, "", 1, 33},
          {2, 64, 10000, "{rope_type = \"linear\", factor = 2.5}", 2, 9},
          {2, 64, 500000, llama3, 1, 40},
          {1, 128, 500000, llama3, 2, 3},
          {2, 32, 10000, "{rope_type = \"default\"}", 1, 6}};
}

class RopeSemanticsTest : public testing::TestWithParam<RopeCase> {};

TEST_P(RopeSemanticsTest, TheFusedEpilogueRotatesAsTheOpSays) {
  const RopeCase &c = GetParam();
  const std::string source = ropeSource(c);
  SCOPED_TRACE(source);
  const int features = c.heads * c.headDim, tokens = c.batch * c.seq;
  std::mt19937 rng(17);
  std::vector<float> x = randomVector(size_t(tokens) * features, rng);
  std::vector<int32_t> positions(tokens);
  for (int32_t &p : positions)
    p = int32_t(rng() % 300);
  InterpretedRope op =
      interpretRopeSource(source, x, positions, c.batch, c.seq);
  ASSERT_TRUE(op.error.empty()) << op.error;

  // The kernel attnc fuses attn.rope into: a projection (here by the
  // identity) with the RoPE epilogue over all its heads.
  attn::LinearSpec spec;
  spec.functionName = "rope_semantics";
  spec.inFeatures = spec.outFeatures = features;
  spec.ropeTheta = op.theta;
  spec.ropeHeads = c.heads;
  spec.ropeHeadDim = c.headDim;
  spec.ropeScaling = op.scaling;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  std::vector<float> identity(size_t(features) * features, 0.0f);
  for (int k = 0; k < features; k++)
    identity[size_t(k) * features + k] = 1.0f;
  Halide::Buffer<> weight =
      attn::packLinearWeights(identity.data(), features, features);
  Halide::Buffer<float> input(x.data(), features, tokens),
      output(features, tokens);
  Halide::Buffer<int32_t> at(positions.data(), tokens);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], input);
  params.set(kernel.inputs[1], weight);
  params.set(kernel.inputs[2], at);
  kernel.pipeline.realize(output, target, params);
  std::vector<float> got(output.data(),
                         output.data() + output.number_of_elements());
  EXPECT_LE(maxAbsError(got, op.result), 2e-5);
}

INSTANTIATE_TEST_SUITE_P(Ops, RopeSemanticsTest,
                         testing::ValuesIn(makeRopeCases()));

// A scaling rule the interpreter does not know is no reference.
TEST(RopeSemanticsTest, UninterpretedScalingIsSaid) {
  RopeCase c{1,
             8,
             10000,
             "{rope_type = \"dynamic\", factor = 2.0, "
             "original_max_position_embeddings = 16}",
             1,
             2};
  InterpretedRope op = interpretRopeSource(
      ropeSource(c), std::vector<float>(16, 0.5f), {0, 1}, 1, 2);
  EXPECT_NE(op.error.find("no rope scaling 'dynamic'"), std::string::npos)
      << op.error;
}

} // namespace
