//===- Candidates.cpp - what attn-tune searches ---------------------------===//

#include "Candidates.h"

#include <algorithm>

namespace attn::tune {

bool Schedule::operator==(const Schedule &o) const {
  return queryBlock == o.queryBlock && kvChunk == o.kvChunk &&
         qkTileKeys == o.qkTileKeys && pvTileRows == o.pvTileRows &&
         splitKeys == o.splitKeys && vectorWidth == o.vectorWidth;
}

std::string Schedule::describe(bool prefill) const {
  std::string text = prefill
                         ? "query_block=" + std::to_string(queryBlock) +
                               " kv_chunk=" + std::to_string(kvChunk) +
                               " qk_tile_keys=" + std::to_string(qkTileKeys) +
                               " pv_tile_rows=" + std::to_string(pvTileRows)
                         : "split_keys=" + std::to_string(splitKeys);
  return text + " vector_width=" + std::to_string(vectorWidth);
}

int stages(const TunedKernel &kernel) { return kernel.prefill ? 2 : 1; }

std::vector<Schedule> candidates(const TunedKernel &kernel, int stage,
                                 const Schedule &best, long l2Bytes) {
  std::vector<Schedule> result;
  auto add = [&](const Schedule &s) {
    if (std::find(result.begin(), result.end(), s) == result.end())
      result.push_back(s);
  };
  // Blocks, chunks and splits past twice the sequence only add padding.
  const int limit = std::max(16, 2 * kernel.length);
  if (!kernel.prefill) {
    for (int split : {64, 128, 256, 512, 1024, 2048, 4096})
      for (int vector : {0, 8, 16})
        if (split <= limit) {
          Schedule s = best;
          s.splitKeys = split;
          s.vectorWidth = vector;
          add(s);
        }
    return result;
  }
  const long headBytes = long(kernel.sdpa.headDim) * 4;
  if (stage == 0) {
    for (int block : {16, 32, 64, 128, 256})
      for (int chunk : {32, 64, 128, 256, 512}) {
        long workingSet = long(block) * chunk * 4 + 2L * chunk * headBytes;
        if (block > limit || chunk > limit || workingSet > l2Bytes)
          continue;
        Schedule s = best;
        s.queryBlock = block;
        s.kvChunk = chunk;
        add(s);
      }
  } else {
    for (int keys : {4, 8, 12, 16})
      for (int rows : {2, 4, 6, 8}) {
        Schedule s = best;
        s.qkTileKeys = keys;
        s.pvTileRows = rows;
        add(s);
      }
  }
  return result;
}

SdpaSpec withSchedule(SdpaSpec spec, const Schedule &s) {
  spec.schedule.queryBlock = s.queryBlock;
  spec.schedule.kvChunk = s.kvChunk;
  spec.schedule.qkTileKeys = s.qkTileKeys;
  spec.schedule.pvTileRows = s.pvTileRows;
  spec.schedule.vectorWidth = s.vectorWidth;
  spec.schedule.intelQkTile = {}; // a candidate is measured as it is
  return spec;
}

DecodeSpec withSchedule(DecodeSpec spec, const Schedule &s) {
  spec.schedule.splitKeys = s.splitKeys;
  spec.schedule.vectorWidth = s.vectorWidth;
  return spec;
}

double flopsPerCall(const TunedKernel &k) {
  if (k.prefill) {
    double flops = 4.0 * k.sdpa.numQueryHeads * double(k.length) * k.length *
                   k.sdpa.headDim;
    if (k.sdpa.window > 0 && k.sdpa.window < k.length)
      return 4.0 * k.sdpa.numQueryHeads * double(k.length) * k.sdpa.window *
             k.sdpa.headDim;
    return k.sdpa.causal ? flops / 2 : flops;
  }
  double keys =
      k.decode.window > 0 ? std::min(k.decode.window, k.length) : k.length;
  return 4.0 * k.batch * k.decode.numQueryHeads * keys * k.decode.headDim;
}

double kvBytesPerCall(const TunedKernel &k) {
  if (k.prefill)
    return 2.0 * k.sdpa.numKvHeads * double(k.length) * k.sdpa.headDim * 4;
  double element = k.decode.cacheElement == DType::F32  ? 4
                   : k.decode.cacheElement == DType::I8 ? 1
                                                               : 2;
  double keys =
      k.decode.window > 0 ? std::min(k.decode.window, k.length) : k.length;
  return 2.0 * k.batch * k.decode.numKvHeads * keys * k.decode.headDim *
         element;
}

} // namespace attn::tune
