//===- SdpaSemanticsOps.cpp - attn.sdpa parsed and interpreted ------------===//

#include "SdpaSemanticsOps.h"

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

InterpretedSdpa interpretSdpaSource(const std::string &source,
                                    const std::vector<float> &query,
                                    const std::vector<float> &key,
                                    const std::vector<float> &value, int batch,
                                    int qLen, int kvLen) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::attn::AttnDialect, mlir::func::FuncDialect,
                      mlir::tensor::TensorDialect>();
  InterpretedSdpa result;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    result.error += d.str() + "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return result;
  mlir::attn::SdpaOp op;
  module->walk([&](mlir::attn::SdpaOp found) { op = found; });
  if (!op) {
    result.error = "no attn.sdpa";
    return result;
  }
  result.settings = attnc::attentionSettings(op);
  result.result =
      mlir::attn::interpretSdpa(op, query, key, value, batch, qLen, kvLen);
  return result;
}

} // namespace attn::test
