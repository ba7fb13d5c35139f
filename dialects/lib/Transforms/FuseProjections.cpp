//===- FuseProjections.cpp - one projection for Q, K and V ----------------===//
//
// Q, K and V of a self-attention layer are three products of the same
// normalized input; computed as one they read that input once and run one
// larger, better-shaped matrix product. Every self-attention layer of this
// IR allows it (its projections share their input and bias setting); cross
// layers cannot fuse Q, whose input is the decoder's, with K and V.
// The K/V-producing projection of a cached self layer can also store K and V
// into the cache itself: one pass over them instead of a second, converting
// one in the runtime.
//
//===----------------------------------------------------------------------===//

#include "attn/AttnPasses.h"

namespace mlir::attn {
#define GEN_PASS_DEF_FUSEPROJECTIONS
#include "attn/AttnPasses.h.inc"

namespace {
struct FuseProjectionsPass : impl::FuseProjectionsBase<FuseProjectionsPass> {
  using FuseProjectionsBase::FuseProjectionsBase;

  void runOnOperation() override {
    if (!getOperation().hasBlocks())
      return;
    for (AttentionLayerOp layer : getOperation().getLayers()) {
      if (layer.getLatent()) // its own projections (SpecializeKernels)
        continue;
      if (cacheAppend && layer.getCache())
        layer.setFusedCacheAppend(true);
      if (fuse && layer.getKind() == LayerKind::Self)
        layer.setFusedProjections(true);
    }
  }
};
} // namespace
} // namespace mlir::attn
