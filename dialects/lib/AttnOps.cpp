//===- AttnOps.cpp - attn dialect operations ------------------------------===//

#include "attn/AttnOps.h"
#include "attn/Limits.h"
#include "attn/Support.h"
#include "attn/runtime/Int4Weights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

#define GET_OP_CLASSES
#include "attn/AttnOps.cpp.inc"

namespace {
// Dimension positions of a [batch, sequence, heads, head_dim] activation.
enum ActivationDim { kBatch = 0, kSeq = 1, kHeads = 2, kHeadDim = 3 };

/// Checks that a static extent matches what the op's attributes declare.
LogicalResult checkExtent(Operation *op, StringRef operand,
                          RankedTensorType type, ActivationDim dim,
                          StringRef what, int64_t expected,
                          StringRef attrName) {
  int64_t actual = type.getDimSize(dim);
  if (ShapedType::isDynamic(actual) || actual == expected)
    return success();
  return op->emitOpError() << operand << " has " << actual << " " << what
                           << " but " << attrName << " = " << expected;
}

/// Checks that two operands agree on a dimension where both are static.
LogicalResult checkSameExtent(Operation *op, StringRef lhsName,
                              RankedTensorType lhs, StringRef rhsName,
                              RankedTensorType rhs, ActivationDim dim,
                              StringRef what) {
  int64_t a = lhs.getDimSize(dim), b = rhs.getDimSize(dim);
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b)
    return success();
  return op->emitOpError() << lhsName << " and " << rhsName << " disagree on "
                           << what << " (" << a << " vs " << b << ")";
}

/// Checks that an optional float attribute, where present, is positive and
/// finite (scales, softcaps, RoPE bases).
LogicalResult checkPositiveFinite(Operation *op, StringRef name,
                                  std::optional<APFloat> value) {
  if (value && !(value->convertToFloat() > 0.0f &&
                 std::isfinite(value->convertToFloat())))
    return op->emitOpError() << name << " must be positive and finite";
  return success();
}

/// `value` of attribute `name` within attnc's limit (Limits.h).
LogicalResult checkAtMost(Operation *op, StringRef name, int64_t value,
                          int64_t limit) {
  if (value <= limit)
    return success();
  return op->emitOpError() << name << " must be at most " << limit << ", got "
                           << value;
}

/// The attention settings attn.sdpa, attn.attention_layer and attn.kernel
/// share (Attn_HeadSettings and Attn_LogitSettings in AttnOps.td), checked
/// alike for all three: attnc's limits, whole KV-head groups, a window only
/// over a causal mask, and a positive finite softcap and scale.
template <class Op>
LogicalResult verifyAttentionSettings(Op op, bool causal,
                                      std::optional<APFloat> scale) {
  Operation *operation = op.getOperation();
  const int64_t queryHeads = op.getNumQueryHeads();
  const int64_t kvHeads = op.getNumKvHeads();
  const int64_t headDim = op.getHeadDim();
  if (failed(checkAtMost(operation, "num_query_heads", queryHeads,
                         limits::kHeads)) ||
      failed(checkAtMost(operation, "num_kv_heads", kvHeads, limits::kHeads)) ||
      failed(checkAtMost(operation, "head_dim", headDim, limits::kHeadDim)) ||
      failed(checkAtMost(
          operation, "(num_query_heads + 2 * num_kv_heads) * head_dim",
          (queryHeads + 2 * kvHeads) * headDim, limits::kFeatures)) ||
      failed(checkAtMost(operation, "window",
                         int64_t(op.getWindow().value_or(0)), limits::kLength)))
    return failure();
  if (queryHeads % kvHeads != 0)
    return op.emitOpError()
           << "num_query_heads (" << queryHeads
           << ") must be a multiple of num_kv_heads (" << kvHeads << ")";
  if (op.getWindow() && !causal)
    return op.emitOpError() << "a sliding window needs a causal mask: it "
                               "limits how far back a query sees";
  if (failed(checkPositiveFinite(operation, "scale", scale)) ||
      failed(checkPositiveFinite(operation, "softcap", op.getSoftcap())))
    return failure();
  return success();
}
} // namespace

StringRef mlir::attn::ropeScalingType(DictionaryAttr scaling) {
  for (StringRef key : {"rope_type", "type"})
    if (auto type = scaling.getAs<StringAttr>(key))
      return type.getValue();
  return "";
}

std::optional<double> mlir::attn::ropeScalingNumber(DictionaryAttr scaling,
                                                    StringRef key) {
  Attribute value = scaling.get(key);
  if (auto integer = dyn_cast_or_null<IntegerAttr>(value))
    return double(integer.getInt());
  if (auto real = dyn_cast_or_null<FloatAttr>(value))
    return real.getValueAsDouble();
  return std::nullopt;
}

std::optional<ArrayRef<float>>
mlir::attn::ropeScalingList(DictionaryAttr scaling, StringRef key) {
  if (auto list = scaling.getAs<DenseF32ArrayAttr>(key))
    return list.asArrayRef();
  return std::nullopt;
}

