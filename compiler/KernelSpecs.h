//===- KernelSpecs.h - attn IR to plain kernel specs ------------*- C++ -*-===//

#ifndef ATTNC_KERNELSPECS_H
#define ATTNC_KERNELSPECS_H

#include "ModelSpecs.h"

#include "attn/AttnOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace attnc {

/// Collects the kernels of the module's attn.model (after kernel
/// specialization and schedule selection); C names are `<model>_<kernel>`.
/// Emits an error and fails for kernels the backend cannot generate.
mlir::LogicalResult collectKernelSpecs(mlir::ModuleOp module,
                                       ModelSpecs &specs);

/// The plain attention settings of an op's attributes: attn.kernel (what
/// attnc generates) and attn.sdpa (the math-level op; tests check the
/// kernels against its interpretation). The one conversion of them.
::attn::AttentionSettings attentionSettings(mlir::attn::KernelOp op);
::attn::AttentionSettings attentionSettings(mlir::attn::SdpaOp op);

/// The plain RoPE scaling rule of a verified `scaling` dictionary
/// (attn.linear_kernel's rope_scaling, attn.rope's scaling): linear, llama3,
/// yarn or dynamic with every number it needs.
::attn::RopeScaling ropeScaling(mlir::DictionaryAttr scaling);

} // namespace attnc

#endif // ATTNC_KERNELSPECS_H
