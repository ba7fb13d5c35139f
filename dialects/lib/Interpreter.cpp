//===- Interpreter.cpp - the math-level ops, executed in double -----------===//

#include "attn/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mlir::attn {

std::vector<double> interpretSdpa(SdpaOp op, const std::vector<float> &query,
                                  const std::vector<float> &key,
                                  const std::vector<float> &value, int batch,
                                  int qLen, int kvLen) {
  const int64_t hq = op.getNumQueryHeads(), hkv = op.getNumKvHeads(),
                dim = op.getHeadDim();
  const double scale = op.getEffectiveScale();
  const int64_t window = op.getWindow().value_or(0);
  const double softcap =
      op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0;
  // ALiBi (Press et al.): for the largest power of two n <= heads, head k
  // (from 1) has slope 2^(-8k/n); the heads past n take the odd-numbered
  // slopes of 2n heads, 2^(-8(2m-1)/(2n)), m = 1, 2, ...
  std::vector<double> slopes;
  if (op.getAlibi()) {
    int64_t n = 1;
    while (2 * n <= hq)
      n *= 2;
    for (int64_t k = 1; k <= n; k++)
      slopes.push_back(std::pow(2.0f, -8.0f * float(k) / float(n)));
    for (int64_t m = 1; int64_t(slopes.size()) < hq; m++)
      slopes.push_back(std::pow(2.0f, -8.0f * float(2 * m - 1) / float(2 * n)));
  }
  auto at = [&](const std::vector<float> &tensor, int64_t b, int64_t token,
                int64_t tokens, int64_t heads, int64_t head, int64_t c) {
    return double(tensor[((b * tokens + token) * heads + head) * dim + c]);
  };
  std::vector<double> result(size_t(batch) * qLen * hq * dim, 0.0);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < qLen; i++)
      for (int64_t h = 0; h < hq; h++) {
        // Query head h reads KV head h / (num_query_heads / num_kv_heads).
        const int64_t kvHead = h / (hq / hkv);
        // The mask is aligned to the end of the keys.
        const int64_t diagonal = i + (kvLen - qLen);
        std::vector<double> logit(kvLen);
        std::vector<bool> seen(kvLen, false);
        double top = -INFINITY;
        for (int64_t j = 0; j < kvLen; j++) {
          if (op.getCausal() && j > diagonal)
            continue;
          if (op.getCausal() && window > 0 && j <= diagonal - window)
            continue;
          double dot = 0;
          for (int64_t c = 0; c < dim; c++)
            dot += at(query, b, i, qLen, hq, h, c) *
                   at(key, b, j, kvLen, hkv, kvHead, c);
          double x = dot * scale;
          if (softcap > 0)
            x = softcap * std::tanh(x / softcap);
          if (!slopes.empty())
            x += slopes[h] * double(j - diagonal);
          logit[j] = x;
          seen[j] = true;
          top = std::max(top, x);
        }
        // A row that sees no key yields 0.
        if (top == -INFINITY)
          continue;
        double sum = 0;
        for (int64_t j = 0; j < kvLen; j++)
          if (seen[j])
            sum += logit[j] = std::exp(logit[j] - top);
        for (int64_t j = 0; j < kvLen; j++)
          if (seen[j])
            for (int64_t c = 0; c < dim; c++)
              result[((b * qLen + i) * hq + h) * dim + c] +=
                  logit[j] / sum * at(value, b, j, kvLen, hkv, kvHead, c);
      }
  return result;
}

std::vector<double> interpretRope(RopeOp op, const std::vector<float> &input,
                                  const std::vector<int32_t> &positions,
                                  int batch, int seq, std::string &error) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  const int64_t heads = type.getDimSize(2), dim = type.getDimSize(3),
                half = dim / 2;
  const double theta = op.getTheta().convertToDouble();
  // Inverse frequencies theta^(-2c/head_dim), c < head_dim/2, then the
  // scaling rule as transformers' _compute_*_parameters apply it.
  std::vector<double> inverse(half);
  for (int64_t c = 0; c < half; c++)
    inverse[c] = std::pow(theta, -2.0 * double(c) / double(dim));
  if (DictionaryAttr scaling = op.getScalingAttr()) {
    StringRef rule = ropeScalingType(scaling);
    if (std::string problem = ropeScalingProblem(scaling); !problem.empty()) {
      error = problem;
      return {};
    }
    auto number = [&](StringRef key) {
      return *ropeScalingNumber(scaling, key);
    };
    if (rule == "linear") {
      for (double &f : inverse)
        f /= number("factor");
    } else if (rule == "llama3") {
      const double factor = number("factor"), low = number("low_freq_factor"),
                   high = number("high_freq_factor"),
                   context = number("original_max_position_embeddings");
      for (double &f : inverse) {
        const double wavelength = 2 * M_PI / f;
        if (wavelength > context / low) {
          f /= factor; // low frequencies: scaled
        } else if (wavelength >= context / high) {
          // Between: a blend of the scaled and the kept frequency.
          const double smooth = (context / wavelength - low) / (high - low);
          f = (1 - smooth) * f / factor + smooth * f;
        } // high frequencies: kept
      }
    } else if (rule != "default") {
      error = ("the interpreter has no rope scaling '" + rule + "'").str();
      return {};
    }
  }
  std::vector<double> result(input.size());
  for (int64_t token = 0; token < int64_t(batch) * seq; token++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t c = 0; c < half; c++) {
        // fp32 angles, as the reference implementations compute them.
        const float angle = float(positions[token]) * float(inverse[c]);
        const size_t at = size_t((token * heads + h) * dim + c);
        const double x = input[at], y = input[at + half];
        result[at] = x * std::cos(double(angle)) - y * std::sin(double(angle));
        result[at + half] =
            y * std::cos(double(angle)) + x * std::sin(double(angle));
      }
  return result;
}

