//===- Interpreter.h - the math-level ops, executed in double ---*- C++ -*-===//
//
// The semantics the math-level ops state in their descriptions
// (AttnOps.td), run directly from an op's attributes: the second reference
// the generated kernels are checked against (test/kernels/
// SdpaSemanticsTest.cpp), besides the tests' own reference. Written from
// the op's description, not from the kernels; slow on purpose.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INTERPRETER_H
#define ATTN_INTERPRETER_H

#include "attn/AttnOps.h"

#include <vector>

namespace mlir::attn {

/// attn.sdpa on `query` [batch][qLen][num_query_heads][head_dim] and `key`,
/// `value` [batch][kvLen][num_kv_heads][head_dim] (C order): the result
/// [batch][qLen][num_query_heads][head_dim] in double.
std::vector<double> interpretSdpa(SdpaOp op, const std::vector<float> &query,
                                  const std::vector<float> &key,
                                  const std::vector<float> &value, int batch,
                                  int qLen, int kvLen);

} // namespace mlir::attn

#endif // ATTN_INTERPRETER_H
