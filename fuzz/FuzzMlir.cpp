//===- FuzzMlir.cpp - the attn dialect's parser and verifiers -------------===//
//
// One input: .mlir text, parsed with the attn dialect and verified (what
// attnc does with a .mlir model). Malformed or out-of-range input must end
// in diagnostics, never in a crash.
//
//===----------------------------------------------------------------------===//

#include "attn/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::attn::AttnDialect, mlir::func::FuncDialect>();
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.mlir"),
      llvm::SMLoc());
  (void)mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  return 0;
}
