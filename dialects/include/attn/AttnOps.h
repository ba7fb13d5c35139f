//===- AttnOps.h - attn dialect operations ----------------------*- C++ -*-===//

#ifndef ATTN_ATTNOPS_H
#define ATTN_ATTNOPS_H

#include "attn/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "attn/AttnOps.h.inc"

namespace mlir::attn {

/// A RoPE scaling rule (`rope_scaling`, as Hugging Face configs state it):
/// its type, from `rope_type` or the older `type` key ("" when neither).
StringRef ropeScalingType(DictionaryAttr scaling);
/// One of its numbers (integer or float), or none.
std::optional<double> ropeScalingNumber(DictionaryAttr scaling,
                                        StringRef key);
/// One of its lists of numbers (LongRoPE's factors), or none.
std::optional<ArrayRef<float>> ropeScalingList(DictionaryAttr scaling,
                                              StringRef key);
/// Why attnc cannot compute the rule exactly, or "" when it can:
/// `default`, `linear` (factor) or `llama3` (factor, low_freq_factor <
/// high_freq_factor, original_max_position_embeddings), every key known,
/// every number positive. Verifiers and importers report it where they are.
std::string ropeScalingProblem(DictionaryAttr scaling);
/// The same for a rule over `rotaryDim` rotating channels (LongRoPE's lists
/// hold one factor per channel pair).
std::string ropeScalingProblem(DictionaryAttr scaling, int64_t rotaryDim);

} // namespace mlir::attn

#endif // ATTN_ATTNOPS_H
