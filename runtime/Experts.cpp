//===- Experts.cpp - a mixture-of-experts FFN -----------------------------===//

#include "Experts.h"

#include "KernelCalls.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace attn::runtime {

namespace {
/// a before b: the larger first, the lower index among equals, NaN last (a
/// strict weak order, so a choice never depends on the sort).
bool largerFirst(const double *value, int32_t a, int32_t b) {
  const double x = value[a], y = value[b];
  if (std::isnan(x) || std::isnan(y))
    return std::isnan(x) == std::isnan(y) ? a < b : !std::isnan(x);
  return x > y || (x == y && a < b);
}
} // namespace

void routeTokens(const PlanOp::Experts &experts, const float *logits,
                 const float *bias, int64_t tokens, ExpertChoice *choices) {
  using Rule = PlanOp::Experts::Rule;
  const int count = experts.count, k = experts.perToken;
  const bool sigmoid = experts.rule == Rule::SigmoidTopK;
  const int groups = experts.groups, perGroup = count / groups;
  const size_t n = size_t(count), m = size_t(groups);
  std::vector<double> score(n), select(n), groupScore(m);
  std::vector<int32_t> order(n), groupOrder(m);
  std::vector<bool> kept(m);
  auto before = [](const std::vector<double> &value) {
    return [&value](int32_t a, int32_t b) {
      return largerFirst(value.data(), a, b);
    };
  };
  for (int64_t t = 0; t < tokens; t++) {
    const float *row = logits + t * count;
    // Scores: softmax probabilities (exp(l - max) over their sum) or
    // sigmoids. Selection scores: the logits themselves for softmax (the
    // same order as the probabilities, and a NaN logit, which makes every
    // probability NaN, still comes last), the scores plus the sigmoid
    // rule's bias.
    if (sigmoid) {
      for (int e = 0; e < count; e++) {
        score[size_t(e)] = 1.0 / (1.0 + std::exp(-double(row[e])));
        select[size_t(e)] = score[size_t(e)] + (bias ? double(bias[e]) : 0.0);
      }
    } else {
      double largest = -INFINITY, total = 0;
      for (int e = 0; e < count; e++)
        if (!std::isnan(row[e]))
          largest = std::max(largest, double(row[e]));
      for (int e = 0; e < count; e++)
        total += std::exp(double(row[e]) - largest);
      for (int e = 0; e < count; e++) {
        score[size_t(e)] = std::exp(double(row[e]) - largest) / total;
        select[size_t(e)] = double(row[e]);
      }
    }
    // Group-limited: the groupTopK best groups keep their experts' selection
    // scores; the others' become 0 as transformers masks them (below every
    // probability: -inf on the softmax rule's logits; a sigmoid score plus
    // a negative bias can fall below 0).
    if (groups > 1) {
      for (int g = 0; g < groups; g++) {
        const double *first = select.data() + g * perGroup;
        std::iota(order.begin(), order.begin() + perGroup, 0);
        const int best = sigmoid ? 2 : 1;
        std::partial_sort(order.begin(), order.begin() + best,
                          order.begin() + perGroup,
                          [first](int32_t a, int32_t b) {
                            return largerFirst(first, a, b);
                          });
        groupScore[size_t(g)] = 0;
        for (int j = 0; j < best; j++)
          groupScore[size_t(g)] += first[order[size_t(j)]];
      }
      std::iota(groupOrder.begin(), groupOrder.end(), 0);
      std::partial_sort(groupOrder.begin(),
                        groupOrder.begin() + experts.groupTopK,
                        groupOrder.end(), before(groupScore));
      std::fill(kept.begin(), kept.end(), false);
      for (int j = 0; j < experts.groupTopK; j++)
        kept[size_t(groupOrder[size_t(j)])] = true;
      for (int e = 0; e < count; e++)
        if (!kept[size_t(e / perGroup)])
          select[size_t(e)] = sigmoid ? 0.0 : -INFINITY;
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      before(select));
    double chosen = 0;
    for (int j = 0; j < k; j++)
      chosen += score[size_t(order[size_t(j)])];
    // DeepSeek-V3's normalization adds 1e-20 (sigmoid scores can all be 0).
    const double denominator =
        experts.normalize ? chosen + (sigmoid ? 1e-20 : 0.0) : 1.0;
    for (int j = 0; j < k; j++) {
      const int32_t e = order[size_t(j)];
      choices[t * k + j] = {
          e, float(score[size_t(e)] / denominator * experts.scale)};
    }
  }
}

