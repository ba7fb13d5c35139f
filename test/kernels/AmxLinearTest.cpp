//===- AmxLinearTest.cpp - the AMX-BF16 micro-kernel vs a double reference ===//
//
// attn::amx::linearBf16Block over odd and round sizes (tokens that are not
// a multiple of the 32-token block, inputs not a multiple of the 32-deep
// step, outputs that end inside a panel, calls over a range of features that
// starts or ends inside a panel, leaving the columns beside it alone),
// against a double-precision product of the same bf16-rounded X and W: the
// products of bf16 values are exact in fp32, so the only error is fp32
// accumulation, bounded like LinearTest's (1e-5 · sqrt(in) for inputs in
// [-1, 1]). Skipped, with the reason, where the CPU or the OS has no AMX.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/schedules/AmxLinear.h"
#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

using namespace attn::test;

namespace {

struct AmxCase {
  int tokens, in, out;
  int nBegin = 0, nEnd = -1; ///< the features a call computes (-1: out)
};

class AmxLinearTest : public testing::TestWithParam<AmxCase> {};

TEST_P(AmxLinearTest, MatchesDoubleReferenceOnBf16Operands) {
  std::string why;
  if (!attn::amx::available(&why))
    GTEST_SKIP() << why;
  const AmxCase &c = GetParam();
  const int nEnd = c.nEnd < 0 ? c.out : c.nEnd, width = nEnd - c.nBegin;
  std::mt19937 rng(c.tokens * 131 + c.in * 7 + c.out);
  std::vector<float> x = randomVector(size_t(c.tokens) * c.in, rng),
                     w = randomVector(size_t(c.in) * c.out, rng);
  for (float &v : w) // the kernel's operands are bf16: so are the reference's
    v = float(Halide::bfloat16_t(v));
  Halide::Buffer<> packed =
      attn::packLinearWeights(w.data(), c.in, c.out, attn::DType::BF16);

  const int paddedIn = attn::amx::paddedDepth(c.in);
  const int xStride = attn::amx::xRowStride(paddedIn);
  std::vector<uint16_t> xb(size_t(attn::amx::paddedTokens(c.tokens)) * xStride,
                           0);
  attn::amx::packTokensBf16(x.data(), c.in, 0, c.tokens, paddedIn, xStride,
                            xb.data());
  std::vector<uint32_t> scratch(attn::amx::scratchWords(paddedIn));
  // Y has a column of padding on each side of the call's features, which
  // must stay untouched.
  const float untouched = -12345.0f;
  const int yStride = width + 2;
  std::vector<float> y(size_t(c.tokens) * yStride, untouched);
  attn::amx::linearBf16Block(xb.data(), xStride, paddedIn, c.in,
                             static_cast<const uint32_t *>(packed.data()),
                             c.tokens, c.nBegin, nEnd, scratch.data(),
                             y.data() + 1, yStride);

  const double tolerance = 1e-5 * std::sqrt(double(c.in));
  double worst = 0;
  for (int m = 0; m < c.tokens; m++) {
    ASSERT_EQ(y[size_t(m) * yStride], untouched) << "row " << m;
    ASSERT_EQ(y[size_t(m) * yStride + width + 1], untouched) << "row " << m;
    for (int n = c.nBegin; n < nEnd; n++) {
      double expected = 0;
      for (int k = 0; k < c.in; k++)
        expected += double(float(Halide::bfloat16_t(x[size_t(m) * c.in + k]))) *
                    w[size_t(k) * c.out + n];
      worst =
          std::max(worst, std::fabs(y[size_t(m) * yStride + 1 + n - c.nBegin] -
                                    expected));
    }
  }
  EXPECT_LE(worst, tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AmxLinearTest,
    testing::Values(AmxCase{32, 64, 32}, AmxCase{16, 32, 16},
                    AmxCase{33, 100, 70}, AmxCase{100, 257, 129},
                    AmxCase{64, 4096, 96}, AmxCase{96, 96, 64, 16, 48},
                    AmxCase{7, 1000, 33}, AmxCase{128, 2048, 256, 64, 256},
                    AmxCase{40, 64, 100, 5, 77}));

} // namespace
