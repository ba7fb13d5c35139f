//===- CrossAttentionTrace.cpp - where a decoded token looked -------------===//

#include "CrossAttentionTrace.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace attn::runtime {

Status traceCrossAttention(const PlanOp &op, const KvCache &cache,
                           const SequenceId *sequences, const float *query,
                           int64_t batch, int layer,
                           CrossAttentionTrace &trace) {
  const int hq = op.queryHeads, hkv = op.kvHeads, hd = op.headDim;
  trace.weights.assign(batch, {});
  for (int64_t b = 0; b < batch; b++) {
    int length = cache.length(sequences[b]);
    std::vector<float> keys(size_t(length) * hkv * hd), values(keys.size());
    if (Status s = cache.read(sequences[b], layer, 0, length, keys.data(),
                              values.data());
        !s)
      return s;
    std::vector<float> &average = trace.weights[b];
    average.assign(length, 0.0f);
    std::vector<double> logits(length);
    for (int h = 0; h < hq; h++) {
      const float *qh = query + (b * hq + h) * hd;
      int kvHead = h / (hq / hkv);
      double top = -INFINITY, sum = 0;
      for (int j = 0; j < length; j++) {
        double dot = 0;
        for (int c = 0; c < hd; c++)
          dot += double(qh[c]) * keys[(size_t(j) * hkv + kvHead) * hd + c];
        logits[j] = dot * op.scale;
        top = std::max(top, logits[j]);
      }
      for (int j = 0; j < length; j++)
        sum += logits[j] = std::exp(logits[j] - top);
      for (int j = 0; j < length; j++)
        average[j] += float(logits[j] / sum / hq);
    }
  }
  return Status::ok();
}

} // namespace attn::runtime
