//===- DTypes.h - attn::DType as descriptions and MLIR spell it -*- C++ -*-===//
//
// The enum and its IR/plan spelling are attn::DType (runtime/include/attn/
// runtime/DType.h), its MLIR element type the dialect's (attn/AttnDTypes.h);
// here is the word descriptions and attnc's options use ("int8", as users
// write it), converted in one place.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DTYPES_H
#define ATTNC_DTYPES_H

#include "attn/AttnDTypes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace attnc {

using mlir::attn::mlirType;
using mlir::attn::toDType;

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

} // namespace attnc

#endif // ATTNC_DTYPES_H
