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
                                                         "int8", "int4"};
/// The spellings a KV cache may take: those of attn::isCacheDType.
inline constexpr llvm::ArrayRef<llvm::StringRef> kDescriptionCacheDTypes(
    kDescriptionDTypes, size_t(::attn::kLastCacheDType) + 1);
/// The spellings an output head's own weights may take (weight_dtype of
/// "output_head"): all but int4, whose group is the blocks'.
inline constexpr llvm::ArrayRef<llvm::StringRef> kDescriptionHeadDTypes(
    kDescriptionDTypes, size_t(::attn::DType::I8) + 1);
/// For messages and option help.
inline constexpr const char *kDescriptionDTypeList =
    "f32, f16, bf16, int8 or int4";
inline constexpr const char *kDescriptionCacheDTypeList =
    "f32, f16, bf16 or int8";
/// Inputs per scale of int4 weights unless a description or option says
/// (GPTQ's and AWQ's default too).
inline constexpr int64_t kDefaultWeightGroup = 128;

/// The DType a weight spelling (or one of `names`: a KV cache's, a head's)
/// names.
inline std::optional<::attn::DType>
parseDescriptionDType(llvm::StringRef text,
                      llvm::ArrayRef<llvm::StringRef> names =
                          kDescriptionDTypes) {
  for (size_t i = 0; i < names.size(); ++i)
    if (text == names[i])
      return ::attn::DType(i);
  return std::nullopt;
}

} // namespace attnc

#endif // ATTNC_DTYPES_H
