//===- MaterializeDefaults.cpp - write out implied layer settings ---------===//

#include "attn/AttnPasses.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_MATERIALIZEDEFAULTS
#include "attn/AttnPasses.h.inc"

namespace {
struct MaterializeDefaultsPass
    : impl::MaterializeDefaultsBase<MaterializeDefaultsPass> {
  void runOnOperation() override {
    Builder builder(&getContext());
    for (AttentionLayerOp layer : getOperation().getLayers()) {
      // 1/sqrt of the channels a query meets a key in: head_dim, or a
      // latent layer's nope_dim + rope_dim (its head_dim is the cache row).
      if (!layer.getScale()) {
        LatentAttr latent = layer.getLatentAttr();
        const int64_t channels =
            latent ? latent.getQueryHeadDim() : int64_t(layer.getHeadDim());
        layer.setScaleAttr(builder.getF32FloatAttr(
            1.0f / std::sqrt(static_cast<float>(channels))));
      }
      KvCacheAttr cache = layer.getCacheAttr();
      if (!cache)
        continue;
      if (cache.getLayout() == CacheLayout::Contiguous &&
          cache.getPageSize() != cache.getMaxLength())
        layer.setCacheAttr(KvCacheAttr::get(
            &getContext(), CacheLayout::Contiguous, cache.getMaxLength(),
            cache.getDtype(), cache.getMaxLength()));
      // A window as long as the cache masks like causal (a longer one is
      // a verifier error).
      if (layer.getMask() == MaskKind::SlidingWindow &&
          static_cast<int64_t>(*layer.getWindow()) >= cache.getMaxLength()) {
        layer.setMask(MaskKind::Causal);
        layer.removeWindowAttr();
      }
    }
  }
};
} // namespace
} // namespace mlir::attn
