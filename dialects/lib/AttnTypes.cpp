//===- AttnTypes.cpp - attn dialect types ---------------------------------===//

#include "attn/AttnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#define GET_TYPEDEF_CLASSES
#include "attn/AttnTypes.cpp.inc"

void AttnDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "attn/AttnTypes.cpp.inc"
      >();
}

LogicalResult CacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t heads, int64_t headDim,
                                KvCacheAttr config) {
  if (heads < 1 || headDim < 1)
    return emitError() << "a cache needs at least one head of at least one "
                          "channel, got heads = "
                       << heads << ", head_dim = " << headDim;
  if (!config)
    return emitError() << "a cache needs a #attn.kv_cache configuration";
  return success();
}
