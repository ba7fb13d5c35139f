//===- PlanActivations.cpp - one arena for a model's activations ----------===//
//
// Each op of a whole model writes a few activations ([tokens][features]
// floats) that later ops read. The residual stream is rewritten by every
// attention layer and FFN (a new value each time: the old one is read while
// the new one is written), everything else lives from its op to the next op
// or two. Interval allocation then packs them: a 32-layer model needs about
// as much as one block, not 32.
//
//===----------------------------------------------------------------------===//

#include "attn/AttnPasses.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::attn {
#define GEN_PASS_DEF_PLANACTIVATIONS
#include "attn/AttnPasses.h.inc"

namespace {
/// One activation: bytes per token and the ops (by index) that write it
/// first and read it last.
struct Value {
  int64_t bytes;
  int def, lastUse;
  Operation *op; // the writer
  int64_t offset = -1;
};

struct PlanActivationsPass : impl::PlanActivationsBase<PlanActivationsPass> {
  using PlanActivationsBase::PlanActivationsBase;

  void runOnOperation() override {
    ModelOp model = getOperation();
    if (!model.hasBlocks())
      return;
    if (alignment < 1 || (alignment & (alignment - 1)) != 0) {
      model.emitError() << "--attn-plan-activations: alignment must be a "
                           "power of two, got "
                        << int64_t(alignment);
      return signalPassFailure();
    }
    const int64_t d = model.getDModel(), f32 = 4;
    std::vector<Value> values;
    std::vector<Operation *> ops;
    int residual = -1, normed = -1, memory = -1; // live value indices
    auto define = [&](Operation *op, int64_t features) {
      int64_t bytes = llvm::alignTo(features * f32, alignment);
      values.push_back({bytes, int(ops.size()) - 1, int(ops.size()) - 1, op});
      return int(values.size()) - 1;
    };
    auto use = [&](int value) {
      if (value >= 0)
        values[value].lastUse = int(ops.size()) - 1;
    };
    int64_t longest = 0;
    for (Operation &op : model.getBody().front()) {
      if (isa<EmbeddingOp, NormOp, AttentionLayerOp, FfnOp, OutputHeadOp>(op))
        ops.push_back(&op);
      if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
        // A new stack: the encoder's last output stays live as the decoder's
        // memory (its cross-attention K/V projections read it).
        if (embedding.getStack() == StringRef("decoder"))
          memory = normed >= 0 ? normed : residual;
        residual = define(&op, d);
        if (embedding.getPositions() != PositionKind::None)
          longest = std::max<int64_t>(longest, embedding.getMaxPositions());
      } else if (auto norm = dyn_cast<NormOp>(op)) {
        use(residual);
        if (norm.getPost()) { // the stream itself, normalized
          residual = define(&op, d);
          normed = -1;
        } else {
          normed = define(&op, d);
        }
      } else if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
        const int64_t hq = layer.getNumQueryHeads(),
                      hkv = layer.getNumKvHeads(), hd = layer.getHeadDim();
        if (KvCacheAttr cache = layer.getCacheAttr())
          longest = std::max(longest, cache.getMaxLength());
        use(normed);
        bool cross = layer.getKind() == LayerKind::Cross;
        int64_t projection =
            layer.getFusedProjections() ? (hq + 2 * hkv) * hd : hq * hd;
        int q = define(&op, projection);
        int kv =
            cross ? -1
                  : define(&op, layer.getFusedProjections() ? 0 : 2 * hkv * hd);
        if (cross)
          use(memory);
        int out = define(&op, hq * hd);
        use(q);
        use(kv);
        use(residual);
        residual = define(&op, d); // output projection + residual
        use(out);
      } else if (auto ffn = dyn_cast<FfnOp>(op)) {
        use(normed);
        int64_t width =
            int64_t(ffn.getIntermediateSize()) * (ffn.getGated() ? 2 : 1);
        int hidden = define(&op, width);
        use(residual);
        residual = define(&op, d);
        use(hidden);
      } else if (auto head = dyn_cast<OutputHeadOp>(op)) {
        use(normed >= 0 ? normed : residual);
        define(&op, head.getVocabSize());
      }
    }

    // Largest first, each at the lowest offset free over its live range.
    std::vector<int> order(values.size());
    for (size_t i = 0; i < order.size(); i++)
      order[i] = int(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return values[a].bytes > values[b].bytes;
    });
    int64_t arena = 0, naive = 0;
    std::vector<int> placed;
    for (int i : order) {
      Value &v = values[i];
      naive += v.bytes;
      if (v.bytes == 0) {
        v.offset = 0;
        continue;
      }
      std::vector<std::pair<int64_t, int64_t>> busy; // [begin, end)
      for (int j : placed) {
        const Value &w = values[j];
        if (w.def <= v.lastUse && v.def <= w.lastUse)
          busy.push_back({w.offset, w.offset + w.bytes});
      }
      std::sort(busy.begin(), busy.end());
      int64_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + v.bytes <= begin)
          break;
        offset = std::max(offset, end);
      }
      v.offset = offset;
      arena = std::max(arena, offset + v.bytes);
      placed.push_back(i);
    }

    Builder builder(&getContext());
    llvm::DenseMap<Operation *, SmallVector<int64_t>> offsets;
    for (const Value &v : values)
      offsets[v.op].push_back(v.offset);
    for (auto &[op, list] : offsets)
      op->setAttr("activation_offsets", builder.getDenseI64ArrayAttr(list));
    model->setAttr("activation_bytes_per_token",
                   builder.getI64IntegerAttr(arena));
    model->setAttr("activation_naive_bytes_per_token",
                   builder.getI64IntegerAttr(naive));
    model->setAttr("activation_bytes",
                   builder.getI64IntegerAttr(arena * longest *
                                             int64_t(model.getMaxBatch())));
  }
};
} // namespace
} // namespace mlir::attn
