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

#endif // ATTN_ATTNDIALECT_H
