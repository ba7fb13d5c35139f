//===- DTypes.h - attn::DType as descriptions and MLIR spell it -*- C++ -*-===//
//
// The enum and its IR/plan spelling are attn::DType (runtime/include/attn/
// runtime/DType.h); here are its two other forms in the compiler, each
// converted in one place: the word descriptions and attnc's options use
// ("int8", as users write it) and the MLIR element type of the attn IR.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DTYPES_H
#define ATTNC_DTYPES_H

#include "attn/runtime/DType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace attnc {

/// A description's or option's spelling of each attn::DType, in enum order.
inline constexpr llvm::StringRef kDescriptionDTypes[] = {"f32", "f16", "bf16",
                                                         "int8"};
/// "f32, f16, bf16 or int8": for messages and option help.
inline constexpr const char *kDescriptionDTypeList = "f32, f16, bf16 or int8";

inline std::optional<::attn::DType>
parseDescriptionDType(llvm::StringRef text) {
  for (int i = 0; i < 4; ++i)
    if (text == kDescriptionDTypes[i])
      return ::attn::DType(i);
  return std::nullopt;
}

/// The attn IR's element type of `type`: f32, f16, bf16, i8.
inline mlir::Type mlirType(mlir::MLIRContext &context, ::attn::DType type) {
  mlir::Builder builder(&context);
  switch (type) {
  case ::attn::DType::F16:
    return builder.getF16Type();
  case ::attn::DType::BF16:
    return builder.getBF16Type();
  case ::attn::DType::I8:
    return builder.getIntegerType(8);
  case ::attn::DType::F32:
    break;
  }
  return builder.getF32Type();
}

/// The inverse of mlirType for a verified cache or weight dtype (absent:
/// f32).
inline ::attn::DType toDType(mlir::Type type) {
  return !type || type.isF32() ? ::attn::DType::F32
         : type.isF16()        ? ::attn::DType::F16
         : type.isBF16()       ? ::attn::DType::BF16
                               : ::attn::DType::I8;
}

} // namespace attnc

#endif // ATTNC_DTYPES_H
