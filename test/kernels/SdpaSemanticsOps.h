//===- SdpaSemanticsOps.h - attn.sdpa parsed and interpreted ----*- C++ -*-===//
//
// The MLIR side of sdpa-semantics-test, behind plain types (the test's
// Halide side is another translation unit).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_SDPASEMANTICSOPS_H
#define ATTN_TEST_SDPASEMANTICSOPS_H

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

} // namespace attn::test

#endif // ATTN_TEST_SDPASEMANTICSOPS_H
