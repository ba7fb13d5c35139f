//===- FuzzDescription.cpp - attnc's JSON importer under libFuzzer --------===//
//
// One input: a native description or a Hugging Face config.json (the
// importer tells them apart by "model_type"), imported and verified as
// attnc does. Any outcome but a crash, a sanitizer report or a hang is
// fine: malformed input must end in located diagnostics.
//
//===----------------------------------------------------------------------===//

#include "DescriptionImport.h"

#include "attn/AttnDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::attn::AttnDialect>();
  // Diagnostics are the expected outcome; keep them off the fuzzer's log.
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.json"),
      llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      attnc::importJsonDescription(sourceMgr, context, {});
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
