//===- ExecutionContext.cpp - one thread of work's buffers ----------------===//
//
// Each buffer's width is the widest op of the plan that uses it; a pass
// grows the rows (ContextBuffers.h).
//
//===----------------------------------------------------------------------===//

#include "ContextBuffers.h"

#include <algorithm>

namespace attn::runtime {

/// The widths the plan's ops ask of the buffers (elements a row).
struct BufferWidths {
  int64_t dModel, projected = 0, keyValue = 0, query = 0, kv = 0, hidden = 0,
          crossKeyValue = 0, experts = 0, expertRows = 0, expertHidden = 0,
          expertsPerToken = 0;
  explicit BufferWidths(const ModelPlan &plan) : dModel(plan.dModel) {
    for (const PlanOp &op : plan.ops) {
      const int64_t q = int64_t(op.queryHeads) * op.headDim,
                    k = int64_t(op.kvHeads) * op.headDim;
      if (op.kind == OpKind::Attention) {
        projected = std::max(projected, op.fusedProjections ? q + 2 * k : q);
        keyValue = std::max(keyValue, 2 * k);
        query = std::max(query, q);
        kv = std::max(kv, k);
        if (op.cross)
          crossKeyValue = std::max(crossKeyValue, 2 * k);
      } else if (op.kind == OpKind::Ffn) {
        hidden = std::max(hidden, int64_t(op.gated ? 2 : 1) *
                                      std::max(op.intermediateSize,
                                               op.experts.shared.intermediateSize));
        experts = std::max(experts, int64_t(op.experts.count));
        expertsPerToken =
            std::max(expertsPerToken, int64_t(op.experts.perToken));
        if (op.experts.count) {
          expertRows = dModel;
          expertHidden = std::max(
              expertHidden, int64_t(op.gated ? 2 : 1) * op.intermediateSize);
        }
      }
    }
  }
};

ExecutionContext::Buffers::Buffers(const Model &model)
    : Buffers(BufferWidths(model.plan_), model.device_) {}

// Index rows, the no-cache pool and the cross rows stay on the host (copied
// for a device call, or written by the host).
ExecutionContext::Buffers::Buffers(const BufferWidths &w,
                                   const DeviceApi *device)
    : stream{{w.dModel, device},
             {w.dModel, device},
             {w.dModel, device},
             {w.hidden, device}},
      attention{{w.projected, device},
                {w.keyValue, device},
                {w.query, device},
                {w.query, device},
                {w.kv, device},
                {w.kv, device},
                {1, nullptr},
                {1, nullptr},
                {1, nullptr},
                {w.kv, nullptr},
                {}},
      experts{{w.experts, nullptr},
              {w.expertRows, nullptr},
              {w.expertRows, nullptr},
              {w.expertHidden, nullptr},
              {1, nullptr},
              {},
              {},
              {},
              w.experts,
              w.expertsPerToken},
      head{{w.dModel, device}, {1, nullptr}},
      crossRows(w.crossKeyValue, nullptr) {}

Status ExecutionContext::Buffers::reserve(const PassRows &rows) {
  const int64_t t = rows.tokens, projectedRows = std::max(t, rows.memoryTokens);
  Status s;
  auto grow = [&](auto &buffer, int64_t count) {
    if (s)
      s = buffer.reserve(count);
  };
  for (Activations *b : {&stream.x, &stream.residual, &stream.normed,
                         &stream.hidden, &attention.query, &attention.output,
                         &experts.logits})
    grow(*b, t);
  const int64_t grouped = experts.groupedRows(t);
  grow(experts.gathered, std::max(t, grouped));
  grow(experts.output, std::max(t, grouped));
  grow(experts.hidden, grouped);
  grow(experts.expertOfRow, grouped);
  grow(attention.projected, t);
  grow(attention.keyValue, projectedRows);
  grow(attention.keys, rows.denseKeys);
  grow(attention.values, rows.denseKeys);
  grow(attention.lengths, t);
  grow(attention.slots, projectedRows);
  grow(attention.noCachePool, 1);
  grow(head.rows, rows.headRows);
  grow(head.greedy, rows.headRows);
  grow(crossRows, rows.memoryTokens);
  return s;
}

ExecutionContext::ExecutionContext(const Model &model)
    : model_(model), buffers_(std::make_unique<Buffers>(model)) {}

ExecutionContext::~ExecutionContext() = default;

} // namespace attn::runtime
