//===- Alibi.h - ALiBi slopes per query head --------------------*- C++ -*-===//
//
// Plain C++ without Halide or MLIR: the Halide kernels (AttentionParts.h)
// and attnc's --attn-decompose-sdpa read the slopes from here. The op's
// interpreter (dialects/lib/Interpreter.cpp) states them again on purpose:
// it is the independent reference both are tested against.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_ALIBI_H
#define ATTN_SCHEDULES_ALIBI_H

#include <cmath>
#include <vector>

namespace attn {

/// ALiBi slopes of `heads` heads (Press et al.): 2^(-8k/n), k = 1..n, for
/// the largest power of two n <= heads; the remaining heads take every other
/// slope of 2n heads.
inline std::vector<float> alibiSlopes(int heads) {
  auto powerOfTwoSlopes = [](int n) {
    std::vector<float> slopes;
    for (int k = 1; k <= n; k++)
      slopes.push_back(std::pow(2.0f, -8.0f * k / n));
    return slopes;
  };
  int n = 1;
  while (n * 2 <= heads)
    n *= 2;
  std::vector<float> slopes = powerOfTwoSlopes(n);
  std::vector<float> extra = powerOfTwoSlopes(2 * n);
  for (int k = 0; int(slopes.size()) < heads; k += 2)
    slopes.push_back(extra[k]);
  return slopes;
}

} // namespace attn

#endif // ATTN_SCHEDULES_ALIBI_H
