//===- WeightMatrix.cpp - a linear layer's weights, laid out for its kernels ===//
//
// The packer ModelWeights.h declares: rows of W (PyTorch's [out][in], read
// on demand from a checkpoint) into the panels the linear kernels stream,
// in the plan's weight dtype (KernelSpec.h and Int4Weights.h state the
// layouts).
//
//===----------------------------------------------------------------------===//

#include "ModelWeights.h"

#include "attn/runtime/DType.h"

#include <algorithm>

namespace attn::runtime {

void WeightMatrix::pack(const std::vector<WeightRows> &blocks,
                        int64_t inFeatures, int64_t panelWidth, DType to,
                        int64_t groupSize, bool withZeros, bool withMins) {
  type = to;
  in = inFeatures, panel = panelWidth, out = 0;
  group = to == DType::I4 || to == DType::I8 ? groupSize
          : to == DType::MXFP4                ? kMxBlock
                                              : 0;
  for (const WeightRows &block : blocks)
    out += block.count;
  for (auto *array : {&f32, &scales, &mins})
    array->edit().clear();
  narrow.edit().clear();
  int8.edit().clear();
  int4.edit().clear();
  zeros.edit().clear();
  exponents.edit().clear();
  if (out == 0)
    return;
  // Panel by panel: its `panel` source rows (PyTorch's [out][in]) are read
  // into `rows` (a few MiB at most: the whole f32 matrix never exists) and
  // laid out k outermost, a transposition through cache.
  std::vector<float> rows(size_t(panel * in));
  // The runs of panel q's features each block holds: onRun(block, its first
  // row there, rows, the first feature).
  auto eachRun = [&](int64_t q, auto &&onRun) {
    const int64_t first = q * panel, width = std::min(panel, out - first);
    int64_t begin = 0; // the first row of the block at hand
    for (const WeightRows &block : blocks) {
      const int64_t from = std::max(first, begin),
                    until = std::min(first + width, begin + block.count);
      if (from < until)
        onRun(block, from - begin, until - from, from);
      begin += block.count;
    }
  };
  // Panel q's rows into `rows`.
  auto readPanel = [&](int64_t q) {
    eachRun(q, [&](const WeightRows &block, int64_t row, int64_t n,
                   int64_t feature) {
      block.read(row, n, rows.data() + size_t((feature - q * panel) * in));
    });
  };
  if (to == DType::I8 && group > 0) {
    // Each (group, feature) quantized on its own (absmax / 127), or placed
    // as the checkpoint quantized it; inputs in pairs as below, the scales
    // where int4's go.
    const Int4Layout layout = int4Layout();
    const int64_t groups = layout.groups();
    PooledVector<float> &scale = scales.edit();
    PooledVector<int8_t> &values = int8.edit();
    scale.assign(layout.scaleCount(), 0.0f);
    values.assign(size_t(panels() * this->rows() * words()), 0);
    std::vector<int8_t> q;
    std::vector<float> s;
    for (int64_t p = 0; p < panels(); p++)
      eachRun(p, [&](const WeightRows &block, int64_t row, int64_t n,
                     int64_t from) {
        q.assign(size_t(n * in), 0);
        s.assign(size_t(n * groups), 0.0f);
        if (block.readInt8) {
          block.readInt8(row, n, q.data(), s.data());
        } else {
          block.read(row, n, rows.data());
          for (int64_t r = 0; r < n; r++)
            for (int64_t g = 0; g < groups; g++) {
              const int64_t k0 = g * group, count = std::min(group, in - k0);
              s[size_t(r * groups + g)] = quantizeRow(
                  &rows[size_t(r * in + k0)], &q[size_t(r * in + k0)],
                  size_t(count));
            }
        }
        for (int64_t r = 0; r < n; r++) {
          const int64_t feature = from + r, f = feature % panel;
          for (int64_t k = 0; k < in; k++)
            values[size_t((p * this->rows() + k / 2) * words() + 2 * f +
                          k % 2)] = q[size_t(r * in + k)];
          for (int64_t g = 0; g < groups; g++)
            scale[layout.scaleOf(g, feature)] = s[size_t(r * groups + g)];
        }
      });
    return;
  }
  if (to == DType::I8) {
    // Each output feature quantized on its own; inputs in pairs: byte
    // 2p + r of row j is input 2j + r of feature p.
    PooledVector<float> &scale = scales.edit();
    PooledVector<int8_t> &values = int8.edit();
    scale.resize(size_t(out));
    values.assign(size_t(panels() * this->rows() * words()), 0);
    std::vector<int8_t> quantized(static_cast<size_t>(in));
    for (int64_t q = 0; q < panels(); q++) {
      const int64_t first = q * panel, width = std::min(panel, out - first);
      readPanel(q);
      for (int64_t p = 0; p < width; p++) {
        scale[size_t(first + p)] =
            quantizeRow(&rows[size_t(p * in)], quantized.data(), size_t(in));
        for (int64_t k = 0; k < in; k++)
          values[size_t((q * this->rows() + k / 2) * words() + 2 * p + k % 2)] =
              quantized[size_t(k)];
      }
    }
    return;
  }
  if (to == DType::MXFP4) {
    // Each block of 32 inputs of a feature as the checkpoint stores it
    // (readMx), or converted from floats (quantizeMxfp4Block).
    const Int4Layout layout = int4Layout();
    const int64_t groups = layout.groups();
    PooledVector<uint16_t> &words = int4.edit();
    PooledVector<uint8_t> &exponent = exponents.edit();
    words.assign(layout.weightWords(), 0);
    exponent.assign(layout.scaleCount(), 0);
    std::vector<uint8_t> codes, e;
    for (int64_t q = 0; q < panels(); q++)
      eachRun(q, [&](const WeightRows &block, int64_t row, int64_t n,
                     int64_t from) {
        codes.assign(size_t(n * in), 0);
        e.assign(size_t(n * groups), 0);
        if (block.readMx) {
          block.readMx(row, n, codes.data(), e.data());
        } else {
          block.read(row, n, rows.data());
          for (int64_t r = 0; r < n; r++)
            for (int64_t g = 0; g < groups; g++) {
              const int64_t k0 = g * kMxBlock,
                            count = std::min(kMxBlock, in - k0);
              e[size_t(r * groups + g)] = quantizeMxfp4Block(
                  &rows[size_t(r * in + k0)], count,
                  &codes[size_t(r * in + k0)]);
            }
        }
        for (int64_t r = 0; r < n; r++) {
          for (int64_t k = 0; k < in; k++)
            layout.put(words.data(), k, from + r, codes[size_t(r * in + k)]);
          for (int64_t g = 0; g < groups; g++)
            exponent[layout.scaleOf(g, from + r)] = e[size_t(r * groups + g)];
        }
      });
    return;
  }
  if (to == DType::I4 && withMins) {
    // Each (group, feature) with its minimum (quantizeInt4MinGroup), or
    // placed as the checkpoint quantized it (readInt4Mins).
    const Int4Layout layout = int4Layout();
    const int64_t groups = layout.groups();
    PooledVector<uint16_t> &words = int4.edit();
    PooledVector<float> &scale = scales.edit(), &least = mins.edit();
    words.assign(layout.weightWords(), 0);
    scale.assign(layout.scaleCount(), 0.0f);
    least.assign(layout.scaleCount(), 0.0f);
    std::vector<uint8_t> u;
    std::vector<float> s, m;
    for (int64_t q = 0; q < panels(); q++)
      eachRun(q, [&](const WeightRows &block, int64_t row, int64_t n,
                     int64_t from) {
        u.assign(size_t(n * in), 0);
        s.assign(size_t(n * groups), 0.0f);
        m.assign(size_t(n * groups), 0.0f);
        if (block.readInt4Mins) {
          block.readInt4Mins(row, n, u.data(), s.data(), m.data());
        } else {
          block.read(row, n, rows.data());
          for (int64_t r = 0; r < n; r++)
            for (int64_t g = 0; g < groups; g++) {
              const int64_t k0 = g * group, count = std::min(group, in - k0);
              quantizeInt4MinGroup(&rows[size_t(r * in + k0)], count,
                                   &u[size_t(r * in + k0)],
                                   s[size_t(r * groups + g)],
                                   m[size_t(r * groups + g)]);
            }
        }
        for (int64_t r = 0; r < n; r++) {
          for (int64_t k = 0; k < in; k++)
            layout.put(words.data(), k, from + r, u[size_t(r * in + k)]);
          for (int64_t g = 0; g < groups; g++) {
            scale[layout.scaleOf(g, from + r)] = s[size_t(r * groups + g)];
            least[layout.scaleOf(g, from + r)] = m[size_t(r * groups + g)];
          }
        }
      });
    return;
  }
  if (to == DType::I4) {
    // Each (group, feature) quantized on its own (symmetric, zero point 8),
    // or placed as the checkpoint quantized it.
    const Int4Layout layout = int4Layout();
    const int64_t groups = layout.groups();
    PooledVector<uint16_t> &words = int4.edit();
    PooledVector<float> &scale = scales.edit();
    words.assign(layout.weightWords(), 0);
    scale.assign(layout.scaleCount(), 0.0f);
    for (const WeightRows &block : blocks)
      withZeros = withZeros || (block.readInt4 && !block.symmetricInt4);
    PooledVector<uint8_t> &zero = zeros.edit();
    if (withZeros)
      zero.assign(layout.scaleCount(), kInt4SymmetricZero);
    std::vector<uint8_t> u, z;
    std::vector<float> s;
    for (int64_t q = 0; q < panels(); q++)
      eachRun(q, [&](const WeightRows &block, int64_t row, int64_t n,
                     int64_t from) {
        if (!block.readInt4) {
          block.read(row, n, rows.data());
          for (int64_t r = 0; r < n; r++)
            layout.quantizeFeature(&rows[size_t(r * in)], from + r,
                                   words.data(), scale.data());
          return;
        }
        u.resize(size_t(n * in));
        s.resize(size_t(n * groups));
        z.resize(size_t(n * groups));
        block.readInt4(row, n, u.data(), s.data(), z.data());
        for (int64_t r = 0; r < n; r++) {
          for (int64_t k = 0; k < in; k++)
            layout.put(words.data(), k, from + r, u[size_t(r * in + k)]);
          for (int64_t g = 0; g < groups; g++) {
            scale[layout.scaleOf(g, from + r)] = s[size_t(r * groups + g)];
            if (withZeros)
              zero[layout.scaleOf(g, from + r)] = z[size_t(r * groups + g)];
          }
        }
      });
    return;
  }
  const size_t count = size_t(panels() * in * panel);
  PooledVector<float> &wide = f32.edit();
  PooledVector<uint16_t> &bits = narrow.edit();
  if (to == DType::F32)
    wide.assign(count, 0.0f);
  else
    bits.assign(count, 0);
  std::vector<float> line(static_cast<size_t>(panel));
  for (int64_t q = 0; q < panels(); q++) {
    const int64_t first = q * panel, width = std::min(panel, out - first);
    readPanel(q);
    for (int64_t k = 0; k < in; k++) {
      const size_t at = size_t((q * in + k) * panel);
      if (to == DType::F32) {
        for (int64_t p = 0; p < width; p++)
          wide[at + p] = rows[size_t(p * in + k)];
        continue;
      }
      std::fill(line.begin(), line.end(), 0.0f);
      // bf16 in pairs: uint16 2p is feature p, 2p + 1 feature p + panel/2
      // (the halves of a little-endian uint32 word).
      for (int64_t p = 0; p < width; p++)
        line[pairs() ? (p % words()) * 2 + p / words() : p] =
            rows[size_t(p * in + k)];
      encode(to, line.data(), &bits[at], size_t(panel));
    }
  }
}

WeightMatrix WeightMatrix::outputs(int64_t first, int64_t count) const {
  WeightMatrix view;
  view.type = type;
  view.in = in, view.out = count, view.panel = panel, view.group = group;
  // Every array holds the same number of elements per panel.
  const int64_t from = first / panel, n = count / panel, all = panels();
  auto slice = [&](const auto &array, auto &to) {
    if (!array.empty())
      to = array.slice(size_t(from) * (array.size() / size_t(all)),
                       size_t(n) * (array.size() / size_t(all)));
  };
  slice(f32, view.f32);
  slice(narrow, view.narrow);
  slice(int8, view.int8);
  slice(int4, view.int4);
  slice(scales, view.scales);
  slice(zeros, view.zeros);
  slice(mins, view.mins);
  slice(exponents, view.exponents);
  return view;
}

} // namespace attn::runtime