std::string mlir::attn::ropeScalingProblem(DictionaryAttr scaling,
                                           int64_t rotaryDim) {
  if (std::string problem = ropeScalingProblem(scaling); !problem.empty())
    return problem;
  if (ropeScalingType(scaling) != "longrope")
    return "";
  for (StringRef key : {"short_factor", "long_factor"})
    if (int64_t(ropeScalingList(scaling, key)->size()) != rotaryDim / 2)
      return ("rope_scaling longrope's '" + key + "' lists " +
              Twine(ropeScalingList(scaling, key)->size()) +
              " factors; the rotating channels (" + Twine(rotaryDim) +
              ") need " + Twine(rotaryDim / 2))
          .str();
  return "";
}

std::string mlir::attn::ropeScalingProblem(DictionaryAttr scaling) {
  StringRef type = ropeScalingType(scaling);
  // Required positive numbers, and the optional keys of the type.
  SmallVector<StringRef> numbers, optional;
  if (type == "linear")
    numbers = {"factor"};
  else if (type == "llama3")
    numbers = {"factor", "low_freq_factor", "high_freq_factor",
               "original_max_position_embeddings"};
  else if (type == "yarn")
    numbers = {"factor", "original_max_position_embeddings"},
    optional = {"attention_factor", "beta_fast", "beta_slow", "mscale",
                "mscale_all_dim"};
  else if (type == "dynamic")
    numbers = {"factor", "original_max_position_embeddings"};
  else if (type == "longrope")
    numbers = {"factor", "original_max_position_embeddings"},
    optional = {"attention_factor"};
  else if (type != "default")
    return ("unknown rope_scaling type '" + type +
            "' (expected default, linear, llama3, yarn, dynamic or longrope)")
        .str();
  for (NamedAttribute entry : scaling) {
    StringRef key = entry.getName().getValue();
    if (type == "longrope" && (key == "short_factor" || key == "long_factor")) {
      std::optional<ArrayRef<float>> factors = ropeScalingList(scaling, key);
      if (!factors || factors->empty() ||
          llvm::any_of(*factors, [](float f) {
            return !(f > 0.0f) || !std::isfinite(f);
          }))
        return ("rope_scaling longrope's '" + key +
                "' must be a list of positive numbers")
            .str();
      continue;
    }
    if (type == "yarn" && key == "truncate") {
      if (!isa<BoolAttr>(entry.getValue()))
        return "rope_scaling yarn's 'truncate' must be true or false";
      continue;
    }
    if (key != "rope_type" && key != "type" &&
        !llvm::is_contained(numbers, key) && !llvm::is_contained(optional, key))
      return ("rope_scaling key '" + key + "' is not used by type '" + type +
              "': attnc would ignore it")
          .str();
  }
  for (StringRef key : numbers) {
    std::optional<double> value = ropeScalingNumber(scaling, key);
    if (!value || !(*value > 0.0) || !std::isfinite(*value))
      return ("rope_scaling '" + type + "' needs '" + key +
              "', a positive number")
          .str();
  }
  for (StringRef key : optional) {
    std::optional<double> value = ropeScalingNumber(scaling, key);
    if (scaling.get(key) &&
        (!value || !(*value > 0.0) || !std::isfinite(*value)))
      return ("rope_scaling '" + type + "' key '" + key +
              "' must be a positive number")
          .str();
  }
  if (type == "longrope" && (!scaling.get("short_factor") ||
                             !scaling.get("long_factor")))
    return "rope_scaling longrope needs 'short_factor' and 'long_factor'";
  if (type == "llama3" && !(*ropeScalingNumber(scaling, "low_freq_factor") <
                            *ropeScalingNumber(scaling, "high_freq_factor")))
    return "rope_scaling llama3 needs low_freq_factor < high_freq_factor";
  return "";
}

float SdpaOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

LogicalResult SdpaOp::verify() {
  if (failed(verifyAttentionSettings(*this, getCausal(), getScale())))
    return failure();
  int64_t queryHeads = getNumQueryHeads();
  int64_t kvHeads = getNumKvHeads();
  int64_t headDim = getHeadDim();
  auto query = cast<RankedTensorType>(getQuery().getType());
  auto key = cast<RankedTensorType>(getKey().getType());
  auto value = cast<RankedTensorType>(getValue().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  Operation *op = getOperation();
  if (failed(checkExtent(op, "query", query, kHeads, "heads", queryHeads,
                         "num_query_heads")) ||
      failed(checkExtent(op, "key", key, kHeads, "heads", kvHeads,
                         "num_kv_heads")) ||
      failed(checkExtent(op, "value", value, kHeads, "heads", kvHeads,
                         "num_kv_heads")) ||
      failed(checkExtent(op, "query", query, kHeadDim, "channels per head",
                         headDim, "head_dim")) ||
      failed(checkExtent(op, "key", key, kHeadDim, "channels per head", headDim,
                         "head_dim")) ||
      failed(checkExtent(op, "value", value, kHeadDim, "channels per head",
                         headDim, "head_dim")) ||
      failed(checkSameExtent(op, "key", key, "value", value, kSeq,
                             "the key sequence length")) ||
      failed(checkSameExtent(op, "key", key, "value", value, kBatch,
                             "the batch size")) ||
      failed(checkSameExtent(op, "query", query, "key", key, kBatch,
                             "the batch size")))
    return failure();
  if (failed(verifyCompatibleShape(result, query)))
    return emitOpError() << "result type " << result
                         << " must have the shape of the query " << query;
  return success();
}

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

/// f32, f16, bf16, i8 (with per-output-feature scales) or i4 (with scales
/// per group of inputs): the weight element types the linear kernels read.
static bool isWeightElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() ||
         type.isSignlessInteger(8) || type.isSignlessInteger(4) ||
         isa<Mxfp4Type>(type);
}

