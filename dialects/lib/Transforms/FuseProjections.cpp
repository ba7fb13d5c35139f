//===- FuseProjections.cpp - one projection for Q, K and V ----------------===//
//
// Q, K and V of a self-attention layer are three products of the same
// normalized input; computed as one they read that input once and run one
// larger, better-shaped matrix product. Every self-attention layer of this
// IR allows it (its projections share their input and bias setting); cross
// layers cannot fuse Q, whose input is the decoder's, with K and V.
// The K/V-producing projection of a cached self layer can also store K and V
// into the cache itself: one pass over them instead of a second, converting
// one in the runtime. A kernel reads one weight type: projections stored
// at different precisions stay apart.
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
    ModelOp model = getOperation();
    for (AttentionLayerOp layer : model.getLayers()) {
      if (layer.getLatent()) // its own projections (SpecializeKernels)
        continue;
      // One kernel reads one weight type: a GGUF file's Q4_K_M mix keeps
      // some layers' V in Q6_K beside Q4_K queries and keys.
      const WeightsAttr query = model.projectionWeights(layer.getQueryWeightsAttr()),
                        key = model.projectionWeights(layer.getKeyWeightsAttr()),
                        value = model.projectionWeights(layer.getValueWeightsAttr());
      if (cacheAppend && layer.getCache() && key == value)
        layer.setFusedCacheAppend(true);
      if (fuse && layer.getKind() == LayerKind::Self && query == key &&
          key == value)
        layer.setFusedProjections(true);
    }
  }
};
} // namespace
} // namespace mlir::attn
