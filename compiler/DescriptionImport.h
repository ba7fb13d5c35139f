//===- DescriptionImport.h - model descriptions to attn IR ------*- C++ -*-===//

#ifndef ATTNC_DESCRIPTIONIMPORT_H
#define ATTNC_DESCRIPTIONIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace attnc {

/// Settings a description may leave open. A Hugging Face config says nothing
/// about the KV cache, so these fill it in; for native descriptions they
/// override what the file says.
struct ImportOptions {
  std::string modelName;               ///< overrides the description's name
  std::optional<int64_t> maxBatch;     ///< sequences the cache is planned for
  std::optional<std::string> kvLayout; ///< contiguous or paged
  std::optional<int64_t> pageSize;
  std::optional<std::string> kvDtype; ///< f32, f16 or bf16
  std::optional<int64_t> maxLength;   ///< tokens per sequence
  /// Every attention layer's compute_dtype: f32, or bf16 products.
  std::optional<bool> bf16Compute;
};

/// Imports the JSON in `sourceMgr`'s main buffer, a native model description
/// or (when it has a "model_type") a Hugging Face config.json, as a module
/// holding one attn.model. Every op is located at the JSON it came from;
/// errors are emitted through `context` at their file:line:col and null is
/// returned.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonDescription(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
                      const ImportOptions &options);

} // namespace attnc

#endif // ATTNC_DESCRIPTIONIMPORT_H