/// An op's weight_dtype and weight_group together: a group (32, 64 or 128
/// inputs) exactly when the weights are i4; i8 weights may have one (16 or
/// 32: GGUF's blocks) instead of a scale per output feature.
template <typename OpType> static LogicalResult verifyWeights(OpType op) {
  std::optional<Type> weights = op.getWeightDtype();
  if (weights && !isWeightElementType(*weights))
    return op.emitOpError()
           << "weight_dtype must be f32, f16, bf16, i8, i4 or !attn.mxfp4";
  const bool int4 = weights && weights->isSignlessInteger(4);
  const bool int8 = weights && weights->isSignlessInteger(8);
  std::optional<uint64_t> group = op.getWeightGroup();
  if (int4 && !group)
    return op.emitOpError() << "i4 weights need a weight_group";
  if (!int4 && !int8 && group)
    return op.emitOpError() << "weight_group applies to i4 and i8 weights only";
  if (group && int4 && !::attn::isInt4Group(int64_t(*group)))
    return op.emitOpError() << "weight_group must be " << ::attn::kInt4Groups
                            << " for i4 weights, got " << *group;
  if (group && int8 && !::attn::isInt8Group(int64_t(*group)))
    return op.emitOpError() << "weight_group must be " << ::attn::kInt8Groups
                            << " for i8 weights, got " << *group;
  return success();
}

LogicalResult ModelOp::verify() {
  if (failed(checkAtMost(*this, "d_model", getDModel(), limits::kDModel)) ||
      failed(checkAtMost(*this, "max_batch", getMaxBatch(), limits::kBatch)))
    return failure();
  if (failed(verifyWeights(*this)))
    return failure();
  if (getWeightDtype() && isa<Mxfp4Type>(*getWeightDtype()))
    return emitOpError() << "!attn.mxfp4 is the weight type of a "
                            "checkpoint's experts (attn.ffn's "
                            "expert_weight_dtype), not a model's";
  if (getWeightMins() &&
      (!getWeightDtype() || !getWeightDtype()->isSignlessInteger(4) ||
       getWeightFormat()))
    return emitOpError() << "weight_mins applies to i4 weights without a "
                            "weight_format";
  if (std::optional<StringRef> format = getWeightFormat()) {
    ::attn::Int4Format parsed;
    if (!::attn::parseInt4Format(format->str(), parsed))
      return emitOpError() << "weight_format must be " << ::attn::kInt4Formats;
    if (!getWeightDtype() || !getWeightDtype()->isSignlessInteger(4))
      return emitOpError() << "weight_format " << *format
                           << " holds i4 weights: weight_dtype must be i4";
  }
  if (std::optional<StringRef> naming = getWeightNaming();
      naming && !llvm::is_contained(kWeightNamings, *naming)) {
    InFlightDiagnostic diagnostic = emitOpError() << "weight_naming must be ";
    llvm::interleave(kWeightNamings, diagnostic, ", ");
    return diagnostic << "; got " << *naming;
  }
  if (std::optional<APFloat> offset = getNormWeightOffset();
      offset && !std::isfinite(offset->convertToFloat()))
    return emitOpError() << "norm_weight_offset must be finite";
  StringRef kind = getKind();
  if (kind != "decoder-only" && kind != "encoder" && kind != "encoder-decoder")
    return emitOpError() << "kind must be decoder-only, encoder or "
                            "encoder-decoder, got \""
                         << kind << "\"";
  // Cross-attention reads an encoder's output: the model must have one.
  bool hasEncoderStack = false;
  for (Operation &op : getBody().front())
    if (auto stack = op.getAttrOfType<StringAttr>("stack"))
      hasEncoderStack |= stack.getValue() == "encoder";
  for (AttentionLayerOp layer : getLayers()) {
    if (layer.getKind() != LayerKind::Cross)
      continue;
    if (kind != "encoder-decoder")
      return layer.emitOpError()
             << "cross-attention needs an encoder, but the model's kind is \""
             << kind << "\"; make it \"encoder-decoder\"";
    if (hasBlocks() && !hasEncoderStack)
      return layer.emitOpError()
             << "cross-attention needs an encoder, but no op of this model "
                "is in the encoder stack";
  }
  return success();
}

