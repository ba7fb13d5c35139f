//===- Targets.h - attnc's target names -------------------------*- C++ -*-===//
//
// --target takes a comma-separated list; each item is one of attnc's names
// for a CPU family (host, x86-64-avx2, sapphirerapids, arm64-linux, ...) or
// a Halide target string. Several targets make one library with a variant
// per target, chosen at run time: most specific first, a baseline last.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TARGETS_H
#define ATTNC_TARGETS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace attnc {

/// `list` with every attnc name replaced by its Halide target string(s),
/// comma-separated; an error for names attnc knows but cannot generate
/// for, and for an empty list.
llvm::Expected<std::string> expandTargetNames(llvm::StringRef list);

/// The names and what they stand for, one per line, for --help.
std::string describeTargetNames();

} // namespace attnc

#endif // ATTNC_TARGETS_H
