//===- KernelSpecs.h - attn IR to plain kernel specs ------------*- C++ -*-===//

#ifndef ATTNC_KERNELSPECS_H
#define ATTNC_KERNELSPECS_H

#include "ModelSpecs.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace attnc {

/// Collects the kernels of the module's attn.model (after kernel
/// specialization and schedule selection); C names are `<model>_<kernel>`.
/// Emits an error and fails for kernels the backend cannot generate.
mlir::LogicalResult collectKernelSpecs(mlir::ModuleOp module,
                                       ModelSpecs &specs);

} // namespace attnc

#endif // ATTNC_KERNELSPECS_H