namespace {
LogicalResult verifyKernelRefs(
    Operation *op,
    std::initializer_list<std::pair<StringRef, SymbolRefAttr>> refs);
} // namespace

/// compute_dtype: f32 or bf16; bf16 products pair up head channels.
static LogicalResult
verifyComputeDtype(Operation *op, std::optional<Type> dtype, uint64_t headDim) {
  if (!dtype)
    return success();
  if (!dtype->isF32() && !dtype->isBF16())
    return op->emitOpError()
           << "compute_dtype must be f32 or bf16, got " << *dtype;
  if (dtype->isBF16() && headDim % 2 != 0)
    return op->emitOpError()
           << "bf16 compute multiplies head channels in pairs: head_dim ("
           << headDim << ") must be even; use compute_dtype f32";
  return success();
}

LogicalResult AttentionLayerOp::verify() {
  if (failed(verifyAttentionSettings(*this, getMask() != MaskKind::None,
                                     getScale())))
    return failure();
  MaskKind mask = getMask();
  if ((mask == MaskKind::SlidingWindow) != getWindow().has_value())
    return emitOpError() << "a window is required with, and only with, a "
                            "sliding_window mask";
  if (std::optional<uint64_t> window = getWindow())
    if (KvCacheAttr cache = getCacheAttr();
        cache && int64_t(*window) > cache.getMaxLength())
      return emitOpError() << "a sliding window of " << *window
                           << " tokens is longer than the cache's max_length ("
                           << cache.getMaxLength()
                           << "): every key would be seen; use a causal mask "
                              "or a longer cache";
  if (getKind() == LayerKind::Cross && mask != MaskKind::None)
    return emitOpError() << "cross-attention sees the whole encoder output: "
                            "its mask must be none";
  if (failed(checkPositiveFinite(*this, "rope_theta", getRopeTheta())))
    return failure();
  if (DictionaryAttr scaling = getRopeScalingAttr()) {
    if (!getRopeTheta())
      return emitOpError() << "rope_scaling needs rope_theta";
    if (std::string problem = ropeScalingProblem(
            scaling, int64_t(getRopeDim().value_or(getHeadDim())));
        !problem.empty())
      return emitOpError() << problem;
  }
  // The norm runs in the projection's epilogue beside RoPE, on the heads
  // the projection rotates.
  if (getQkNorm() && !getRopeTheta())
    return emitOpError() << "qk_norm is computed beside RoPE: it needs "
                            "rope_theta";
  if (getQkNorm() && getKind() != LayerKind::Self)
    return emitOpError() << "qk_norm applies to self-attention layers";
  if (std::optional<uint64_t> ropeDim = getRopeDim()) {
    if (!getRopeTheta())
      return emitOpError() << "rope_dim needs rope_theta";
    if (*ropeDim % 2 != 0 || *ropeDim > getHeadDim())
      return emitOpError() << "rope_dim must be even and at most head_dim ("
                           << getHeadDim() << "), got " << *ropeDim;
  }
  if (std::optional<StringRef> stack = getStack())
    if (*stack != "encoder" && *stack != "decoder")
      return emitOpError() << "stack must be encoder or decoder, got \""
                           << *stack << "\"";
  if (failed(verifyComputeDtype(*this, getComputeDtype(), getHeadDim())))
    return failure();
  if (getFusedCacheAppend() && !getCache())
    return emitOpError() << "fused_cache_append needs a layer with a cache";
  if (failed(verifyLatent()) || failed(verifyProjectionWeights()))
    return failure();
  return verifyKernelRefs(
      *this, {{"prefill_kernel", getPrefillKernelAttr()},
              {"decode_kernel", getDecodeKernelAttr()},
              {"query_kernel", getQueryKernelAttr()},
              {"key_value_kernel", getKeyValueKernelAttr()},
              {"output_kernel", getOutputKernelAttr()},
              {"query_down_kernel", getQueryDownKernelAttr()},
              {"query_norm_kernel", getQueryNormKernelAttr()},
              {"latent_norm_kernel", getLatentNormKernelAttr()},
              {"absorb_kernel", getAbsorbKernelAttr()},
              {"unabsorb_kernel", getUnabsorbKernelAttr()},
              {"value_kernel", getValueKernelAttr()}});
}

/// Projections' own weights (#attn.weights) where the model converts none
/// of its own (a GPTQ/AWQ checkpoint's are all in its format).
static LogicalResult verifyOwnWeights(Operation *op, bool any) {
  if (any && op->getParentOfType<ModelOp>().getWeightFormat())
    return op->emitOpError()
           << "a model with a weight_format reads every projection in it: "
              "no projection has weights of its own";
  return success();
}

