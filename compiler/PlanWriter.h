//===- PlanWriter.h - <model>_plan.json ------------------------*- C++ -*-===//

#ifndef ATTNC_PLANWRITER_H
#define ATTNC_PLANWRITER_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

/// `<name>_plan.json`: the layer table (kernels, cache geometry and bytes),
/// every op in execution order and the model's KV-cache totals, for the
/// runtime and for tools, in the schema of attn/runtime/PlanSchema.h;
/// `devices` ("cpu", "cuda") says which kernel sets the library holds.
std::string renderPlanJson(mlir::ModuleOp module,
                           llvm::ArrayRef<std::string> devices);

} // namespace attnc

#endif // ATTNC_PLANWRITER_H
