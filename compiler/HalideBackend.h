//===- HalideBackend.h - kernel specs to a static library -------*- C++ -*-===//

#ifndef ATTNC_HALIDEBACKEND_H
#define ATTNC_HALIDEBACKEND_H

#include "ModelSpecs.h"
#include "Targets.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace attnc {

/// Generates every kernel with Halide, in-process, for `targets` (Halide
/// target strings; "host" is this machine) and writes `<outDir>/<name>.a`.
/// Each kernel is the C symbol `<functionName>_kernel` (CPU targets) and
/// `<functionName>_<api>_kernel` (a GPU target: cuda, opencl) taking
/// halide_buffer_t
/// pointers, as renderKernelDeclarations() declares them.
llvm::Error emitKernelLibrary(const ModelSpecs &specs,
                              const LibraryTargets &targets,
                              llvm::StringRef outDir);

} // namespace attnc

#endif // ATTNC_HALIDEBACKEND_H
