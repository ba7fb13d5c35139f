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

#include <algorithm>
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
  routeTokens(experts, logits.data(), nullptr, tokens, choices.data());
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


/// DeepSeek's rules as transformers computes them, written out directly:
/// scores (softmax or sigmoid); choice scores (plus the bias for sigmoid);
/// with groups, each group's score (its largest choice score, or the sum of
/// its two largest), the best groups by a stable sort, the other experts'
/// choice scores set to 0; the k largest by a stable sort; their scores,
/// over their sum (+ 1e-20 for sigmoid) when normalized, times the scale.
std::vector<std::pair<int, double>>
referenceRoute(const PlanOp::Experts &x, const float *row, const float *bias) {
  const bool sigmoid = x.rule == PlanOp::Experts::Rule::SigmoidTopK;
  const int count = x.count, perGroup = count / x.groups;
  std::vector<double> score(count), choice(count);
  double total = 0, largest = -INFINITY;
  for (int e = 0; e < count; e++)
    largest = std::max(largest, double(row[e]));
  for (int e = 0; e < count; e++)
    total += std::exp(double(row[e]) - largest);
  for (int e = 0; e < count; e++) {
    score[e] = sigmoid ? 1 / (1 + std::exp(-double(row[e])))
                       : std::exp(double(row[e]) - largest) / total;
    choice[e] = score[e] + (sigmoid ? double(bias[e]) : 0.0);
  }
  auto descending = [](const std::vector<double> &v) {
    std::vector<int> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return v[a] > v[b]; });
    return order;
  };
  if (x.groups > 1) {
    std::vector<double> group(x.groups);
    for (int g = 0; g < x.groups; g++) {
      std::vector<double> members(choice.begin() + g * perGroup,
                                  choice.begin() + (g + 1) * perGroup);
      std::sort(members.rbegin(), members.rend());
      group[g] = sigmoid ? members[0] + members[1] : members[0];
    }
    std::vector<int> best = descending(group);
    for (int e = 0; e < count; e++)
      if (std::find(best.begin(), best.begin() + x.groupTopK, e / perGroup) ==
          best.begin() + x.groupTopK)
        choice[e] = 0.0;
  }
  std::vector<int> order = descending(choice);
  double sum = 0;
  for (int j = 0; j < x.perToken; j++)
    sum += score[order[j]];
  std::vector<std::pair<int, double>> chosen;
  for (int j = 0; j < x.perToken; j++)
    chosen.push_back(
        {order[j], score[order[j]] /
                       (x.normalize ? sum + (sigmoid ? 1e-20 : 0.0) : 1.0) *
                       x.scale});
  return chosen;
}

TEST(ExpertsTest, SigmoidAndGroupLimitedRulesMatchTheirDefinition) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f), biasDraw(0.0f, 1.0f);
  int checked = 0;
  for (auto kind : {PlanOp::Experts::Rule::SoftmaxTopK,
                    PlanOp::Experts::Rule::SigmoidTopK})
    for (int count : {8, 64, 256})
      for (int groups : {1, 4, 8})
        for (int groupTopK : {1, groups / 2, groups}) {
          if (groupTopK < 1 || count / groups < 2)
            continue;
          for (int k : {1, 2, 8}) {
            if (k > groupTopK * (count / groups))
              continue;
            PlanOp::Experts x = rule(count, k, k % 2 == 0);
            x.rule = kind;
            x.groups = groups;
            x.groupTopK = groupTopK;
            x.scale = count == 64 ? 2.5 : 1.0;
            const int tokens = 5;
            std::vector<float> logits(size_t(tokens * count)), bias(count);
            for (float &v : logits)
              v = normal(rng);
            for (float &v : bias)
              v = biasDraw(rng);
            std::vector<ExpertChoice> got(size_t(tokens * k));
            routeTokens(x, logits.data(), bias.data(), tokens, got.data());
            for (int t = 0; t < tokens; t++) {
              auto want = referenceRoute(x, &logits[size_t(t * count)],
                                         bias.data());
              for (int j = 0; j < k; j++) {
                const ExpertChoice &c = got[size_t(t * k + j)];
                ASSERT_EQ(c.expert, want[size_t(j)].first)
                    << count << " experts in " << groups << " groups (top "
                    << groupTopK << "), k " << k << ", token " << t;
                EXPECT_NEAR(c.weight, want[size_t(j)].second,
                            1e-6 * std::max(1.0, want[size_t(j)].second));
                checked++;
              }
            }
          }
        }
  EXPECT_GT(checked, 1000);
}

// Sigmoid rule, 4 experts in 2 groups, the best group only, 3 a token: the
// third choice falls outside the kept group, whose masked choice scores (0)
// beat a kept expert whose bias pushed it below 0 — transformers' order.
TEST(ExpertsTest, MaskedExpertsOutrankNegativeChoiceScores) {
  PlanOp::Experts x = rule(4, 3, false);
  x.rule = PlanOp::Experts::Rule::SigmoidTopK;
  x.groups = 2;
  x.groupTopK = 1;
  // Group 0 (experts 0, 1): choice scores 0.5 + 2 and 0.5 - 2; group 1
  // (experts 2, 3): 0.5 + 0 each. Group 0 wins (1.0 against 1.0: equal,
  // the lower group); expert 1's -1.5 loses to the masked 0s of 2 and 3.
  const std::vector<float> logits = {0, 0, 0, 0}, bias = {2, -2, 0, 0};
  std::vector<ExpertChoice> c(3);
  routeTokens(x, logits.data(), bias.data(), 1, c.data());
  EXPECT_EQ(c[0].expert, 0);
  EXPECT_EQ(c[1].expert, 2);
  EXPECT_EQ(c[2].expert, 3);
  EXPECT_FLOAT_EQ(c[0].weight, 0.5f); // the sigmoid score, not the bias
  // The softmax rule masks below every probability: expert 1 comes second.
  x.rule = PlanOp::Experts::Rule::SoftmaxTopK;
  const std::vector<float> ranked = {3, 1, 2, 2};
  routeTokens(x, ranked.data(), nullptr, 1, c.data());
  EXPECT_EQ(c[0].expert, 0);
  EXPECT_EQ(c[1].expert, 1);
}

} // namespace
