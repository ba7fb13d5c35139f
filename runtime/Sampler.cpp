//===- Sampler.cpp - choosing the next token from logits ------------------===//

#include "attn/runtime/Sampler.h"

#include <algorithm>
#include <cmath>

namespace attn::runtime {

Status Sampler::create(const SamplingOptions &options, Sampler &sampler) {
  if (!(options.temperature >= 0.0f) || !std::isfinite(options.temperature))
    return Status(StatusCode::InvalidArgument,
                  "temperature must be >= 0 and finite");
  if (options.topK < 0)
    return Status(StatusCode::InvalidArgument, "top-k must be >= 0");
  if (!(options.topP > 0.0f && options.topP <= 1.0f))
    return Status(StatusCode::InvalidArgument, "top-p must be in (0, 1]");
  sampler.options_ = options;
  sampler.rng_.seed(options.seed);
  return Status::ok();
}

Status tokenLogprob(const float *logits, int vocabulary, int32_t token,
                    int top, TokenLogprob &result) {
  if (!logits || token < 0 || token >= vocabulary || top < 0 ||
      top > vocabulary)
    return Status(StatusCode::InvalidArgument,
                  "log-probability of token " + std::to_string(token) +
                      " (top " + std::to_string(top) + ") over " +
                      std::to_string(vocabulary) + " logits");
  float largest = -INFINITY;
  for (int i = 0; i < vocabulary; i++) {
    if (std::isnan(logits[i]))
      return Status(StatusCode::InvalidArgument,
                    "logit " + std::to_string(i) + " is NaN");
    largest = std::max(largest, logits[i]);
  }
  double total = 0;
  for (int i = 0; i < vocabulary; i++)
    total += std::exp(double(logits[i]) - largest);
  const double logTotal = double(largest) + std::log(total);
  result.token = token;
  result.logprob = float(double(logits[token]) - logTotal);
  // The top ones: a bounded min-heap over one pass (top is small).
  auto better = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::vector<int32_t> heap;
  heap.reserve(size_t(top) + 1);
  for (int32_t i = 0; i < vocabulary && top > 0; i++) {
    if (int(heap.size()) == top && !better(i, heap.front()))
      continue;
    heap.push_back(i);
    std::push_heap(heap.begin(), heap.end(), better);
    if (int(heap.size()) > top) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.pop_back();
    }
  }
  std::sort(heap.begin(), heap.end(), better);
  result.top.clear();
  for (int32_t i : heap)
    result.top.push_back({i, float(double(logits[i]) - logTotal)});
  return Status::ok();
}

Status Sampler::sample(const float *logits, int vocabulary, int32_t &token) {
  if (!logits || vocabulary < 1)
    return Status(StatusCode::InvalidArgument, "no logits to sample from");
  for (int i = 0; i < vocabulary; i++)
    if (std::isnan(logits[i]))
      return Status(StatusCode::InvalidArgument,
                    "logit " + std::to_string(i) + " is NaN");
  if (options_.temperature == 0.0f) {
    token = int32_t(std::max_element(logits, logits + vocabulary) - logits);
    return Status::ok();
  }
  // Nothing cut away (OpenAI's defaults: no top-k, top-p 1): draw from the
  // whole softmax in id order; sorting 10^5 candidates per token would cost
  // more than the decode step of a small model.
  if ((options_.topK == 0 || options_.topK >= vocabulary) &&
      options_.topP >= 1.0f) {
    float largest = *std::max_element(logits, logits + vocabulary);
    weights_.resize(size_t(vocabulary));
    double total = 0;
    for (int i = 0; i < vocabulary; i++)
      total += weights_[size_t(i)] =
          std::exp(double(logits[i] - largest) / options_.temperature);
    double u = double(rng_() >> 11) * (1.0 / 9007199254740992.0) * total;
    token = int32_t(vocabulary - 1);
    for (int i = 0; i < vocabulary; i++) {
      u -= weights_[size_t(i)];
      if (u < 0) {
        token = int32_t(i);
        break;
      }
    }
    return Status::ok();
  }
  // Candidates by decreasing logit (ties: lower id first), cut to top-k.
  candidates_.clear();
  for (int i = 0; i < vocabulary; i++)
    candidates_.push_back({logits[i], int32_t(i)});
  auto order = [](const auto &a, const auto &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = options_.topK > 0 ? std::min<size_t>(options_.topK, vocabulary)
                                  : size_t(vocabulary);
  std::partial_sort(candidates_.begin(), candidates_.begin() + keep,
                    candidates_.end(), order);
  candidates_.resize(keep);
  // Probabilities at the temperature, in double; then the nucleus.
  std::vector<double> probability(keep);
  double total = 0;
  for (size_t i = 0; i < keep; i++)
    total += probability[i] =
        std::exp(double(candidates_[i].first - candidates_[0].first) /
                 options_.temperature);
  double mass = 0;
  size_t nucleus = 0;
  while (nucleus < keep) {
    mass += probability[nucleus++] / total;
    if (mass >= options_.topP)
      break;
  }
  double sum = 0;
  for (size_t i = 0; i < nucleus; i++)
    sum += probability[i];
  // A uniform double in [0, 1) from 53 random bits.
  double u = double(rng_() >> 11) * (1.0 / 9007199254740992.0) * sum;
  for (size_t i = 0; i < nucleus; i++) {
    u -= probability[i];
    if (u < 0 || i + 1 == nucleus) {
      token = candidates_[i].second;
      break;
    }
  }
  return Status::ok();
}

} // namespace attn::runtime
