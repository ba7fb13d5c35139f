//===- SdpaDecompositionTest.cpp - --attn-decompose-sdpa, run on the CPU --===//
//
// The tiled online softmax that --attn-decompose-sdpa writes (the
// decomposition the GPU lowering tiles further) lowered by MLIR's own CPU
// pipeline (bufferization, loops, LLVM), JIT-compiled and run against
// attn.sdpa's interpreter in double (mlir::attn::interpretSdpa), over a
// seeded random matrix of ops: MHA / GQA / MQA, causal or not, sliding
// windows, softcap, ALiBi, explicit scales, key tiles of 1 to 64 keys; and
// per op several shapes (batch 1-2, query rows 1-19, keys equal to the rows
// or more, as in a decode step, tiles that do not divide the keys); every
// fourth op has static batch and lengths, as a specialized kernel would.
//
// Tolerance: 1e-5 absolute (fp32 sums of up to 64 products and the online
// rescaling against double; outputs are weighted means of values in
// [-1, 1]).
//
//===----------------------------------------------------------------------===//

#include "../SdpaOpSource.h"
#include "attn/AttnDialect.h"
#include "attn/AttnPasses.h"
#include "attn/Interpreter.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

namespace {

/// One attn.sdpa and the key and query tiles it is decomposed with.
struct OpCase : attn::test::SdpaOpAttributes {
  int kvTile = 64;
  int queryTile = 0; ///< 0: no scf.forall over query tiles
  /// Static batch and lengths (a kernel specialized for one prompt), or
  /// all dynamic.
  attn::test::SdpaStaticSizes sizes;
};

std::string describe(const OpCase &c) {
  std::ostringstream s;
  s << "Hq " << c.queryHeads << " Hkv " << c.kvHeads << " D " << c.headDim
    << (c.causal ? " causal" : "") << " window " << c.window << " scale "
    << c.scale << " softcap " << c.softcap << (c.alibi ? " alibi" : "")
    << " kv-tile " << c.kvTile << " query-tile " << c.queryTile;
  if (c.sizes.batch)
    s << " static " << c.sizes.batch << "x" << c.sizes.queryLength << "x"
      << c.sizes.keyLength;
  return s.str();
}

std::string sdpaSource(const OpCase &c) {
  return attn::test::sdpaFuncSource(c, "sdpa", /*cInterface=*/true, c.sizes);
}

/// The decomposition, then MLIR's CPU pipeline (the passes of the module
/// the pass manager runs on): the result becomes an out
/// parameter, loops carry new buffers from one key tile to the next, and
/// the query tiles' scf.forall runs as a sequential loop.
std::string lowering(int kvTile, int queryTile) {
  return "func.func(attn-decompose-sdpa{kv-tile=" + std::to_string(kvTile) +
         " query-tile=" + std::to_string(queryTile) +
         "}),one-shot-bufferize{bufferize-function-boundaries "
         "allow-return-allocs-from-loops "
         "function-boundary-type-conversion=identity-layout-map},"
         "func.func(scf-forall-to-for),"
         "buffer-results-to-out-params,buffer-deallocation-pipeline,"
         "func.func(convert-linalg-to-loops),expand-strided-metadata,"
         "lower-affine,convert-scf-to-cf,convert-math-to-libm,"
         "finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts";
}

class SdpaDecompositionTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
    mlir::attn::registerAttnPasses();
  }

  SdpaDecompositionTest() {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    registry.insert<mlir::attn::AttnDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  mlir::MLIRContext context;
};

using Memref = StridedMemRefType<float, 4>;

Memref view(std::vector<float> &data, int64_t batch, int64_t tokens,
            int64_t heads, int64_t dim) {
  Memref m;
  m.basePtr = m.data = data.data();
  m.offset = 0;
  const int64_t sizes[4] = {batch, tokens, heads, dim};
  const int64_t strides[4] = {tokens * heads * dim, heads * dim, dim, 1};
  for (int i = 0; i < 4; i++)
    m.sizes[i] = sizes[i], m.strides[i] = strides[i];
  return m;
}

