//===- CHeader.h - the C API header of a generated library ------*- C++ -*-===//

#ifndef ATTNC_CHEADER_H
#define ATTNC_CHEADER_H

#include "ModelSpecs.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace attnc {

/// Renders `<name>.h`: per kernel, shape constants and a plain-pointer C
/// function that validates its arguments and calls the Halide kernel declared
/// in `<name>_kernels.h`; per layer, aliases naming its kernels.
/// The header also embeds `planJson` and a table of every kernel by name,
/// what the runtime needs to run the whole model.
std::string renderCHeader(const ModelSpecs &specs, llvm::StringRef description,
                          llvm::StringRef planJson);

/// Renders `<name>_kernels.h`: every kernel's Halide-level declaration (the
/// symbol `<functionName>_kernel` taking halide_buffer_t pointers), as
/// Halide's generated headers write them; one for all targets.
std::string renderKernelDeclarations(const ModelSpecs &specs);

} // namespace attnc

#endif // ATTNC_CHEADER_H
