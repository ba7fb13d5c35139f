//===- Sampler.h - choosing the next token from logits ----------*- C++ -*-===//
//
// Greedy (temperature 0), or sampling from softmax(logits / temperature)
// restricted to the top-k tokens and to the smallest set whose probability
// reaches top-p. Deterministic: the same seed and the same logits give the
// same tokens, on any machine (the generator is std::mt19937_64, whose
// output the standard fixes, turned into doubles by hand).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_SAMPLER_H
#define ATTN_RUNTIME_SAMPLER_H

#include "attn/runtime/Status.h"

#include <cstdint>
#include <random>
#include <vector>

namespace attn::runtime {

struct SamplingOptions {
  float temperature = 0.0f; ///< 0: greedy (argmax, lowest id on ties)
  int topK = 0;             ///< > 0: only the k most likely tokens
  float topP = 1.0f;        ///< in (0, 1]: nucleus sampling
  uint64_t seed = 0;
};

/// A token's log-probability under the model's softmax of fp32 logits (no
/// temperature), and the most likely tokens at that position.
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
  /// The `top` most likely tokens, most likely first (ties: lower id).
  std::vector<std::pair<int32_t, float>> top;
};

/// `token`'s log-probability in log_softmax(logits [vocabulary]) and the
/// `top` (0..vocabulary) most likely tokens' (computed in double). Fails on
/// a NaN logit or a token outside the vocabulary.
Status tokenLogprob(const float *logits, int vocabulary, int32_t token,
                    int top, TokenLogprob &result);

class Sampler {
public:
  /// Checks `options` (temperature >= 0 and finite, topK >= 0,
  /// 0 < topP <= 1).
  static Status create(const SamplingOptions &options, Sampler &sampler);

  /// The next token of `logits` [vocabulary]. Fails on an empty vocabulary
  /// or a NaN logit.
  Status sample(const float *logits, int vocabulary, int32_t &token);

private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<double> weights_; ///< [vocabulary]: unnormalized softmax
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_SAMPLER_H