LogicalResult AttentionLayerOp::verifyProjectionWeights() {
  const bool own = getQueryWeights() || getKeyWeights() || getValueWeights() ||
                   getOutputWeights();
  if (failed(verifyOwnWeights(*this, own)))
    return failure();
  if (own && getLatent())
    return emitOpError() << "a latent layer's projections read the model's "
                            "weight type";
  ModelOp model = (*this)->getParentOfType<ModelOp>();
  const WeightsAttr query = model.projectionWeights(getQueryWeightsAttr()),
                    key = model.projectionWeights(getKeyWeightsAttr()),
                    value = model.projectionWeights(getValueWeightsAttr());
  if (getFusedProjections() && (query != key || key != value))
    return emitOpError() << "fused_projections needs Q, K and V of one "
                            "weight type, got "
                         << query << ", " << key << " and " << value;
  if (key != value && getFusedCacheAppend())
    return emitOpError() << "fused_cache_append needs K and V of one weight "
                            "type (one kernel computes both), got "
                         << key << " and " << value;
  if (key != value && getKind() == LayerKind::Cross)
    return emitOpError() << "a cross layer's K and V are one projection of "
                            "the encoder output: they need one weight type";
  if (getValueKernel() &&
      (key == value || getFusedProjections() || !getKeyValueKernel()))
    return emitOpError() << "a value_kernel computes V beside a "
                            "key_value_kernel's K, where their weight types "
                            "differ";
  return success();
}

LogicalResult AttentionLayerOp::verifyLatent() {
  LatentAttr latent = getLatentAttr();
  if (!latent) {
    if (getQueryDownKernel() || getQueryNormKernel() || getLatentNormKernel() ||
        getAbsorbKernel() || getUnabsorbKernel())
      return emitOpError() << "latent kernels need a latent layer";
    return success();
  }
  // The absorbed form: H query heads over one key head of the cache rows
  // [rotated key, latent], whose values are the keys themselves.
  if (getKind() != LayerKind::Self)
    return emitOpError() << "latent attention applies to self-attention "
                            "layers";
  if (getNumKvHeads() != 1)
    return emitOpError() << "a latent layer attends over one shared key "
                            "head: num_kv_heads must be 1, got "
                         << getNumKvHeads();
  const int64_t row = latent.getRopeDim() + latent.getRank();
  if (int64_t(getHeadDim()) != row)
    return emitOpError() << "a latent layer's head_dim is its cache row, "
                            "rope_dim + rank = "
                         << row << ", got " << getHeadDim();
  if (!getRopeTheta())
    return emitOpError() << "a latent layer rotates its rope_dim channels: "
                            "it needs rope_theta";
  if (getRopeDim())
    return emitOpError() << "a latent layer's rotated channels are its "
                            "latent's rope_dim; remove rope_dim";
  if (getQkNorm())
    return emitOpError() << "qk_norm does not apply to a latent layer";
  if (getProjectionBias() || hasOutputBias())
    return emitOpError() << "a latent layer's projections have no biases";
  if (getFusedProjections() || getFusedCacheAppend())
    return emitOpError() << "a latent layer's projections are not fused";
  if (getAlibi())
    return emitOpError() << "alibi does not apply to a latent layer";
  if (!latent.getQueryRank() && getQueryDownKernel())
    return emitOpError() << "a query_down_kernel needs a latent query_rank";
  return success();
}

LogicalResult KernelOp::verify() {
  if (failed(verifyAttentionSettings(*this, getCausal(), getScale())))
    return failure();
  bool decode = getFamily() == KernelFamily::Decode;
  if (decode != getPageSize().has_value())
    return emitOpError() << "page_size is required by, and only by, decode "
                            "kernels";
  if (decode && getKeyPadding())
    return emitOpError() << "key_padding applies to prefill kernels only: "
                            "decode reads exact cache lengths";
  if (std::optional<Type> dtype = getKvDtype()) {
    if (!decode)
      return emitOpError() << "kv_dtype applies to decode kernels only";
    if (!isCacheElementType(*dtype))
      return emitOpError() << "kv_dtype must be f32, f16, bf16 or i8";
  }
  if (decode && getComputeDtype())
    return emitOpError() << "compute_dtype applies to prefill kernels only";
  return verifyComputeDtype(*this, getComputeDtype(), getHeadDim());
}

//===----------------------------------------------------------------------===//
// RoPE and the KV cache at the math level
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto positions = cast<RankedTensorType>(getPositions().getType());
  int64_t headDim = input.getDimSize(kHeadDim);
  if (ShapedType::isDynamic(headDim) || headDim % 2 != 0)
    return emitOpError() << "rotates channel pairs: head_dim must be static "
                            "and even, got "
                         << (ShapedType::isDynamic(headDim)
                                 ? std::string("?")
                                 : std::to_string(headDim));
  for (auto [dim, what] :
       {std::pair{kBatch, "batch"}, std::pair{kSeq, "sequence length"}}) {
    int64_t a = input.getDimSize(dim), b = positions.getDimSize(dim);
    if (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b)
      return emitOpError() << "input and positions disagree on " << what << " ("
                           << a << " vs " << b << ")";
  }
  return checkPositiveFinite(*this, "theta", getTheta());
}

