//===- SelectSchedules.cpp - tuning database or heuristic -----------------===//
//
// Tuning database (JSON, written by attn-tune):
//
//   { "entries": [ { "kernel": "prefill_h32_kv8_d128_causal",
//                    "target": "x86-64-dispatch",
//                    "schedule": { "query_block": 128, "kv_chunk": 256,
//                                  "qk_tile_keys": 12, "pv_tile_rows": 6,
//                                  "split_keys": 512, "vector_width": 0 },
//                    "gflops": 150.2, "gbps": 0.4, "default_gflops": 130.1,
//                    "speedup": 1.15, "shape": {"length": 2048},
//                    "candidates": 26, "cpu": "..." } ] }
//
// An entry applies to the kernel of that name compiled for exactly that
// --target value, as the user wrote it (`host`, `x86-64-dispatch`, a list),
// less GPU items (attnc passes the CPU targets alone).
//
//===----------------------------------------------------------------------===//

#include "attn/AttnPasses.h"
#include "attn/JsonReader.h"
#include "attn/schedules/AttentionSchedules.h" // the default schedules

#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SELECTSCHEDULES
#include "attn/AttnPasses.h.inc"

namespace {
struct ScheduleParams {
  int64_t queryBlock, kvChunk, qkTileKeys, pvTileRows, splitKeys, vectorWidth;
};

/// Without a database entry: the schedules' own defaults
/// (attn::defaultSdpaSchedule and attn::DecodeSchedule, with
/// the measurements behind them), except that prefill tiles are computed
/// whole, so a model whose sequences are known to be short (every layer
/// using the kernel bounded by its cache's max length or its stack's
/// learned/sinusoidal positions) gets blocks and chunks of a quarter of that
/// bound (16 at least): a 15-token encoder input no longer pays for a
/// 128 x 256 tile.
ScheduleParams heuristic(KernelOp kernel, std::optional<int64_t> maxLength) {
  std::optional<Type> compute = kernel.getComputeDtype();
  ::attn::SdpaSchedule prefill = ::attn::defaultSdpaSchedule(
      kernel.getHeadDim(), compute && compute->isBF16()
                               ? ::attn::SdpaCompute::BF16
                               : ::attn::SdpaCompute::F32);
  ::attn::DecodeSchedule decode;
  ScheduleParams p = {prefill.queryBlock, prefill.kvChunk,
                      prefill.qkTileKeys, prefill.pvTileRows,
                      decode.splitKeys,   prefill.vectorWidth};
  if (maxLength && *maxLength <= 512) {
    int64_t tile = std::max<int64_t>(16, (*maxLength / 4 + 7) / 8 * 8);
    p.queryBlock = std::min(p.queryBlock, tile);
    p.kvChunk = std::min(p.kvChunk, tile);
  }
  return p;
}

/// The longest sequence any layer using `kernel` can see (queries or keys),
/// if every such layer is bounded; see heuristic().
std::optional<int64_t> longestSequence(ModelOp model, KernelOp kernel) {
  llvm::StringMap<int64_t> stackPositions; // stack -> max_positions
  for (EmbeddingOp embedding : model.getBody().getOps<EmbeddingOp>())
    if (embedding.getPositions() != PositionKind::None)
      stackPositions[embedding.getStack().value_or("")] =
          embedding.getMaxPositions();
  std::optional<int64_t> longest;
  for (AttentionLayerOp layer : model.getLayers()) {
    if (layer.getPrefillKernelAttr() != FlatSymbolRefAttr::get(kernel) &&
        layer.getDecodeKernelAttr() != FlatSymbolRefAttr::get(kernel))
      continue;
    std::optional<int64_t> bound;
    StringRef stack = layer.getStack().value_or("");
    if (KvCacheAttr cache = layer.getCacheAttr())
      bound = cache.getMaxLength();
    if (auto it = stackPositions.find(stack); it != stackPositions.end())
      bound = std::max(bound.value_or(0), it->second);
    if (layer.getKind() == LayerKind::Cross) { // keys: the encoder's length
      auto encoder = stackPositions.find("encoder");
      if (encoder == stackPositions.end())
        return std::nullopt;
      bound = std::max(bound.value_or(0), encoder->second);
    }
    if (!bound)
      return std::nullopt;
    longest = std::max(longest.value_or(0), *bound);
  }
  return longest;
}

/// Reads the database into kernel name -> schedule for `target`.
LogicalResult readDatabase(MLIRContext *context, StringRef path,
                           StringRef target,
                           llvm::StringMap<ScheduleParams> &entries) {
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &message);
  if (!file)
    return emitError(UnknownLoc::get(context))
           << "cannot read the schedule database: " << message;
  llvm::SourceMgr sourceMgr;
  llvm::StringRef text = file->getBuffer();
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  JsonLocator locator(sourceMgr, id, *context);
  std::optional<llvm::json::Value> document = parseJson(text, locator);
  if (!document)
    return failure();
  const llvm::json::Object *root = document->getAsObject();
  if (!root)
    return emitError(locator.at(JsonPath{}))
           << "a schedule database must be a JSON object";
  JsonObjectReader reader(*root, {}, locator);
  JsonPath entriesPath;
  const llvm::json::Array *list = reader.getArray("entries", true, entriesPath);
  reader.allow({"version", "comment"});
  if (!reader.finish() || !list)
    return failure();
  bool ok = true;
  for (size_t i = 0; i < list->size(); i++) {
    JsonPath entryPath = entriesPath;
    entryPath.push_back(i);
    const llvm::json::Object *entry = (*list)[i].getAsObject();
    if (!entry) {
      emitError(locator.at(entryPath)) << "a database entry must be an object";
      ok = false;
      continue;
    }
    JsonObjectReader fields(*entry, entryPath, locator);
    std::optional<StringRef> kernel = fields.requiredString("kernel");
    std::optional<StringRef> entryTarget = fields.requiredString("target");
    JsonPath schedulePath;
    const llvm::json::Object *schedule =
        fields.getObject("schedule", true, schedulePath);
    // What attn-tune measured: for people, not for the compiler.
    fields.allow({"gflops", "gbps", "default_gflops", "speedup", "shape",
                  "candidates", "cpu"});
    ScheduleParams p{};
    bool paramsOk = false;
    if (schedule) {
      JsonObjectReader params(*schedule, schedulePath, locator);
      const int64_t big = 1 << 20;
      auto queryBlock = params.getInt("query_block", true, 1, big);
      auto kvChunk = params.getInt("kv_chunk", true, 1, big);
      auto qkTileKeys = params.getInt("qk_tile_keys", true, 1, 64);
      auto pvTileRows = params.getInt("pv_tile_rows", true, 1, 64);
      auto splitKeys = params.getInt("split_keys", true, 1, big);
      auto vectorWidth = params.getInt("vector_width", false, 0, 16, 0);
      paramsOk = params.finish() && queryBlock && kvChunk && qkTileKeys &&
                 pvTileRows && splitKeys && vectorWidth;
      if (paramsOk)
        p = {*queryBlock, *kvChunk,   *qkTileKeys,
             *pvTileRows, *splitKeys, *vectorWidth};
    }
    if (!fields.finish() || !paramsOk || !kernel || !entryTarget) {
      ok = false;
      continue;
    }
    if (*entryTarget == target)
      entries[*kernel] = p;
  }
  return success(ok);
}

