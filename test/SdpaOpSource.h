//===- SdpaOpSource.h - one attn.sdpa as MLIR source, for tests -*- C++ -*-===//
//
// The op-level tests (op-semantics-test, sdpa-decomposition-test) build the
// same func around one attn.sdpa from a random case; this is that func.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_SDPAOPSOURCE_H
#define ATTN_TEST_SDPAOPSOURCE_H

#include <cstdio>
#include <sstream>
#include <string>

namespace attn::test {

/// The attributes of one attn.sdpa.
struct SdpaOpAttributes {
  int queryHeads, kvHeads, headDim;
  bool causal = false;
  int window = 0;
  float scale = 0;   ///< 0: the op's default, 1/sqrt(head_dim)
  float softcap = 0; ///< 0: none
  bool alibi = false;
};

/// Sizes an op's tensors may fix; 0 leaves a size dynamic.
struct SdpaStaticSizes {
  int batch = 0, queryLength = 0, keyLength = 0;
};

/// `func.func @<name>` holding the one attn.sdpa of `c` over tensors of
/// dynamic batch and lengths unless `sizes` fixes them; with `cInterface`,
/// callable from C as _mlir_ciface_<name>. Floats are printed so that they
/// parse back exactly.
inline std::string sdpaFuncSource(const SdpaOpAttributes &c,
                                  const std::string &name,
                                  bool cInterface = false,
                                  SdpaStaticSizes sizes = {}) {
  auto size = [](int n) { return n ? std::to_string(n) : std::string("?"); };
  auto tensor = [&](int length, int heads) {
    return "tensor<" + size(sizes.batch) + "x" + size(length) + "x" +
           std::to_string(heads) + "x" + std::to_string(c.headDim) + "xf32>";
  };
  auto exact = [](float x) {
    char text[32];
    // Always with a point: MLIR reads "5" as an integer.
    std::snprintf(text, sizeof text, "%#.9g", x);
    return std::string(text);
  };
  const std::string q = tensor(sizes.queryLength, c.queryHeads),
                    kv = tensor(sizes.keyLength, c.kvHeads);
  std::ostringstream s;
  s << "func.func @" << name << "(%q: " << q << ", %k: " << kv << ", %v: " << kv
    << ") -> " << q << (cInterface ? " attributes {llvm.emit_c_interface}" : "")
    << " {\n  %o = attn.sdpa %q, %k, %v {head_dim = " << c.headDim
    << " : i64, num_kv_heads = " << c.kvHeads
    << " : i64, num_query_heads = " << c.queryHeads << " : i64"
    << (c.causal ? ", causal" : "") << (c.alibi ? ", alibi" : "");
  if (c.window)
    s << ", window = " << c.window << " : i64";
  if (c.scale)
    s << ", scale = " << exact(c.scale) << " : f32";
  if (c.softcap)
    s << ", softcap = " << exact(c.softcap) << " : f32";
  s << "} : " << q << ", " << kv << ", " << kv << " -> " << q
    << "\n  func.return %o : " << q << "\n}\n";
  return s.str();
}

} // namespace attn::test

#endif // ATTN_TEST_SDPAOPSOURCE_H