namespace {
/// Features per token of a [batch, seq, features] or [batch, seq, heads,
/// head_dim] tensor (dynamic if any of them is); failure for other ranks.
FailureOr<int64_t> tokenFeatures(Operation *op, StringRef name,
                                 RankedTensorType type) {
  if (type.getRank() == 3)
    return type.getDimSize(2);
  if (type.getRank() == 4)
    return type.isDynamicDim(2) || type.isDynamicDim(3)
               ? ShapedType::kDynamic
               : type.getDimSize(2) * type.getDimSize(3);
  return op->emitOpError() << name
                           << " must be [batch, seq, features] or [batch, "
                              "seq, heads, head_dim], got rank "
                           << type.getRank();
}
} // namespace

LogicalResult ProjectOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto weight = cast<RankedTensorType>(getWeight().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  FailureOr<int64_t> in = tokenFeatures(*this, "input", input);
  FailureOr<int64_t> out = tokenFeatures(*this, "result", result);
  if (failed(in) || failed(out))
    return failure();
  auto agree = [&](int64_t a, int64_t b, StringRef what) -> LogicalResult {
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b)
      return success();
    return emitOpError() << what << " (" << a << " vs " << b << ")";
  };
  if (failed(agree(*in, weight.getDimSize(0),
                   "input features and weight rows disagree")) ||
      failed(agree(*out, weight.getDimSize(1),
                   "result features and weight columns disagree")) ||
      failed(agree(input.getDimSize(0), result.getDimSize(0),
                   "input and result disagree on batch")) ||
      failed(agree(input.getDimSize(1), result.getDimSize(1),
                   "input and result disagree on sequence length")))
    return failure();
  if (Value bias = getBias())
    if (failed(agree(cast<RankedTensorType>(bias.getType()).getDimSize(0),
                     weight.getDimSize(1), "bias and weight columns disagree")))
      return failure();
  if (Value residual = getResidual())
    if (residual.getType() != Type(result))
      return emitOpError() << "residual must have the result's type " << result
                           << ", got " << residual.getType();
  return success();
}

namespace {
/// Checks a [batch, seq, heads, head_dim] tensor against a cache's heads
/// and head size.
LogicalResult checkCacheRows(Operation *op, StringRef name,
                             RankedTensorType type, CacheType cache) {
  if (failed(checkExtent(op, name, type, kHeads, "heads", cache.getHeads(),
                         "the cache's heads")) ||
      failed(checkExtent(op, name, type, kHeadDim, "channels per head",
                         cache.getHeadDim(), "the cache's head_dim")))
    return failure();
  return success();
}
} // namespace

LogicalResult CacheAppendOp::verify() {
  return checkCacheRows(*this, "key",
                        cast<RankedTensorType>(getKey().getType()),
                        getCache().getType());
}

LogicalResult CacheViewOp::verify() {
  auto keys = cast<RankedTensorType>(getKeys().getType());
  CacheType cache = getCache().getType();
  if (failed(checkCacheRows(*this, "the view", keys, cache)))
    return failure();
  int64_t length = keys.getDimSize(kSeq);
  if (!ShapedType::isDynamic(length) &&
      length > cache.getConfig().getMaxLength())
    return emitOpError() << "views " << length
                         << " tokens of a cache that holds at most "
                         << cache.getConfig().getMaxLength();
  return success();
}

//===----------------------------------------------------------------------===//
// The rest of a block
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyStack(Operation *op, std::optional<StringRef> stack) {
  if (stack && *stack != "encoder" && *stack != "decoder")
    return op->emitOpError()
           << "stack must be encoder or decoder, got \"" << *stack << "\"";
  return success();
}

/// Checks that each named reference names an op of the enclosing model.
LogicalResult verifyKernelRefs(
    Operation *op,
    std::initializer_list<std::pair<StringRef, SymbolRefAttr>> refs) {
  auto model = op->getParentOfType<ModelOp>();
  for (auto [name, ref] : refs)
    if (ref && !SymbolTable::lookupSymbolIn(model, ref))
      return op->emitOpError()
             << name << " " << ref << " does not name a kernel of the model";
  return success();
}
} // namespace

LogicalResult EmbeddingOp::verify() {
  if (failed(checkAtMost(*this, "vocab_size", getVocabSize(),
                         limits::kVocabulary)) ||
      failed(checkAtMost(*this, "max_positions", getMaxPositions(),
                         limits::kPositions)))
    return failure();
  if (failed(checkPositiveFinite(*this, "scale", getScale())))
    return failure();
  if (std::optional<int64_t> offset = getPositionOffset()) {
    if (*offset < 0)
      return emitOpError() << "position_offset must be >= 0, got " << *offset;
    if (getPositions() != PositionKind::Learned)
      return emitOpError() << "position_offset applies to learned positions "
                              "only";
  }
  return failure(
      failed(verifyStack(*this, getStack())) ||
      failed(verifyKernelRefs(*this, {{"kernel", getKernelAttr()}})));
}

