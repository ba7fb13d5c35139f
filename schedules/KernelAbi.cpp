//===- KernelAbi.cpp - the buffers every generated kernel takes -----------===//

#include "attn/schedules/KernelAbi.h"

#include <algorithm>

namespace attn {

int KernelBuffer::rank() const {
  return int(std::count(shape.begin(), shape.end(), '['));
}

BufferElement cacheBufferElement(DType element, KernelPlace place) {
  switch (element) {
  case DType::F32:
    return BufferElement::F32;
  case DType::F16:
    return BufferElement::F16;
  case DType::BF16:
    return place == KernelPlace::Gpu ? BufferElement::U16 : BufferElement::BF16;
  case DType::I8:
    return BufferElement::I8;
  case DType::I4: // weights only
  case DType::MXFP4:
    break;
  }
  return BufferElement::F32;
}

const char *bufferElementName(BufferElement element) {
  switch (element) {
  case BufferElement::F32:
    return "float32";
  case BufferElement::F16:
    return "float16";
  case BufferElement::BF16:
    return "bfloat16";
  case BufferElement::U16:
    return "uint16";
  case BufferElement::U32:
    return "uint32";
  case BufferElement::I8:
    return "int8";
  case BufferElement::U8:
    return "uint8";
  case BufferElement::I32:
    return "int32";
  }
  return "?";
}

namespace {
using E = BufferElement;
constexpr BufferRole kOut = BufferRole::Output;
} // namespace

std::vector<KernelBuffer> kernelBuffers(const SdpaSpec &spec) {
  std::vector<KernelBuffer> buffers = {
      {"query", E::F32, "[batch][q_len][query_heads][head_dim]"},
      {"key", E::F32, "[batch][kv_len][kv_heads][head_dim]"},
      {"value", E::F32, "[batch][kv_len][kv_heads][head_dim]"}};
  if (spec.keyPadding)
    buffers.push_back({"key_lengths", E::I32, "[batch]"});
  if (spec.sinks)
    buffers.push_back({"sinks", E::F32, "[query_heads]"});
  buffers.push_back(
      {"output", E::F32, "[batch][q_len][query_heads][head_dim]", kOut});
  return buffers;
}

std::vector<KernelBuffer> kernelBuffers(const DecodeSpec &spec,
                                        KernelPlace place) {
  const BufferElement pool = cacheBufferElement(spec.cacheElement, place);
  std::vector<KernelBuffer> buffers = {
      {"query", E::F32, "[batch][q_len][query_heads][head_dim]"},
      {"key_pages", pool, "[num_pages][page_size][kv_heads][head_dim]"},
      {"value_pages", pool, "[num_pages][page_size][kv_heads][head_dim]"}};
  if (spec.cacheElement == DType::I8) {
    buffers.push_back(
        {"key_scales", E::F32, "[num_pages][page_size][kv_heads]"});
    buffers.push_back(
        {"value_scales", E::F32, "[num_pages][page_size][kv_heads]"});
  }
  buffers.push_back({"block_table", E::I32, "[batch][max_pages]"});
  buffers.push_back({"seq_lens", E::I32, "[batch]"});
  if (spec.sinks)
    buffers.push_back({"sinks", E::F32, "[query_heads]"});
  buffers.push_back(
      {"output", E::F32, "[batch][q_len][query_heads][head_dim]", kOut});
  return buffers;
}

std::vector<KernelBuffer> kernelBuffers(const LinearSpec &spec,
                                        KernelPlace place) {
  const bool gated = spec.inputGate != Activation::None;
  std::vector<KernelBuffer> buffers = {
      {"input", E::F32,
       gated ? "[tokens][2 * in_features]" : "[tokens][in_features]"}};
  // The grouped expert variant: W, its scales and bias stack `experts`
  // matrices ([experts * panels] panels, [experts * out_features] scales),
  // row m using expert_index[m]'s.
  if (spec.groupedExperts)
    buffers.push_back({"expert_index", E::I32, "[tokens]"});
  switch (spec.weightElement) {
  case DType::BF16:
    buffers.push_back({"weight", E::U32, "[panels][in_features][16]"});
    break;
  case DType::I8:
    buffers.push_back({"weight", E::I8, "[panels][(in_features + 1) / 2][32]"});
    buffers.push_back({"weight_scales", E::F32,
                       spec.weightGroup ? "[panels][groups][16]"
                                        : "[out_features]"});
    break;
  case DType::I4:
    buffers.push_back({"weight", E::U16, "[panels][groups * group / 8][32]"});
    buffers.push_back({"weight_scales", E::F32, "[panels][groups][16]"});
    if (spec.weightZeros)
      buffers.push_back({"weight_zeros", E::U8, "[panels][groups][16]"});
    if (spec.weightMins)
      buffers.push_back({"weight_mins", E::F32, "[panels][groups][16]"});
    break;
  case DType::MXFP4: // E8M0 exponents as the scales
    buffers.push_back({"weight", E::U16, "[panels][groups * 4][32]"});
    buffers.push_back({"weight_scales", E::U8, "[panels][groups][16]"});
    break;
  case DType::F16:
    buffers.push_back({"weight", E::F16, "[panels][in_features][16]"});
    break;
  case DType::F32:
    buffers.push_back({"weight", E::F32, "[panels][in_features][16]"});
    break;
  }
  if (spec.bias)
    buffers.push_back({"bias", E::F32, "[out_features]"});
  if (spec.ropeTheta > 0)
    buffers.push_back({"positions", E::I32, "[tokens]"});
  if (spec.qkNormEps > 0)
    buffers.push_back({"qk_norm_weight", E::F32, "[rope_heads * head_dim]"});
  if (spec.residual)
    buffers.push_back({"residual", E::F32, "[tokens][out_features]"});
  const bool append = spec.cacheAppend.kvHeads > 0;
  if (append)
    buffers.push_back({"cache_slots", E::I32, "[tokens]"});
  buffers.push_back({"output", E::F32, "[tokens][out_features]", kOut});
  if (append) {
    const BufferElement pool =
        cacheBufferElement(spec.cacheAppend.element, place);
    buffers.push_back({"key_cache", pool, "[slots][kv_heads][head_dim]", kOut});
    buffers.push_back(
        {"value_cache", pool, "[slots][kv_heads][head_dim]", kOut});
    if (spec.cacheAppend.element == DType::I8) {
      buffers.push_back({"key_scales", E::F32, "[slots][kv_heads]", kOut});
      buffers.push_back({"value_scales", E::F32, "[slots][kv_heads]", kOut});
    }
  }
  if (spec.argmax)
    buffers.push_back({"best_token", E::I32, "[tokens]", kOut});
  return buffers;
}

std::vector<KernelBuffer> kernelBuffers(const NormSpec &spec) {
  std::vector<KernelBuffer> buffers = {{"input", E::F32, "[tokens][dim]"},
                                       {"weight", E::F32, "[dim]"}};
  if (spec.kind == NormKind::LayerNorm)
    buffers.push_back({"bias", E::F32, "[dim]"});
  if (spec.residual)
    buffers.push_back({"residual", E::F32, "[tokens][dim]"});
  buffers.push_back({"output", E::F32, "[tokens][dim]", kOut});
  return buffers;
}

std::vector<KernelBuffer> kernelBuffers(const EmbeddingSpec &spec) {
  std::vector<KernelBuffer> buffers = {{"tokens", E::I32, "[tokens]"},
                                       {"positions", E::I32, "[tokens]"},
                                       {"table", E::F32, "[vocab][dim]"}};
  if (spec.positions == PositionKind::Learned)
    buffers.push_back(
        {"position_table", E::F32, "[max_positions + offset][dim]"});
  buffers.push_back({"output", E::F32, "[tokens][dim]", kOut});
  return buffers;
}

} // namespace attn
