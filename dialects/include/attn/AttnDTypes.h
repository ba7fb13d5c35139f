//===- AttnDTypes.h - attn::DType as the attn IR spells it ------*- C++ -*-===//
//
// attn::DType (runtime/include/attn/runtime/DType.h, header-only) and the
// MLIR element type the attn IR stores it as, converted in one place.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ATTNDTYPES_H
#define ATTN_ATTNDTYPES_H

#include "attn/AttnDialect.h"
#include "attn/runtime/DType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::attn {

/// The attn IR's element type of `type`: f32, f16, bf16, i8, i4,
/// !attn.mxfp4.
inline mlir::Type mlirType(mlir::MLIRContext &context, ::attn::DType type) {
  mlir::Builder builder(&context);
  switch (type) {
  case ::attn::DType::MXFP4:
    return Mxfp4Type::get(&context);
  case ::attn::DType::F16:
    return builder.getF16Type();
  case ::attn::DType::BF16:
    return builder.getBF16Type();
  case ::attn::DType::I8:
    return builder.getIntegerType(8);
  case ::attn::DType::I4:
    return builder.getIntegerType(4);
  case ::attn::DType::F32:
    break;
  }
  return builder.getF32Type();
}

/// The inverse of mlirType for a verified cache or weight dtype (absent:
/// f32).
inline ::attn::DType toDType(mlir::Type type) {
  return !type || type.isF32()       ? ::attn::DType::F32
         : type.isF16()              ? ::attn::DType::F16
         : type.isBF16()             ? ::attn::DType::BF16
         : type.isSignlessInteger(4) ? ::attn::DType::I4
         : isa<Mxfp4Type>(type)      ? ::attn::DType::MXFP4
                                     : ::attn::DType::I8;
}

} // namespace mlir::attn

#endif // ATTN_ATTNDTYPES_H
