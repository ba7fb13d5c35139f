//===- AttnPasses.h - attn dialect passes -----------------------*- C++ -*-===//

#ifndef ATTN_ATTNPASSES_H
#define ATTN_ATTNPASSES_H

#include "attn/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "attn/AttnPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/AttnPasses.h.inc"

} // namespace mlir::attn

#endif // ATTN_ATTNPASSES_H
