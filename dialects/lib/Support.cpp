//===- Support.cpp - small helpers shared by passes and tools -------------===//

#include "attn/Support.h"

#include <cstdio>

namespace mlir::attn {

std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4)
    value /= 1024, unit++;
  char text[32];
  std::snprintf(text, sizeof text, unit ? "%.2f %s" : "%.0f %s", value,
                units[unit]);
  return text;
}

} // namespace mlir::attn
