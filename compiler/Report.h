//===- Report.h - the plan file and the human report ------------*- C++ -*-===//

#ifndef ATTNC_REPORT_H
#define ATTNC_REPORT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

/// `<name>_plan.json`: the layer table (kernels, cache geometry and bytes)
/// and the model's KV-cache totals, for the runtime and for tools;
/// `devices` ("cpu", "cuda") says which kernel sets the library holds.
std::string renderPlanJson(mlir::ModuleOp module,
                           llvm::ArrayRef<std::string> devices);

/// What attnc decided, for people: layers, kernels and their schedules, and
/// the KV-cache budget.
std::string renderReport(mlir::ModuleOp module);

} // namespace attnc

#endif // ATTNC_REPORT_H
