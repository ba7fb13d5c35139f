//===- SamplerTest.cpp - greedy, temperature, top-k, top-p, seeds ---------===//

#include "attn/runtime/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace attn::runtime;

namespace {

Sampler make(SamplingOptions options) {
  Sampler sampler;
  Status s = Sampler::create(options, sampler);
  EXPECT_TRUE(s) << s.message();
  return sampler;
}

std::map<int32_t, int> histogram(Sampler sampler, const std::vector<float> &l,
                                 int draws) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < draws; i++) {
    int32_t token = -1;
    EXPECT_TRUE(sampler.sample(l.data(), int(l.size()), token));
    counts[token]++;
  }
  return counts;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};

TEST(SamplerTest, GreedyIsArgmaxWithLowestIdOnTies) {
  auto counts = histogram(make({}), kLogits, 10);
  EXPECT_EQ(counts, (std::map<int32_t, int>{{1, 10}}));
}

TEST(SamplerTest, TemperatureFollowsTheSoftmax) {
  // At temperature 1: p ∝ e^logit. 40,000 draws: each frequency within
  // 0.01 of its probability (5 standard deviations at most ~0.0125).
  const int draws = 40000;
  auto counts = histogram(make({1.0f, 0, 1.0f, 42}), kLogits, draws);
  double total = 0;
  for (float l : kLogits)
    total += std::exp(l);
  for (size_t i = 0; i < kLogits.size(); i++)
    EXPECT_NEAR(counts[int32_t(i)] / double(draws),
                std::exp(kLogits[i]) / total, 0.0125)
        << "token " << i;
}

TEST(SamplerTest, TopKAndTopPRestrictTheCandidates) {
  // Top-2: only the two logits of 3 (ids 1 and 3), about equally.
  auto topK = histogram(make({1.0f, 2, 1.0f, 1}), kLogits, 2000);
  EXPECT_EQ(topK.size(), 2u);
  EXPECT_GT(topK[1], 800);
  EXPECT_GT(topK[3], 800);
  // Top-p 0.5: ids 1 and 3 hold 2·e³/(sum) ≈ 0.78 > 0.5, id 1 alone 0.39:
  // the nucleus is {1, 3}.
  auto topP = histogram(make({1.0f, 0, 0.5f, 7}), kLogits, 2000);
  EXPECT_EQ(topP.size(), 2u);
  // A tiny top-p keeps the single most likely token: greedy.
  auto tiny = histogram(make({5.0f, 0, 1e-6f, 7}), kLogits, 100);
  EXPECT_EQ(tiny, (std::map<int32_t, int>{{1, 100}}));
}

TEST(SamplerTest, SameSeedSameTokens) {
  auto run = [](uint64_t seed) {
    Sampler sampler = make({0.8f, 0, 0.95f, seed});
    std::vector<int32_t> tokens;
    for (int i = 0; i < 50; i++) {
      int32_t token;
      EXPECT_TRUE(sampler.sample(kLogits.data(), int(kLogits.size()), token));
      tokens.push_back(token);
    }
    return tokens;
  };
  EXPECT_EQ(run(123), run(123));
  EXPECT_NE(run(123), run(124));
}

TEST(SamplerTest, BadOptionsAndLogitsAreErrors) {
  Sampler sampler;
  EXPECT_FALSE(Sampler::create({-1.0f}, sampler));
  EXPECT_FALSE(Sampler::create({INFINITY}, sampler));
  EXPECT_FALSE(Sampler::create({1.0f, -1}, sampler));
  EXPECT_FALSE(Sampler::create({1.0f, 0, 0.0f}, sampler));
  EXPECT_FALSE(Sampler::create({1.0f, 0, 1.5f}, sampler));
  Sampler ok = make({1.0f});
  int32_t token;
  std::vector<float> nan = {0.0f, NAN};
  EXPECT_EQ(ok.sample(nan.data(), 2, token).code(),
            StatusCode::InvalidArgument);
  EXPECT_FALSE(ok.sample(nan.data(), 0, token));
}

} // namespace
