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

/// A KV cache as the cache ops describe it (!attn.cache is a value): each
/// sequence's keys and values as stored, i.e. converted to the cache's
/// element type, and read back.
struct InterpretedCache {
  int64_t heads = 0, headDim = 0, maxLength = 0;
  Type element;
  /// [batch] rows of [tokens][heads][headDim], in double.
  std::vector<std::vector<double>> keys, values;
};

/// attn.cache_declare: an empty cache of the op's type for `batch`
/// sequences.
InterpretedCache interpretCacheDeclare(CacheDeclareOp op, int batch);

/// attn.cache_append on `cache`: `key` and `value` [batch][newTokens][heads]
/// [headDim] (C order) appended to each sequence, every element as the
/// cache's element type keeps it (f16 and bf16: rounded to nearest even; i8:
/// each (token, head) row quantized with scale max|row| / 127, as the
/// #attn.kv_cache description says). Appending past max_length is an error
/// that leaves `cache` unchanged.
bool interpretCacheAppend(CacheAppendOp op, InterpretedCache &cache,
                          const std::vector<float> &key,
                          const std::vector<float> &value, int newTokens,
                          std::string &error);

/// attn.cache_view: every cached key and value, [batch][kvLen][heads]
/// [headDim] each (the sequences hold kvLen tokens alike, as the op's one
/// tensor type says; otherwise an error and nothing).
bool interpretCacheView(CacheViewOp op, const InterpretedCache &cache,
                        std::vector<double> &keys, std::vector<double> &values,
                        int &kvLen, std::string &error);

} // namespace mlir::attn

#endif // ATTN_INTERPRETER_H
