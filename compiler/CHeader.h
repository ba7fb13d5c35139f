//===- CHeader.h - the C API header of a generated library ------*- C++ -*-===//

#ifndef ATTNC_CHEADER_H
#define ATTNC_CHEADER_H

#include "attn/schedules/KernelSpec.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace attnc {

/// Renders `<name>.h`: per kernel, shape constants and a plain-pointer C
/// function that validates its arguments and calls the Halide kernel declared
/// in `<name>_kernels.h`.
std::string renderCHeader(llvm::StringRef name, llvm::StringRef description,
                          llvm::ArrayRef<attn::SdpaSpec> specs);

} // namespace attnc

#endif // ATTNC_CHEADER_H
