//===- AttnAttrs.cpp - attn dialect attributes ----------------------------===//

#include "attn/AttnDTypes.h"
#include "attn/AttnDialect.h"
#include "attn/Limits.h"
#include "attn/runtime/Int4Weights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

#include "attn/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/AttnAttrs.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/AttnAttrs.cpp.inc"
      >();
}

/// A norm's epsilon (`what`'s): an f32 number, positive and finite (the
/// kernels add it in fp32).
static LogicalResult verifyEps(function_ref<InFlightDiagnostic()> emitError,
                               StringRef what, FloatAttr eps) {
  if (!eps || !eps.getType().isF32())
    return emitError() << what << " eps must be an f32 number";
  float value = eps.getValue().convertToFloat();
  if (!(value > 0.0f) || !std::isfinite(value))
    return emitError() << what << " eps must be positive and finite, got "
                       << double(value);
  return success();
}

LogicalResult KvCacheAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  CacheLayout layout, int64_t pageSize,
                                  Type dtype, int64_t maxLength) {
  if (maxLength < 1 || maxLength > limits::kLength)
    return emitError() << "KV cache max_length must be in [1, "
                       << limits::kLength << "], got " << maxLength;
  if (pageSize < 1 || pageSize > limits::kPageSize)
    return emitError() << "KV cache page_size must be in [1, "
                       << limits::kPageSize << "], got " << pageSize;
  if (!isCacheElementType(dtype))
    return emitError() << "KV cache dtype must be f32, f16, bf16 or i8, got "
                       << dtype;
  return success();
}

int64_t KvCacheAttr::getTokenBytes(int64_t kvHeads, int64_t headDim,
                                   bool keysOnly) const {
  return int64_t(::attn::kvBytesPerToken(toDType(getDtype()), size_t(kvHeads),
                                         size_t(headDim), keysOnly));
}

LogicalResult LatentAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t rank, int64_t ropeDim, int64_t nopeDim,
                                 int64_t valueDim, int64_t queryRank,
                                 FloatAttr eps) {
  // W_uk and W_uv run as expert kernels with a head per expert, whose
  // stacked outputs (rank and value_dim each) must begin a panel (at most
  // 32 output features: bf16 pairs).
  if (rank < 32 || rank % 32 || rank > limits::kHeadDim)
    return emitError() << "latent rank must be a multiple of 32 in [32, "
                       << limits::kHeadDim << "], got " << rank;
  if (valueDim < 32 || valueDim % 32 || valueDim > limits::kHeadDim)
    return emitError() << "latent value_dim must be a multiple of 32 in [32, "
                       << limits::kHeadDim << "], got " << valueDim;
  if (ropeDim < 2 || ropeDim % 2 || ropeDim > limits::kHeadDim)
    return emitError() << "latent rope_dim rotates channel pairs: it must be "
                          "even, in [2, "
                       << limits::kHeadDim << "], got " << ropeDim;
  if (nopeDim < 1 || nopeDim > limits::kHeadDim)
    return emitError() << "latent nope_dim must be in [1, " << limits::kHeadDim
                       << "], got " << nopeDim;
  if (queryRank < 0 || queryRank > limits::kFeatures)
    return emitError() << "latent query_rank must be in [0, "
                       << limits::kFeatures << "] (0: no low-rank query), got "
                       << queryRank;
  return verifyEps(emitError, "latent", eps);
}

LogicalResult QkNormAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 QkNormScope, FloatAttr eps) {
  return verifyEps(emitError, "qk_norm", eps);
}

LogicalResult WeightsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  Type dtype, int64_t group) {
  const bool int4 = dtype.isSignlessInteger(4), int8 = dtype.isSignlessInteger(8);
  if (!int4 && !int8 && !dtype.isF32() && !dtype.isF16() && !dtype.isBF16())
    return emitError() << "#attn.weights dtype must be f32, f16, bf16, i8 or "
                          "i4, got "
                       << dtype;
  if (int4 && !::attn::isInt4Group(group))
    return emitError() << "#attn.weights group must be " << ::attn::kInt4Groups
                       << " for i4 weights, got " << group;
  if (int8 && group != 0 && !::attn::isInt8Group(group))
    return emitError() << "#attn.weights group must be " << ::attn::kInt8Groups
                       << " for i8 weights (or absent), got " << group;
  if (!int4 && !int8 && group != 0)
    return emitError() << "#attn.weights group applies to i4 and i8 weights "
                          "only";
  return success();
}

LogicalResult ExpertsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  RouterKind router, int64_t count,
                                  int64_t perToken, BoolAttr normalize,
                                  int64_t shared, BoolAttr sharedGate,
                                  int64_t groups, int64_t groupTopK,
                                  FloatAttr scale) {
  if (count < 2 || count > limits::kExperts)
    return emitError() << "experts count must be in [2, " << limits::kExperts
                       << "], got " << count;
  if (perToken < 1 || perToken > count)
    return emitError() << "experts per_token must be in [1, count = " << count
                       << "], got " << perToken;
  if (!normalize)
    return emitError() << "experts normalize must be true or false";
  if (shared < 0 || shared > limits::kFfn)
    return emitError() << "experts shared must be in [0, " << limits::kFfn
                       << "], got " << shared;
  if (sharedGate && sharedGate.getValue() && shared == 0)
    return emitError() << "experts shared_gate needs shared experts";
  if (groups < 1 || count % groups)
    return emitError() << "experts groups must divide count = " << count
                       << ", got " << groups;
  if (groupTopK < 1 || groupTopK > groups)
    return emitError() << "experts group_top_k must be in [1, groups = "
                       << groups << "], got " << groupTopK;
  if (perToken > groupTopK * (count / groups))
    return emitError() << "experts per_token (" << perToken
                       << ") exceeds the experts of group_top_k groups ("
                       << groupTopK * (count / groups) << ")";
  if (router == RouterKind::SigmoidTopK && groups > 1 && count / groups < 2)
    return emitError() << "sigmoid_top_k scores a group by its two best "
                          "experts: groups need 2 experts or more";
  if (scale && !(std::isfinite(scale.getValueAsDouble()) &&
                 scale.getValueAsDouble() > 0))
    return emitError() << "experts scale must be positive and finite";
  return success();
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t queryBlock, int64_t kvChunk,
                                   int64_t qkTileKeys, int64_t pvTileRows,
                                   int64_t splitKeys, int64_t vectorWidth,
                                   StringRef source) {
  if (queryBlock < 1 || kvChunk < 1 || qkTileKeys < 1 || pvTileRows < 1 ||
      splitKeys < 1)
    return emitError() << "schedule sizes must be positive";
  if (vectorWidth != 0 && vectorWidth != 4 && vectorWidth != 8 &&
      vectorWidth != 16)
    return emitError() << "schedule vector_width must be 0, 4, 8 or 16, got "
                       << vectorWidth;
  if (source != "heuristic" && source != "db")
    return emitError() << "schedule source must be \"heuristic\" or \"db\"";
  return success();
}
