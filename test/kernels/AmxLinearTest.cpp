//===- AmxLinearTest.cpp - the AMX-BF16 micro-kernel vs a double reference ===//
//
// attn::amx::linearBf16Block over odd and round sizes (tokens that are not
// a multiple of the 32-token block, inputs not a multiple of the 32-deep
// step, outputs that end inside a panel, blocks that start past token 0),
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
  int firstToken = 0; ///< rows before it are left alone (a later block's call)
};

class AmxLinearTest : public testing::TestWithParam<AmxCase> {};

TEST_P(AmxLinearTest, MatchesDoubleReferenceOnBf16Operands) {
  std::string why;
  if (!attn::amx::available(&why))
    GTEST_SKIP() << why;
  const AmxCase &c = GetParam();
  std::mt19937 rng(c.tokens * 131 + c.in * 7 + c.out);
  std::vector<float> x = randomVector(size_t(c.tokens) * c.in, rng),
                     w = randomVector(size_t(c.in) * c.out, rng);
  for (float &v : w) // the kernel's operands are bf16: so are the reference's
    v = float(Halide::bfloat16_t(v));
  Halide::Buffer<> packed =
      attn::packLinearWeights(w.data(), c.in, c.out, attn::DType::BF16);

  const int paddedIn = (c.in + 31) / 32 * 32;
  const int xStride = attn::amx::xRowStride(paddedIn);
  const int paddedTokens = (c.tokens + 31) / 32 * 32;
  std::vector<uint16_t> xb(size_t(paddedTokens) * xStride, 0);
  attn::amx::packTokensBf16(x.data(), c.in, c.firstToken, c.tokens, paddedIn,
                            xStride, xb.data());
  std::vector<uint32_t> scratch(attn::amx::pairedPanelWords(paddedIn));
  const float untouched = -12345.0f;
  std::vector<float> y(size_t(c.tokens) * c.out, untouched);
  const int panels = (c.out + 31) / 32;
  attn::amx::linearBf16Block(xb.data(), xStride, paddedIn, c.in,
                             static_cast<const uint32_t *>(packed.data()),
                             c.out, c.firstToken, c.tokens, 0, panels,
                             scratch.data(), y.data(), c.out);

  const double tolerance = 1e-5 * std::sqrt(double(c.in));
  double worst = 0;
  for (int m = 0; m < c.tokens; m++)
    for (int n = 0; n < c.out; n++) {
      const float got = y[size_t(m) * c.out + n];
      if (m < c.firstToken) {
        ASSERT_EQ(got, untouched) << "row " << m << " is not the call's";
        continue;
      }
      double expected = 0;
      for (int k = 0; k < c.in; k++)
        expected += double(float(Halide::bfloat16_t(x[size_t(m) * c.in + k]))) *
                    w[size_t(k) * c.out + n];
      worst = std::max(worst, std::fabs(got - expected));
    }
  EXPECT_LE(worst, tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AmxLinearTest,
    testing::Values(AmxCase{32, 64, 32}, AmxCase{16, 32, 16},
                    AmxCase{33, 100, 70}, AmxCase{100, 257, 129},
                    AmxCase{64, 4096, 96}, AmxCase{96, 96, 64, 32},
                    AmxCase{7, 1000, 33}, AmxCase{128, 2048, 256}));

} // namespace