std::vector<double> interpretProject(ProjectOp op,
                                     const std::vector<float> &input,
                                     const std::vector<float> &weight,
                                     const std::vector<float> &bias,
                                     const std::vector<float> &residual,
                                     int tokens, std::string &error) {
  auto weightType = cast<RankedTensorType>(op.getWeight().getType());
  const int64_t in = weightType.getDimSize(0), out = weightType.getDimSize(1);
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out)) {
    error = "interpretProject needs a weight of static shape";
    return {};
  }
  const size_t rows = size_t(std::max(tokens, 0));
  const bool hasBias = bool(op.getBias()), hasResidual = bool(op.getResidual());
  if (input.size() != rows * in || weight.size() != size_t(in * out) ||
      bias.size() != (hasBias ? size_t(out) : 0) ||
      residual.size() != (hasResidual ? rows * out : 0)) {
    error = "interpretProject: operand sizes disagree with the op";
    return {};
  }
  // Each token's features times weight, then the bias, then the residual.
  std::vector<double> result(rows * out, 0.0);
  for (size_t t = 0; t < rows; t++)
    for (int64_t n = 0; n < out; n++) {
      double sum = 0.0;
      for (int64_t k = 0; k < in; k++)
        sum += double(input[t * in + k]) * double(weight[k * out + n]);
      if (hasBias)
        sum += bias[n];
      if (hasResidual)
        sum += residual[t * out + n];
      result[t * out + n] = sum;
    }
  return result;
}

InterpretedCache interpretCacheDeclare(CacheDeclareOp op, int batch) {
  CacheType type = op.getCache().getType();
  InterpretedCache cache;
  cache.heads = type.getHeads();
  cache.headDim = type.getHeadDim();
  cache.maxLength = type.getConfig().getMaxLength();
  cache.element = type.getConfig().getDtype();
  cache.keys.resize(std::max(batch, 0));
  cache.values.resize(std::max(batch, 0));
  return cache;
}

namespace {
/// `x` as a value of `semantics` keeps it: rounded to nearest even.
double roundTo(const llvm::fltSemantics &semantics, float x) {
  APFloat value(x);
  bool lost;
  value.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return value.convertToDouble();
}

/// One (token, head) row of `count` elements as a cache of `element` keeps
/// it, appended to `stored`.
void storeRow(Type element, const float *row, int64_t count,
              std::vector<double> &stored) {
  if (element.isSignlessInteger(8)) {
    float largest = 0.0f;
    for (int64_t c = 0; c < count; c++)
      largest = std::max(largest, std::fabs(row[c]));
    const float scale = largest / 127.0f;
    for (int64_t c = 0; c < count; c++)
      stored.push_back(
          scale == 0.0f ? 0.0 : double(std::nearbyint(row[c] / scale)) * scale);
    return;
  }
  for (int64_t c = 0; c < count; c++)
    stored.push_back(element.isF16()    ? roundTo(APFloat::IEEEhalf(), row[c])
                     : element.isBF16() ? roundTo(APFloat::BFloat(), row[c])
                                        : double(row[c]));
}
} // namespace

bool interpretCacheAppend(CacheAppendOp op, InterpretedCache &cache,
                          const std::vector<float> &key,
                          const std::vector<float> &value, int newTokens,
                          std::string &error) {
  const int64_t row = cache.headDim, tokenElements = cache.heads * row;
  const size_t batch = cache.keys.size();
  if (newTokens < 0 || key.size() != batch * newTokens * tokenElements ||
      value.size() != key.size()) {
    error = "interpretCacheAppend: key and value sizes disagree with the cache";
    return false;
  }
  for (size_t b = 0; b < batch; b++)
    if (int64_t(cache.keys[b].size() / tokenElements) + newTokens >
        cache.maxLength) {
      error = "attn.cache_append past the cache's max_length (" +
              std::to_string(cache.maxLength) + " tokens)";
      return false;
    }
  (void)op; // the cache's type carries everything the op adds
  for (size_t b = 0; b < batch; b++)
    for (int64_t t = 0; t < newTokens; t++)
      for (int64_t h = 0; h < cache.heads; h++) {
        const size_t at = ((b * newTokens + t) * cache.heads + h) * row;
        storeRow(cache.element, key.data() + at, row, cache.keys[b]);
        storeRow(cache.element, value.data() + at, row, cache.values[b]);
      }
  return true;
}

bool interpretCacheView(CacheViewOp op, const InterpretedCache &cache,
                        std::vector<double> &keys, std::vector<double> &values,
                        int &kvLen, std::string &error) {
  (void)op;
  const size_t tokenElements = size_t(cache.heads * cache.headDim);
  keys.clear();
  values.clear();
  kvLen = cache.keys.empty() ? 0 : int(cache.keys[0].size() / tokenElements);
  for (size_t b = 0; b < cache.keys.size(); b++) {
    if (cache.keys[b].size() != size_t(kvLen) * tokenElements) {
      error = "attn.cache_view of sequences of different lengths";
      keys.clear();
      values.clear();
      return false;
    }
    keys.insert(keys.end(), cache.keys[b].begin(), cache.keys[b].end());
    values.insert(values.end(), cache.values[b].begin(), cache.values[b].end());
  }
  return true;
}

} // namespace mlir::attn
