//===- HalideBackend.h - kernel specs to a static library -------*- C++ -*-===//

#ifndef ATTNC_HALIDEBACKEND_H
#define ATTNC_HALIDEBACKEND_H

#include "ModelSpecs.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace attnc {

/// Generates every kernel with Halide, in-process, for `target` (a Halide
/// target string or several, comma-separated; "host" is this machine) and
/// writes `<outDir>/<name>.a`. Each kernel is the C symbol
/// `<functionName>_kernel` taking halide_buffer_t pointers, as
/// renderKernelDeclarations() declares it.
llvm::Error emitKernelLibrary(const ModelSpecs &specs, llvm::StringRef target,
                              llvm::StringRef outDir);

} // namespace attnc

#endif // ATTNC_HALIDEBACKEND_H
