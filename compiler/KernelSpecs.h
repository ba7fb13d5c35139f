//===- KernelSpecs.h - attn IR to plain kernel specs ------------*- C++ -*-===//

#ifndef ATTNC_KERNELSPECS_H
#define ATTNC_KERNELSPECS_H

#include "attn/schedules/KernelSpec.h"

#include "mlir/IR/BuiltinOps.h"

#include <vector>

namespace attnc {

/// Collects one kernel spec per attn.sdpa op, named `<module>_<function>`.
/// Emits an error and fails for IR the backend cannot generate yet.
mlir::LogicalResult collectKernelSpecs(mlir::ModuleOp module,
                                       std::vector<attn::SdpaSpec> &specs);

} // namespace attnc

#endif // ATTNC_KERNELSPECS_H