TEST_F(SdpaDecompositionTest, MatchesTheInterpreterOnRandomOps) {
  std::mt19937 rng(22);
  auto pick = [&](auto... options) {
    const std::vector<std::common_type_t<decltype(options)...>> list = {
        options...};
    return list[std::uniform_int_distribution<size_t>(0, list.size() - 1)(rng)];
  };
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  int cases = 0;
  for (int n = 0; n < 24; n++) {
    OpCase c;
    const std::pair<int, int> heads = pick(std::pair{4, 4}, std::pair{8, 2},
                                           std::pair{6, 1}, std::pair{2, 2});
    c.queryHeads = heads.first, c.kvHeads = heads.second;
    c.headDim = pick(4, 8, 16, 32);
    c.causal = n % 2 == 1;
    c.window = c.causal && n % 4 == 3 ? pick(1, 3, 7) : 0;
    c.scale = n % 6 == 5 ? 0.3f : 0.0f;
    c.softcap = n % 5 == 4 ? pick(5.0f, 30.0f) : 0.0f;
    c.alibi = n % 3 == 2;
    c.kvTile = pick(1, 4, 7, 16, 64);
    // Tiles that divide the rows, leave a shorter last tile, or hold them
    // all (causal or not, static or not); every third op untiled.
    c.queryTile = n % 3 != 1 ? pick(1, 2, 4, 7, 32) : 0;
    auto pickShape = [&] {
      const int qLen = pick(1, 2, 5, 19);
      return attn::test::SdpaStaticSizes{pick(1, 2), qLen,
                                         qLen + pick(0, 0, 3, 13, 40)};
    };
    if (n % 4 == 0) // every fourth op on static sizes, its shapes all those
      c.sizes = pickShape();
    SCOPED_TRACE(describe(c));

    const std::string source = sdpaSource(c);
    mlir::OwningOpRef<mlir::ModuleOp> reference =
        mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    ASSERT_TRUE(reference && module) << source;
    mlir::attn::SdpaOp op;
    reference->walk([&](mlir::attn::SdpaOp found) { op = found; });
    ASSERT_TRUE(op);

    mlir::PassManager pm(&context);
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    ASSERT_TRUE(mlir::succeeded(mlir::parsePassPipeline(
        lowering(c.kvTile, c.queryTile), pm, errorStream)))
        << errors;
    ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << source;
    mlir::ExecutionEngineOptions options;
    options.transformer = mlir::makeOptimizingTransformer(2, 0, nullptr);
    const llvm::StringRef runnerUtils[] = {MLIR_C_RUNNER_UTILS};
    options.sharedLibPaths = runnerUtils;
    auto engine = mlir::ExecutionEngine::create(*module, options);
    ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());

    for (int shape = 0; shape < 4; shape++) {
      const attn::test::SdpaStaticSizes sizes =
          c.sizes.batch ? c.sizes : pickShape();
      const int batch = sizes.batch, qLen = sizes.queryLength,
                kvLen = sizes.keyLength;
      SCOPED_TRACE(testing::Message() << "batch " << batch << " q_len " << qLen
                                      << " kv_len " << kvLen);
      const int hq = c.queryHeads, hkv = c.kvHeads, dim = c.headDim;
      std::vector<float> q(size_t(batch) * qLen * hq * dim),
          k(size_t(batch) * kvLen * hkv * dim), v(k.size()), out(q.size(), NAN);
      for (std::vector<float> *tensor : {&q, &k, &v})
        for (float &x : *tensor)
          x = uniform(rng);
      Memref qm = view(q, batch, qLen, hq, dim),
             km = view(k, batch, kvLen, hkv, dim),
             vm = view(v, batch, kvLen, hkv, dim),
             om = view(out, batch, qLen, hq, dim);
      Memref *qp = &qm, *kp = &km, *vp = &vm, *op_ = &om;
      void *args[] = {&qp, &kp, &vp, &op_};
      llvm::Error error = (*engine)->invokePacked("_mlir_ciface_sdpa", args);
      ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));

      const std::vector<double> expected =
          mlir::attn::interpretSdpa(op, q, k, v, batch, qLen, kvLen);
      ASSERT_EQ(expected.size(), out.size());
      double worst = 0;
      for (size_t i = 0; i < out.size(); i++)
        worst = std::max(worst, std::abs(double(out[i]) - expected[i]));
      EXPECT_LE(worst, 1e-5);
      cases++;
    }
  }
  EXPECT_EQ(cases, 96);
}

// The option is checked: a tile of no keys is an error, not a loop that
// never ends.
TEST_F(SdpaDecompositionTest, RefusesATileOfNoKeys) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(sdpaSource({4, 4, 8}), &context);
  ASSERT_TRUE(module);
  mlir::PassManager pm(&context);
  ASSERT_TRUE(mlir::succeeded(mlir::parsePassPipeline(
      "func.func(attn-decompose-sdpa{kv-tile=0})", pm)));
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str();
    return mlir::success();
  });
  EXPECT_TRUE(mlir::failed(pm.run(*module)));
  EXPECT_NE(diagnostics.find("kv-tile must be positive, not 0"),
            std::string::npos)
      << diagnostics;
}

} // namespace
