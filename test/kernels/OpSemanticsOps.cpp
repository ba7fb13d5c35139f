//===- OpSemanticsOps.cpp - math-level ops parsed and interpreted ---------===//

#include "OpSemanticsOps.h"

#include "KernelSpecs.h"

#include "attn/AttnDialect.h"
#include "attn/AttnOps.h"
#include "attn/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

namespace attn::test {

namespace {
/// Parses `source` in `context` and finds its one `Op`; parser and verifier
/// messages go to `error`.
template <class Op>
Op parseOne(mlir::MLIRContext &context, const std::string &source,
            mlir::OwningOpRef<mlir::ModuleOp> &module, std::string &error) {
  context.loadDialect<mlir::attn::AttnDialect, mlir::func::FuncDialect,
                      mlir::tensor::TensorDialect>();
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    error += d.str() + "\n";
    return mlir::success();
  });
  module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  Op op;
  if (module)
    module->walk([&](Op found) { op = found; });
  if (module && !op)
    error = "no " + Op::getOperationName().str();
  return op;
}
} // namespace

InterpretedSdpa interpretSdpaSource(const std::string &source,
                                    const std::vector<float> &query,
                                    const std::vector<float> &key,
                                    const std::vector<float> &value, int batch,
                                    int qLen, int kvLen) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  InterpretedSdpa result;
  auto op = parseOne<mlir::attn::SdpaOp>(context, source, module, result.error);
  if (!op)
    return result;
  result.settings = attnc::attentionSettings(op);
  result.result =
      mlir::attn::interpretSdpa(op, query, key, value, batch, qLen, kvLen);
  return result;
}

InterpretedRope interpretRopeSource(const std::string &source,
                                    const std::vector<float> &input,
                                    const std::vector<int32_t> &positions,
                                    int batch, int seq) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  InterpretedRope result;
  auto op = parseOne<mlir::attn::RopeOp>(context, source, module, result.error);
  if (!op)
    return result;
  result.theta = op.getTheta().convertToFloat();
  if (mlir::DictionaryAttr scaling = op.getScalingAttr())
    result.scaling = attnc::ropeScaling(scaling);
  result.result =
      mlir::attn::interpretRope(op, input, positions, batch, seq, result.error);
  return result;
}

InterpretedProject interpretProjectSource(const std::string &source,
                                          const std::vector<float> &input,
                                          const std::vector<float> &weight,
                                          const std::vector<float> &bias,
                                          const std::vector<float> &residual,
                                          int tokens) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  InterpretedProject result;
  auto op =
      parseOne<mlir::attn::ProjectOp>(context, source, module, result.error);
  if (!op)
    return result;
  result.bias = bool(op.getBias());
  result.residual = bool(op.getResidual());
  result.result = mlir::attn::interpretProject(op, input, weight, bias,
                                               residual, tokens, result.error);
  return result;
}

InterpretedCacheView
interpretCacheSource(const std::string &source, int batch,
                     const std::vector<CacheAppendArguments> &appends) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  InterpretedCacheView result;
  auto declare = parseOne<mlir::attn::CacheDeclareOp>(context, source, module,
                                                      result.error);
  if (!declare)
    return result;
  mlir::attn::InterpretedCache cache =
      mlir::attn::interpretCacheDeclare(declare, batch);
  size_t next = 0;
  module->walk([&](mlir::Operation *op) {
    if (!result.error.empty())
      return;
    if (auto append = llvm::dyn_cast<mlir::attn::CacheAppendOp>(op)) {
      if (next == appends.size()) {
        result.error = "more attn.cache_append ops than arguments";
        return;
      }
      const CacheAppendArguments &a = appends[next++];
      mlir::attn::interpretCacheAppend(append, cache, a.key, a.value, a.tokens,
                                       result.error);
    } else if (auto view = llvm::dyn_cast<mlir::attn::CacheViewOp>(op)) {
      mlir::attn::interpretCacheView(view, cache, result.keys, result.values,
                                     result.kvLen, result.error);
    }
  });
  return result;
}

} // namespace attn::test
