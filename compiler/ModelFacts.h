//===- ModelFacts.h - what the plan and the report both state ---*- C++ -*-===//

#ifndef ATTNC_MODELFACTS_H
#define ATTNC_MODELFACTS_H

#include "attn/AttnOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

/// The one attn.model of an imported module.
mlir::attn::ModelOp theModel(mlir::ModuleOp module);

/// An integer attribute the passes set on `op` (absent: 0).
int64_t intAttr(mlir::Operation *op, llvm::StringRef name);

/// "f32", "bf16", "i8": an element type as MLIR prints it (the plan's
/// spelling, runtime/include/attn/runtime/PlanSchema.h).
std::string typeName(mlir::Type type);

/// The element type of the model's linear weights (f32 unless stated).
mlir::Type weightDtype(mlir::attn::ModelOp model);

/// Bytes of W a linear kernel reads per call (absent: 0).
int64_t weightBytes(mlir::attn::ModelOp model,
                    std::optional<llvm::StringRef> kernel);

/// Weight bytes one decoded token streams: every linear kernel of the
/// decoder once (cross-attention K/V are computed per source, not per
/// token; of a mixture of experts, the router and the experts a token
/// runs); embeddings and norms, a row and a vector, are left out.
int64_t weightBytesPerToken(mlir::attn::ModelOp model);

} // namespace attnc

#endif // ATTNC_MODELFACTS_H
