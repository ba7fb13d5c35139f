//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//

#ifndef ATTN_ATTNDIALECT_H
#define ATTN_ATTNDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "attn/AttnOpsDialect.h.inc"

#include "attn/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/AttnAttrs.h.inc"

#endif // ATTN_ATTNDIALECT_H
