//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//

#ifndef ATTN_ATTNDIALECT_H
#define ATTN_ATTNDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "attn/AttnOpsDialect.h.inc"

#include "attn/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/AttnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "attn/AttnTypes.h.inc"

namespace mlir::attn {
/// The element types a KV cache may store: f32, f16, bf16, or i8 with a
/// scale per (token, head) row.
inline bool isCacheElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() ||
         type.isSignlessInteger(8);
}
} // namespace mlir::attn

#endif // ATTN_ATTNDIALECT_H
