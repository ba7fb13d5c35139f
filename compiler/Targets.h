//===- Targets.h - attnc's target names -------------------------*- C++ -*-===//
//
// --target takes a comma-separated list; each item is one of attnc's names
// for a CPU family (host, x86-64-avx2, sapphirerapids, arm64-linux, ...) or
// a Halide target string. Several CPU targets make one library with a
// variant per target, chosen at run time: most specific first, a baseline
// last. A GPU target (`cuda` or `opencl`, or a Halide string with the cuda
// or opencl feature) adds a second set of kernels, `<name>_cuda_kernel` or
// `<name>_opencl_kernel`, to the same library.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TARGETS_H
#define ATTNC_TARGETS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace attnc {

/// `list` with every attnc name replaced by its Halide target string(s),
/// comma-separated; an error for names attnc knows but cannot generate
/// for, and for an empty list.
llvm::Expected<std::string> expandTargetNames(llvm::StringRef list);

/// The Halide targets of one library, split by device.
struct LibraryTargets {
  std::vector<std::string> cpu; ///< most specific first; may be empty
  std::string gpu;              ///< empty: no GPU kernels
  std::string gpuApi;           ///< "cuda" or "opencl" with `gpu`
};

/// Splits an expanded list (expandTargetNames) into its CPU targets and its
/// GPU target; an error for more than one GPU target.
llvm::Expected<LibraryTargets> splitLibraryTargets(llvm::StringRef expanded);

/// `list` (as the user wrote it) without its GPU items: what the tuning
/// database keys CPU schedules by, so that adding `cuda` to a library
/// keeps its tuned CPU kernels.
std::string withoutGpuTargets(llvm::StringRef list);

/// The names and what they stand for, one per line, for --help.
std::string describeTargetNames();

} // namespace attnc

#endif // ATTNC_TARGETS_H
