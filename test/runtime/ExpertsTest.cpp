//===- ExpertsTest.cpp - the router's rule against a plain computation ----===//
//
// routeTokens (Experts.h) over random logits of every expert count and
// top-k, against softmax and selection computed directly in double; then
// the cases a rule must settle: equal logits (the lower expert first, as
// torch.topk and the reference pick), NaN logits (never chosen before a
// number), renormalized or not.
//
//===----------------------------------------------------------------------===//

#include "Experts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

using namespace attn::runtime;

namespace {

PlanOp::Experts rule(int count, int perToken, bool normalize) {
  PlanOp::Experts experts;
  experts.count = count;
  experts.perToken = perToken;
  experts.normalize = normalize;
  return experts;
}

std::vector<ExpertChoice> route(const PlanOp::Experts &experts,
                                const std::vector<float> &logits) {
  const int64_t tokens = int64_t(logits.size()) / experts.count;
  std::vector<ExpertChoice> choices(size_t(tokens * experts.perToken));
  routeTokens(experts, logits.data(), tokens, choices.data());
  return choices;
}

TEST(ExpertsTest, RandomLogitsMatchSoftmaxTopKInDouble) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int count : {2, 3, 8, 60, 128})
    for (int k : {1, 2, count / 2 + 1, count})
      for (bool normalize : {false, true}) {
        const PlanOp::Experts experts = rule(count, k, normalize);
        const int tokens = 7;
        std::vector<float> logits(size_t(tokens * count));
        for (float &v : logits)
          v = normal(rng);
        const std::vector<ExpertChoice> choices = route(experts, logits);
        for (int t = 0; t < tokens; t++) {
          const float *row = &logits[size_t(t * count)];
          std::vector<int> order(static_cast<size_t>(count));
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(),
                           [&](int a, int b) { return row[a] > row[b]; });
          double total = 0, chosen = 0;
          for (int e = 0; e < count; e++)
            total += std::exp(double(row[e]));
          for (int j = 0; j < k; j++)
            chosen += std::exp(double(row[order[size_t(j)]]));
          for (int j = 0; j < k; j++) {
            const ExpertChoice &c = choices[size_t(t * k + j)];
            ASSERT_EQ(c.expert, order[size_t(j)])
                << count << " experts, top " << k << ", token " << t;
            const double want = std::exp(double(row[c.expert])) /
                                (normalize ? chosen : total);
            EXPECT_NEAR(c.weight, want, 1e-6 * std::max(1.0, want));
          }
        }
      }
}

TEST(ExpertsTest, EqualLogitsChooseTheLowerExpertFirst) {
  // Experts 1 and 2 tie for the top; 0 and 3 tie below them.
  std::vector<ExpertChoice> c = route(rule(4, 1, true), {0.5f, 3, 3, 0.5f});
  EXPECT_EQ(c[0].expert, 1);
  EXPECT_FLOAT_EQ(c[0].weight, 1.0f);
  c = route(rule(4, 3, false), {0.5f, 3, 3, 0.5f});
  EXPECT_EQ(c[0].expert, 1);
  EXPECT_EQ(c[1].expert, 2);
  EXPECT_EQ(c[2].expert, 0);
  EXPECT_FLOAT_EQ(c[0].weight, c[1].weight);
  // All equal: the first k, each 1/count of the mass (1/k renormalized).
  c = route(rule(4, 2, false), {1, 1, 1, 1});
  EXPECT_EQ(c[0].expert, 0);
  EXPECT_EQ(c[1].expert, 1);
  EXPECT_FLOAT_EQ(c[0].weight, 0.25f);
  c = route(rule(4, 2, true), {1, 1, 1, 1});
  EXPECT_FLOAT_EQ(c[0].weight + c[1].weight, 1.0f);
}

TEST(ExpertsTest, NanLogitsAreChosenLast) {
  const float nan = std::nanf("");
  std::vector<ExpertChoice> c = route(rule(3, 2, true), {nan, 1, 2});
  EXPECT_EQ(c[0].expert, 2);
  EXPECT_EQ(c[1].expert, 1);
  // A NaN among the probabilities' sum makes them NaN: the stream then
  // carries it to the logits, where the greedy pick reports it.
  c = route(rule(3, 1, false), {nan, 1, 2});
  EXPECT_EQ(c[0].expert, 2);
  EXPECT_TRUE(std::isnan(c[0].weight));
}

TEST(ExpertsTest, LargeLogitsDoNotOverflow) {
  std::vector<ExpertChoice> c = route(rule(3, 2, false), {1e30f, 1e30f, -1e30f});
  EXPECT_EQ(c[0].expert, 0);
  EXPECT_EQ(c[1].expert, 1);
  EXPECT_FLOAT_EQ(c[0].weight, 0.5f);
  EXPECT_FLOAT_EQ(c[1].weight, 0.5f);
}

} // namespace