/// The widest head the CPU kernels are built and tested for: a latent
/// layer's rows (DeepSeek's rank 512 + rope 64; SdpaScheduleTest,
/// DecodeTest).
constexpr int64_t kMaxHeadDim = 576;

struct SelectSchedulesPass : impl::SelectSchedulesBase<SelectSchedulesPass> {
  using SelectSchedulesBase::SelectSchedulesBase;

  void runOnOperation() override {
    llvm::StringMap<ScheduleParams> database;
    if (!scheduleDb.empty() &&
        failed(readDatabase(&getContext(), scheduleDb, target, database)))
      return signalPassFailure();
    for (KernelOp kernel : getOperation().getKernels()) {
      // Beyond kMaxHeadDim nothing checks them.
      if (kernel.getHeadDim() > kMaxHeadDim) {
        kernel.emitError() << "head_dim " << kernel.getHeadDim()
                           << " is larger than " << kMaxHeadDim
                           << ", the largest the CPU kernels support";
        return signalPassFailure();
      }
      auto entry = database.find(kernel.getSymName());
      bool fromDatabase = entry != database.end();
      ScheduleParams p =
          fromDatabase
              ? entry->second
              : heuristic(kernel, longestSequence(getOperation(), kernel));
      kernel.setScheduleAttr(ScheduleAttr::get(
          &getContext(), p.queryBlock, p.kvChunk, p.qkTileKeys, p.pvTileRows,
          p.splitKeys, p.vectorWidth, fromDatabase ? "db" : "heuristic"));
    }
  }
};
} // namespace
} // namespace mlir::attn
