//===- AttnDialect.cpp - the attn dialect ---------------------------------===//

#include "attn/AttnDialect.h"
#include "attn/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/AttnOpsDialect.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/AttnOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}