LogicalResult NormOp::verify() {
  float eps = getEps().convertToFloat();
  if (!(eps > 0.0f) || !(eps <= 1.0f))
    return emitOpError() << "eps must be in (0, 1], got " << eps;
  if (getResidualAdd()) {
    if (getPost())
      return emitOpError() << "a norm is post or residual_add, not both";
    Operation *previous = getOperation()->getPrevNode();
    if (!previous || !isa<AttentionLayerOp, FfnOp>(previous))
      return emitOpError() << "a residual_add norm follows an attention "
                              "layer or an FFN, whose output it normalizes";
  }
  return failure(
      failed(verifyStack(*this, getStack())) ||
      failed(verifyKernelRefs(*this, {{"kernel", getKernelAttr()}})));
}

LogicalResult FfnOp::verify() {
  if (failed(checkAtMost(*this, "intermediate_size", getIntermediateSize(),
                         limits::kFfn)))
    return failure();
  if (getActivation() == Activation::None)
    return emitOpError() << "an FFN needs an activation (gelu, gelu_tanh, "
                            "relu or silu)";
  if (getExperts()) {
    // Each expert's rows of the stacked weights begin a panel (at most 32
    // output features: bf16 pairs), so the runtime slices them in place.
    const int64_t dModel = (*this)->getParentOfType<ModelOp>().getDModel();
    if (dModel % 32 || getIntermediateSize() % 32)
      return emitOpError()
             << "experts need d_model and intermediate_size to be multiples "
                "of 32, got "
             << dModel << " and " << getIntermediateSize();
  } else if (getRouterKernel()) {
    return emitOpError() << "a router_kernel needs experts";
  }
  // gpt-oss's gated product: the gate's SiLU with a gain, gate and up
  // clamped.
  if (getSwigluAlpha() || getSwigluLimit()) {
    if (!getGated() || getActivation() != Activation::Silu)
      return emitOpError() << "swiglu_alpha and swiglu_limit change a gated "
                              "silu FFN's product; this FFN is "
                           << (getGated() ? "gated " : "not gated, ")
                           << stringifyActivation(getActivation());
    if (failed(checkPositiveFinite(*this, "swiglu_alpha", getSwigluAlpha())) ||
        failed(checkPositiveFinite(*this, "swiglu_limit", getSwigluLimit())))
      return failure();
  }
  if (std::optional<Type> experts = getExpertWeightDtype()) {
    if (!getExperts())
      return emitOpError() << "expert_weight_dtype needs experts";
    if (!isWeightElementType(*experts) || experts->isSignlessInteger(4))
      return emitOpError() << "expert_weight_dtype must be f32, f16, bf16, "
                              "i8 or !attn.mxfp4, got "
                           << *experts;
  }
  if (getUpWeights() || getDownWeights()) {
    if (getExperts())
      return emitOpError() << "up_weights and down_weights apply to dense "
                              "FFNs (experts have expert_weight_dtype)";
    if (failed(verifyOwnWeights(*this, true)))
      return failure();
  }
  const bool shared = getExperts() && getExpertsAttr().getShared() > 0;
  if (!shared && (getSharedUpKernel() || getSharedDownKernel()))
    return emitOpError() << "shared expert kernels need experts with shared";
  return failure(
      failed(verifyStack(*this, getStack())) ||
      failed(verifyKernelRefs(*this, {{"up_kernel", getUpKernelAttr()},
                                      {"down_kernel", getDownKernelAttr()},
                                      {"router_kernel", getRouterKernelAttr()},
                                      {"shared_up_kernel", getSharedUpKernelAttr()},
                                      {"shared_down_kernel",
                                       getSharedDownKernelAttr()}})));
}

LogicalResult OutputHeadOp::verify() {
  if (failed(checkAtMost(*this, "vocab_size", getVocabSize(),
                         limits::kVocabulary)) ||
      failed(checkPositiveFinite(*this, "softcap", getSoftcap())))
    return failure();
  // A head's own type is not i4 (an int4 head is the blocks' type, in their
  // groups); its own int8 may have a group.
  if (std::optional<Type> weights = getWeightDtype();
      weights && (!isWeightElementType(*weights) ||
                  weights->isSignlessInteger(4) || isa<Mxfp4Type>(*weights)))
    return emitOpError() << "weight_dtype must be f32, f16, bf16 or i8, got "
                         << *weights;
  if (std::optional<uint64_t> group = getWeightGroup()) {
    if (!getWeightDtype() || !getWeightDtype()->isSignlessInteger(8))
      return emitOpError() << "weight_group needs weight_dtype i8";
    if (!::attn::isInt8Group(int64_t(*group)))
      return emitOpError() << "weight_group must be " << ::attn::kInt8Groups
                           << " for i8 weights, got " << *group;
  }
  return verifyKernelRefs(*this, {{"kernel", getKernelAttr()}});
}

