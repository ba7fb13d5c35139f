//===- PlanKvCache.cpp - size the KV caches, check the budget -------------===//

#include "attn/AttnPasses.h"
#include "attn/Support.h"
#include "attn/runtime/DType.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::attn {
#define GEN_PASS_DEF_PLANKVCACHE
#include "attn/AttnPasses.h.inc"

namespace {
struct PlanKvCachePass : impl::PlanKvCacheBase<PlanKvCachePass> {
  using PlanKvCacheBase::PlanKvCacheBase;

  void runOnOperation() override {
    ModelOp model = getOperation();
    Builder builder(&getContext());
    int64_t perToken = 0, perSequence = 0;
    // Every product checked: a description within the verifiers' limits can
    // still ask for more than 2^63 bytes (many long, wide layers).
    bool overflow = false;
    auto multiply = [&](int64_t a, int64_t b) {
      int64_t product = 0;
      overflow |= llvm::MulOverflow(a, b, product);
      return product;
    };
    auto add = [&](int64_t a, int64_t b) {
      int64_t sum = 0;
      overflow |= llvm::AddOverflow(a, b, sum);
      return sum;
    };
    std::vector<std::pair<int64_t, AttentionLayerOp>> consumers;
    for (AttentionLayerOp layer : model.getLayers()) {
      KvCacheAttr cache = layer.getCacheAttr();
      if (!cache) // never decodes: no cache
        continue;
      // K and V: 2 · KV heads · head size · element bytes per token (plus
      // a scale per head row for i8); a latent layer's keys alone.
      int64_t tokenBytes = layer.getCacheTokenBytes();
      // A sliding-window layer keeps the pages its window spans.
      int64_t pages = ::attn::kvPagesPerSequence(
          cache.getMaxLength(), cache.getPageSize(),
          layer.getKind() == LayerKind::Self ? layer.getWindow().value_or(0)
                                             : 0);
      int64_t sequenceBytes =
          multiply(tokenBytes, multiply(pages, cache.getPageSize()));
      layer->setAttr("kv_bytes_per_token",
                     builder.getI64IntegerAttr(tokenBytes));
      layer->setAttr("kv_bytes_per_sequence",
                     builder.getI64IntegerAttr(sequenceBytes));
      perToken = add(perToken, tokenBytes);
      perSequence = add(perSequence, sequenceBytes);
      consumers.emplace_back(sequenceBytes, layer);
    }
    int64_t total = multiply(perSequence, int64_t(model.getMaxBatch()));
    if (overflow) {
      model.emitError() << "the KV cache's size overflows 64-bit byte counts "
                           "(the layers' caches are too long or too wide)";
      return signalPassFailure();
    }
    model->setAttr("kv_bytes_per_token", builder.getI64IntegerAttr(perToken));
    model->setAttr("kv_bytes_per_sequence",
                   builder.getI64IntegerAttr(perSequence));
    model->setAttr("kv_bytes", builder.getI64IntegerAttr(total));
    if (kvBudget <= 0 || total <= kvBudget)
      return;

    std::stable_sort(
        consumers.begin(), consumers.end(),
        [](const auto &a, const auto &b) { return a.first > b.first; });
    InFlightDiagnostic diag =
        model.emitError() << "the KV cache needs " << formatBytes(total) << " ("
                          << total << " bytes) for max_batch "
                          << model.getMaxBatch()
                          << " at max length, over the budget of "
                          << formatBytes(kvBudget) << "; largest consumers:";
    for (size_t i = 0; i < std::min<size_t>(3, consumers.size()); i++)
      diag << (i ? ", " : " ") << "@" << consumers[i].second.getSymName()
           << " (" << formatBytes(consumers[i].first) << " per sequence)";
    for (size_t i = 0; i < std::min<size_t>(3, consumers.size()); i++)
      diag.attachNote(consumers[i].second.getLoc())
          << "@" << consumers[i].second.getSymName() << " declared here";
    signalPassFailure();
  }
};
} // namespace
} // namespace mlir::attn
