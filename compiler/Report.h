//===- Report.h - what attnc decided, for people -----------------*- C++ -*-===//

#ifndef ATTNC_REPORT_H
#define ATTNC_REPORT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

/// What attnc decided, for people: layers, kernels and their schedules, and
/// the KV-cache budget.
std::string renderReport(mlir::ModuleOp module);

} // namespace attnc

#endif // ATTNC_REPORT_H
