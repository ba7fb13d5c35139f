//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//

#ifndef ATTN_ATTNDIALECT_H
#define ATTN_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "attn/AttnOpsDialect.h.inc"

#endif // ATTN_ATTNDIALECT_H