LogicalResult LinearKernelOp::verify() {
  if (failed(checkAtMost(*this, "in_features", getInFeatures(),
                         limits::kFeatures)) ||
      failed(checkAtMost(*this, "out_features", getOutFeatures(),
                         limits::kFeatures)))
    return failure();
  if (failed(verifyWeights(*this)))
    return failure();
  if (getWeightZeros() &&
      (!getWeightDtype() || !getWeightDtype()->isSignlessInteger(4)))
    return emitOpError() << "weight_zeros applies to i4 weights only";
  if (getWeightMins() &&
      (!getWeightDtype() || !getWeightDtype()->isSignlessInteger(4) ||
       getWeightZeros()))
    return emitOpError() << "weight_mins applies to i4 weights without "
                            "weight_zeros";
  bool rope = getRopeTheta().has_value();
  if (DictionaryAttr scaling = getRopeScalingAttr()) {
    if (!rope)
      return emitOpError() << "rope_scaling needs rope_theta";
    if (std::string problem = ropeScalingProblem(
            scaling,
            int64_t(getRopeDim().value_or(getRopeHeadDim().value_or(0))));
        !problem.empty())
      return emitOpError() << problem;
  }
  if (rope != getRopeHeads().has_value() ||
      rope != getRopeHeadDim().has_value())
    return emitOpError() << "rope_theta, rope_heads and rope_head_dim come "
                            "together";
  if (getQkNorm() && !rope)
    return emitOpError() << "qk_norm normalizes the rope_heads: it needs "
                            "rope_theta";
  if (failed(checkPositiveFinite(*this, "softcap", getSoftcap())))
    return failure();
  if (getGateAlpha() || getGateLimit()) {
    if (getInputGate() != Activation::Silu)
      return emitOpError() << "gate_alpha and gate_limit change a silu "
                              "input_gate";
    if (failed(checkPositiveFinite(*this, "gate_alpha", getGateAlpha())) ||
        failed(checkPositiveFinite(*this, "gate_limit", getGateLimit())))
      return failure();
  }
  if (std::optional<uint64_t> ropeDim = getRopeDim()) {
    if (!rope)
      return emitOpError() << "rope_dim needs rope_theta";
    if (*ropeDim % 2 != 0 || *ropeDim > *getRopeHeadDim())
      return emitOpError() << "rope_dim must be even and at most "
                              "rope_head_dim ("
                           << *getRopeHeadDim() << "), got " << *ropeDim;
  }
  if (rope) {
    int64_t headDim = *getRopeHeadDim();
    if (headDim % 2 != 0)
      return emitOpError() << "rope_head_dim must be even, got " << headDim;
    if (int64_t(*getRopeHeads()) * headDim > int64_t(getOutFeatures()))
      return emitOpError() << "rope_heads · rope_head_dim ("
                           << *getRopeHeads() * headDim
                           << ") exceeds out_features (" << getOutFeatures()
                           << ")";
    // A projection-scope QK-norm normalizes the query heads and the key
    // heads as two groups: the features after the RoPE heads are values,
    // as many heads as keys.
    QkNormAttr norm = getQkNormAttr();
    if (norm && norm.getScope() == QkNormScope::Projection &&
        (getOutFeatures() % headDim != 0 ||
         int64_t(getOutFeatures()) / headDim - int64_t(*getRopeHeads()) >
             int64_t(*getRopeHeads())))
      return emitOpError()
             << "a projection qk_norm needs out_features to be the RoPE "
                "heads and as many value heads as key heads after them, "
                "got out_features "
             << getOutFeatures() << " for " << *getRopeHeads()
             << " RoPE heads of " << headDim;
  }
  bool append = getAppendKvHeads().has_value();
  if (append != getAppendHeadDim().has_value() ||
      append != getAppendDtype().has_value())
    return emitOpError() << "append_kv_heads, append_head_dim and "
                            "append_dtype come together";
  if (append) {
    int64_t kvFeatures = 2 * int64_t(*getAppendKvHeads()) * *getAppendHeadDim();
    if (kvFeatures > int64_t(getOutFeatures()))
      return emitOpError() << "the appended K and V (2 · append_kv_heads · "
                              "append_head_dim = "
                           << kvFeatures << ") exceed out_features ("
                           << getOutFeatures() << ")";
    Type dtype = *getAppendDtype();
    if (!dtype.isF32() && !dtype.isF16() && !dtype.isBF16() &&
        !dtype.isInteger(8))
      return emitOpError() << "append_dtype must be f32, f16, bf16 or i8, got "
                           << dtype;
  }
  // The argmax belongs to an output head, which stores no K/V; one extra
  // output per kernel keeps the calling conventions few.
  if (getArgmax() && append)
    return emitOpError() << "argmax (an output head's) and the cache append "
                            "do not combine";
  if (std::optional<uint64_t> experts = getExperts()) {
    if (*experts < 2 || *experts > uint64_t(limits::kExperts))
      return emitOpError() << "experts must be in [2, " << limits::kExperts
                           << "], got " << *experts;
    // Each expert begins a panel of the stack (at most 32 features).
    if (getOutFeatures() % 32)
      return emitOpError() << "experts need out_features to be a multiple "
                              "of 32, got "
                           << getOutFeatures();
    if (rope || append || getArgmax())
      return emitOpError() << "an expert kernel has no RoPE, cache append or "
                              "argmax";
  }
  return success();
}
