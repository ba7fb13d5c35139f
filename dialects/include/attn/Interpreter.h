//===- Interpreter.h - the math-level ops, executed in double ---*- C++ -*-===//
//
// The semantics the math-level ops state in their descriptions
// (AttnOps.td), run directly from an op's attributes: the second reference
// the generated kernels are checked against (test/kernels/
// OpSemanticsTest.cpp), besides the tests' own reference. Written from
// the op's description, not from the kernels; slow on purpose.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INTERPRETER_H
#define ATTN_INTERPRETER_H

#include "attn/AttnOps.h"

#include <string>
#include <vector>

namespace mlir::attn {

/// attn.sdpa on `query` [batch][qLen][num_query_heads][head_dim] and `key`,
/// `value` [batch][kvLen][num_kv_heads][head_dim] (C order): the result
/// [batch][qLen][num_query_heads][head_dim] in double.
std::vector<double> interpretSdpa(SdpaOp op, const std::vector<float> &query,
                                  const std::vector<float> &key,
                                  const std::vector<float> &value, int batch,
                                  int qLen, int kvLen);

/// attn.rope on `input` [batch][seq][heads][head_dim] at `positions`
/// [batch][seq] (C order): the rotated input in double. Scaling rules
/// interpreted: none, default, linear and llama3 (transformers'
/// definitions); another rule, or one missing a number, leaves the result
/// empty and says why in `error`.
std::vector<double> interpretRope(RopeOp op, const std::vector<float> &input,
                                  const std::vector<int32_t> &positions,
                                  int batch, int seq, std::string &error);

/// attn.project on `input` [tokens][in] (the rows of its [batch, seq, ...]
/// tensor), `weight` [in][out] and, when the op has them, `bias` [out] and
/// `residual` [tokens][out] (C order): the result [tokens][out] in double.
/// Operands whose sizes disagree with the op leave the result empty and say
/// why in `error`.
std::vector<double> interpretProject(ProjectOp op,
                                     const std::vector<float> &input,
                                     const std::vector<float> &weight,
                                     const std::vector<float> &bias,
                                     const std::vector<float> &residual,
                                     int tokens, std::string &error);

} // namespace mlir::attn

#endif // ATTN_INTERPRETER_H
