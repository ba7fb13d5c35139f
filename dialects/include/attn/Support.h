//===- Support.h - small helpers shared by passes and tools -----*- C++ -*-===//

#ifndef ATTN_SUPPORT_H
#define ATTN_SUPPORT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::attn {

/// The checkpoint namings a model's weight_naming may give (the runtime's
/// WeightNaming, attn_weight_naming).
inline constexpr llvm::StringLiteral kWeightNamings[] = {
    "llama", "gemma", "gemma3", "phi3", "mixtral",
    "deepseek", "gpt_oss", "gpt2", "bart"};

/// "512 B", "4.00 MiB", "1.50 GiB": sizes in messages and reports.
std::string formatBytes(int64_t bytes);

} // namespace mlir::attn

#endif // ATTN_SUPPORT_H
