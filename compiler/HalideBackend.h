//===- HalideBackend.h - kernel specs to a static library -------*- C++ -*-===//

#ifndef ATTNC_HALIDEBACKEND_H
#define ATTNC_HALIDEBACKEND_H

#include "ModelSpecs.h"
#include "Targets.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace attnc {

/// Generates every kernel with Halide, in-process, for `targets` (Halide
/// target strings; "host" is this machine) and writes `<outDir>/<name>.a`.
/// Each kernel is the C symbol `<functionName>_kernel` (CPU targets) and
/// `<functionName>_<api>_kernel` (a GPU target: cuda, opencl) taking
/// halide_buffer_t
/// pointers, as renderKernelDeclarations() declares them.
/// `progress`: where to say which kernel is being compiled, if anywhere.
llvm::Error emitKernelLibrary(const ModelSpecs &specs,
                              const LibraryTargets &targets,
                              llvm::StringRef outDir,
                              llvm::raw_ostream *progress = nullptr);

/// The CPU targets as Halide resolves them ("host" becomes this machine's
/// features), comma-separated: what ModelSpecs::cpuTargets records.
std::string resolvedCpuTargets(const LibraryTargets &targets);

} // namespace attnc

#endif // ATTNC_HALIDEBACKEND_H
