//===- attn-opt.cpp - attn dialect optimizer driver -----------------------===//
//
// The `mlir-opt` of attnc: parses, verifies, transforms and prints IR that uses
// the attn dialect. lit tests drive the dialect through it.
//
//===----------------------------------------------------------------------===//

#include "attn/AttnDialect.h"
#include "attn/AttnPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnPipeline();

  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
