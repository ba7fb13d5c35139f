//===- Int4Checkpoint.cpp - GPTQ and AWQ linear layers, as published ------===//

#include "attn/runtime/Int4Checkpoint.h"

#include <cstring>

namespace attn::runtime {

namespace {

/// AWQ's nibble of feature 8c + j within its word: the inverse of its
/// packing order 0 2 4 6 1 3 5 7.
constexpr int kAwqNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};

uint32_t wordAt(const TensorView &tensor, int64_t index) {
  uint32_t word; // the format promises no alignment
  std::memcpy(&word, static_cast<const char *>(tensor.data) + index * 4, 4);
  return word;
}

} // namespace

std::vector<Int4TensorSpec> int4Tensors(Int4Format format, int64_t out,
                                        int64_t in, int64_t group) {
  const int64_t groups = in / group;
  std::vector<Int4TensorSpec> specs = {
      {".qweight",
       format == Int4Format::Awq ? std::vector<int64_t>{in, out / 8}
                                 : std::vector<int64_t>{in / 8, out},
       TensorType::I32},
      {".qzeros", {groups, out / 8}, TensorType::I32},
      {".scales", {groups, out}, TensorType::F32}}; // F16 or BF16 stored
  if (format != Int4Format::Awq)
    specs.push_back({".g_idx", {in}, TensorType::I32});
  return specs;
}

Status Int4Layer::open(const Checkpoint &file, const std::string &base,
                       Int4Format format, int64_t out, int64_t in,
                       int64_t group, std::shared_ptr<const Int4Layer> &layer) {
  if (in % group != 0 || in % 8 != 0 || out % 8 != 0)
    return Status(StatusCode::InvalidArgument,
                  "'" + base + "': " + int4FormatName(format) +
                      " packs 8 values an int32 and whole groups: " +
                      std::to_string(out) + " x " + std::to_string(in) +
                      " in groups of " + std::to_string(group) +
                      " cannot be stored so");
  auto result = std::make_shared<Int4Layer>();
  result->format_ = format;
  result->out_ = out, result->in_ = in, result->group_ = group;
  result->qweight_ = file.find(base + ".qweight");
  result->qzeros_ = file.find(base + ".qzeros");
  const TensorView *scales = file.find(base + ".scales");
  if (!result->qweight_ || !result->qzeros_ || !scales)
    return Status(StatusCode::NotFound, "'" + base + "': tensors missing");
  result->scales_.resize(size_t((in / group) * out));
  readFloats(*scales, result->scales_.data());
  if (format != Int4Format::Awq) {
    const TensorView *gIdx = file.find(base + ".g_idx");
    if (!gIdx)
      return Status(StatusCode::NotFound, "'" + base + ".g_idx' is missing");
    for (int64_t k = 0; k < in; k++)
      if (int64_t(int32_t(wordAt(*gIdx, k))) != k / group)
        return Status(StatusCode::InvalidArgument,
                      "'" + base + ".g_idx' puts input " + std::to_string(k) +
                          " in group " +
                          std::to_string(int32_t(wordAt(*gIdx, k))) +
                          ", not " + std::to_string(k / group) +
                          ": act-order (desc_act) checkpoints with permuted "
                          "groups are not read");
  }
  layer = std::move(result);
  return Status::ok();
}

void Int4Layer::read(int64_t first, int64_t count, uint8_t *u, float *scales,
                     uint8_t *zeros) const {
  const int64_t groups = in_ / group_;
  auto nibble = [](uint32_t word, int i) { return uint8_t((word >> (4 * i)) & 15); };
  // The zero point of feature n in group g, as stored.
  auto zeroAt = [&](int64_t g, int64_t n) {
    const uint32_t word = wordAt(*qzeros_, g * (out_ / 8) + n / 8);
    if (format_ == Int4Format::Awq)
      return nibble(word, kAwqNibble[n % 8]);
    const uint8_t stored = nibble(word, int(n % 8));
    return format_ == Int4Format::Gptq ? uint8_t((stored + 1) & 15) : stored;
  };
  for (int64_t r = 0; r < count; r++) {
    const int64_t n = first + r;
    for (int64_t g = 0; g < groups; g++) {
      scales[r * groups + g] = scales_[size_t(g * out_ + n)];
      zeros[r * groups + g] = zeroAt(g, n);
    }
    uint8_t *row = u + r * in_;
    if (format_ == Int4Format::Awq) {
      for (int64_t k = 0; k < in_; k++)
        row[k] = nibble(wordAt(*qweight_, k * (out_ / 8) + n / 8),
                        kAwqNibble[n % 8]);
    } else {
      for (int64_t w = 0; w < in_ / 8; w++) {
        const uint32_t word = wordAt(*qweight_, w * out_ + n);
        for (int i = 0; i < 8; i++)
          row[8 * w + i] = nibble(word, i);
      }
    }
  }
}

} // namespace attn::runtime
