//===- Support.h - small helpers shared by passes and tools -----*- C++ -*-===//

#ifndef ATTN_SUPPORT_H
#define ATTN_SUPPORT_H

#include <cstdint>
#include <string>

namespace mlir::attn {

/// "512 B", "4.00 MiB", "1.50 GiB": sizes in messages and reports.
std::string formatBytes(int64_t bytes);

} // namespace mlir::attn

#endif // ATTN_SUPPORT_H
