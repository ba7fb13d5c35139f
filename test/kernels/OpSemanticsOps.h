//===- OpSemanticsOps.h - math-level ops parsed and interpreted -*- C++ -*-===//
//
// The MLIR side of op-semantics-test, behind plain types (the test's
// Halide side is another translation unit).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_OPSEMANTICSOPS_H
#define ATTN_TEST_OPSEMANTICSOPS_H

#include "attn/schedules/KernelSpec.h"

#include <string>
#include <vector>

namespace attn::test {

struct InterpretedSdpa {
  std::string error; ///< the parser's or verifier's message; empty: parsed
  AttentionSettings settings; ///< the op's attributes, as attnc converts them
  std::vector<double> result; ///< mlir::attn::interpretSdpa
};

/// Parses `source` (a func.func holding one attn.sdpa), converts the op's
/// attributes to kernel settings and interprets it on q, k and v.
InterpretedSdpa interpretSdpaSource(const std::string &source,
                                    const std::vector<float> &query,
                                    const std::vector<float> &key,
                                    const std::vector<float> &value, int batch,
                                    int qLen, int kvLen);

struct InterpretedRope {
  std::string error; ///< the parser's, verifier's or interpreter's message
  float theta = 0;
  RopeScaling scaling;        ///< the op's scaling, as attnc converts it
  std::vector<double> result; ///< mlir::attn::interpretRope
};

/// Parses `source` (a func.func holding one attn.rope), converts its theta
/// and scaling as attnc does for the kernels and interprets it on `input`
/// at `positions`.
InterpretedRope interpretRopeSource(const std::string &source,
                                    const std::vector<float> &input,
                                    const std::vector<int32_t> &positions,
                                    int batch, int seq);

struct InterpretedProject {
  std::string error; ///< the parser's, verifier's or interpreter's message
  bool bias = false, residual = false; ///< which operands the op has
  std::vector<double> result;          ///< mlir::attn::interpretProject
};

/// Parses `source` (a func.func holding one attn.project) and interprets it
/// on `input` [tokens][in], `weight` [in][out], and `bias` and `residual`
/// where the op has them.
InterpretedProject interpretProjectSource(const std::string &source,
                                          const std::vector<float> &input,
                                          const std::vector<float> &weight,
                                          const std::vector<float> &bias,
                                          const std::vector<float> &residual,
                                          int tokens);

struct CacheAppendArguments {
  std::vector<float> key, value; ///< [batch][tokens][heads][head_dim]
  int tokens = 0;
};

struct InterpretedCacheView {
  std::string error; ///< the parser's, verifier's or interpreter's message
  std::vector<double> keys, values; ///< attn.cache_view's results
  int kvLen = 0;
};

/// Parses `source` (a func.func with one attn.cache_declare, attn.cache_
/// append ops and one attn.cache_view) and interprets its ops in order for
/// `batch` sequences, the i-th append on appends[i].
InterpretedCacheView
interpretCacheSource(const std::string &source, int batch,
                     const std::vector<CacheAppendArguments> &appends);

} // namespace attn::test

#endif // ATTN_TEST_OPSEMANTICSOPS_H