namespace {
/// Adds to `out` [tokens][d] the weighted outputs of the experts the router
/// chooses for each row of `input`.
Status addChosenExperts(const PlanOp &op, const ExpertWeights &w,
                        const float *input, int64_t tokens, int64_t d,
                        ExpertBuffers &buffers, float *hidden, float *out) {
  const PlanOp::Experts &experts = op.experts;
  const int64_t count = experts.count, k = experts.perToken,
                f = op.intermediateSize,
                width = (op.gated ? 2 : 1) * f; // one expert's up outputs
  float *logits = buffers.logits.data();
  if (Status s = linear(nullptr, {experts.router, w.router, w.routerBias,
                                  input, tokens, d, count, logits});
      !s)
    return s;
  buffers.choices.resize(size_t(tokens * k));
  routeTokens(experts, logits,
              w.selectionBias.empty() ? nullptr : w.selectionBias.data(),
              tokens, buffers.choices.data());

  // Group the choices by expert (counting sort, stable in token order).
  std::vector<int32_t> &first = buffers.firstOfExpert, &byExpert = buffers.byExpert;
  first.assign(size_t(count + 1), 0);
  for (const ExpertChoice &c : buffers.choices)
    first[size_t(c.expert + 1)]++;
  for (int64_t e = 0; e < count; e++)
    first[size_t(e + 1)] += first[size_t(e)];
  byExpert.resize(buffers.choices.size());
  std::vector<int32_t> next(first.begin(), first.end() - 1);
  for (size_t i = 0; i < buffers.choices.size(); i++)
    byExpert[size_t(next[size_t(buffers.choices[i].expert)]++)] = int32_t(i);

  float *gathered = buffers.gathered.data(), *output = buffers.output.data();

  // No expert chosen twice (a decode step of one sequence, or a batch whose
  // rows all chose different experts): the per-expert calls would be GEMVs
  // reading each chosen expert once, which the grouped variants read as
  // well, in one call for every up and one for every down instead of two
  // calls per expert, each waking the thread pool.
  bool distinct = true;
  for (int64_t e = 0; e < count && distinct; e++)
    distinct = first[size_t(e + 1)] - first[size_t(e)] <= 1;
  if (distinct && op.up.grouped && op.down.grouped) {
    const int64_t rows = tokens * k; // row i: choice i, of token i / k
    int32_t *expertOf = buffers.expertOfRow.data();
    float *hiddenRows = buffers.hidden.data();
    for (int64_t i = 0; i < rows; i++) {
      expertOf[i] = buffers.choices[size_t(i)].expert;
      std::memcpy(gathered + i * d, input + (i / k) * d,
                  size_t(d) * sizeof(float));
    }
    LinearCall upCall{op.up,    w.up,  w.upBias,  gathered,
                      rows,     d,     width,     hiddenRows};
    upCall.experts = expertOf;
    if (Status s = linear(nullptr, upCall); !s)
      return s;
    LinearCall downCall{op.down, w.down, w.downBias, hiddenRows,
                        rows,    f,      d,          output};
    downCall.gatedInput = op.gated;
    downCall.experts = expertOf;
    if (Status s = linear(nullptr, downCall); !s)
      return s;
    for (int64_t i = 0; i < rows; i++) {
      const float weight = buffers.choices[size_t(i)].weight;
      float *to = out + (i / k) * d;
      const float *from = output + i * d;
      for (int64_t c = 0; c < d; c++)
        to[c] += weight * from[c];
    }
    return Status::ok();
  }

  for (int64_t e = 0; e < count; e++) {
    const int64_t begin = first[size_t(e)], rows = first[size_t(e + 1)] - begin;
    if (rows == 0)
      continue; // never read
    // One token (a decode step of one sequence) reads its row in place.
    const float *x = input;
    if (tokens > 1) {
      for (int64_t r = 0; r < rows; r++)
        std::memcpy(gathered + r * d,
                    input + int64_t(byExpert[size_t(begin + r)] / k) * d,
                    size_t(d) * sizeof(float));
      x = gathered;
    }
    const WeightMatrix up = w.up.outputs(e * width, width),
                       down = w.down.outputs(e * d, d);
    const Floats upBias = w.upBias.empty()
                              ? Floats()
                              : w.upBias.slice(size_t(e * width), size_t(width)),
                 downBias = w.downBias.empty()
                                ? Floats()
                                : w.downBias.slice(size_t(e * d), size_t(d));
    if (Status s = linear(nullptr,
                          {op.up, up, upBias, x, rows, d, width, hidden});
        !s)
      return s;
    LinearCall downCall{op.down, down, downBias, hidden, rows, f, d, output};
    downCall.gatedInput = op.gated;
    if (Status s = linear(nullptr, downCall); !s)
      return s;
    for (int64_t r = 0; r < rows; r++) {
      const int32_t choice = byExpert[size_t(begin + r)];
      const float weight = buffers.choices[size_t(choice)].weight;
      float *to = out + int64_t(choice / k) * d;
      const float *from = output + r * d;
      for (int64_t c = 0; c < d; c++)
        to[c] += weight * from[c];
    }
  }
  return Status::ok();
}

/// Adds to `out` the shared experts' FFN of every row of `input`, each
/// row's scaled by sigmoid(x · g) where the plan gates it.
Status addSharedExperts(const PlanOp &op, const ExpertWeights &w,
                        const float *input, int64_t tokens, int64_t d,
                        ExpertBuffers &buffers, float *hidden, float *out) {
  const PlanOp::Experts::Shared &shared = op.experts.shared;
  const int64_t s = shared.intermediateSize, width = (op.gated ? 2 : 1) * s;
  float *output = buffers.output.data();
  if (Status status = linear(nullptr, {shared.up, w.sharedUp, w.sharedUpBias,
                                       input, tokens, d, width, hidden});
      !status)
    return status;
  LinearCall down{shared.down, w.sharedDown, w.sharedDownBias, hidden,
                  tokens,      s,            d,                output};
  down.gatedInput = op.gated;
  if (Status status = linear(nullptr, down); !status)
    return status;
  for (int64_t t = 0; t < tokens; t++) {
    double scale = 1.0;
    if (shared.gate) { // sigmoid of the token's dot product with g, in double
      double dot = 0;
      for (int64_t c = 0; c < d; c++)
        dot += double(input[t * d + c]) * double(w.sharedGate[size_t(c)]);
      scale = 1.0 / (1.0 + std::exp(-dot));
    }
    for (int64_t c = 0; c < d; c++)
      out[t * d + c] += float(scale * double(output[t * d + c]));
  }
  return Status::ok();
}
} // namespace

Status mixtureOfExperts(const PlanOp &op, const ExpertWeights &w,
                        const float *input, int64_t tokens, int64_t d,
                        ExpertBuffers &buffers, float *hidden,
                        const float *residual, float *out) {
  if (residual)
    std::memcpy(out, residual, size_t(tokens * d) * sizeof(float));
  else
    std::fill(out, out + tokens * d, 0.0f);
  if (Status s =
          addChosenExperts(op, w, input, tokens, d, buffers, hidden, out);
      !s)
    return s;
  if (op.experts.shared.intermediateSize == 0)
    return Status::ok();
  return addSharedExperts(op, w, input, tokens, d, buffers, hidden, out);
}

} // namespace attn::runtime
