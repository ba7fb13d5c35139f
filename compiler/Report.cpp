//===- Report.cpp - the plan file and the human report --------------------===//

#include "Report.h"

#include "attn/AttnOps.h"
#include "attn/Support.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

namespace attnc {
namespace {
ModelOp theModel(ModuleOp module) { return *module.getOps<ModelOp>().begin(); }

int64_t intAttr(Operation *op, StringRef name) {
  auto attr = op->getAttrOfType<IntegerAttr>(name);
  return attr ? attr.getInt() : 0;
}

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

} // namespace

std::string renderPlanJson(ModuleOp module) {
  ModelOp model = theModel(module);
  std::string prefix = model.getSymName().str() + "_";
  llvm::json::Array layers;
  for (AttentionLayerOp layer : model.getLayers()) {
    llvm::json::Object entry{
        {"name", layer.getSymName()},
        {"kind", stringifyLayerKind(layer.getKind())},
        {"num_query_heads", int64_t(layer.getNumQueryHeads())},
        {"num_kv_heads", int64_t(layer.getNumKvHeads())},
        {"head_dim", int64_t(layer.getHeadDim())},
        {"mask", stringifyMaskKind(layer.getMask())},
        {"scale", layer.getScale() ? layer.getScale()->convertToFloat() : 0.0},
        {"prefill_kernel", prefix + layer.getPrefillKernel()->str()}};
    if (layer.getStack())
      entry["stack"] = *layer.getStack();
    if (layer.getRopeTheta())
      entry["rope_theta"] = layer.getRopeTheta()->convertToFloat();
    if (KvCacheAttr cache = layer.getCacheAttr()) {
      entry["decode_kernel"] = prefix + layer.getDecodeKernel()->str();
      entry["kv_cache"] = llvm::json::Object{
          {"layout", stringifyCacheLayout(cache.getLayout())},
          {"page_size", cache.getPageSize()},
          {"dtype", typeName(cache.getDtype())},
          {"max_length", cache.getMaxLength()},
          {"bytes_per_token", intAttr(layer, "kv_bytes_per_token")},
          {"bytes_per_sequence", intAttr(layer, "kv_bytes_per_sequence")}};
    }
    layers.push_back(std::move(entry));
  }
  llvm::json::Object plan{
      {"model", model.getSymName()},
      {"kind", model.getKind()},
      {"d_model", int64_t(model.getDModel())},
      {"max_batch", int64_t(model.getMaxBatch())},
      {"kv_bytes_per_token", intAttr(model, "kv_bytes_per_token")},
      {"kv_bytes_per_sequence", intAttr(model, "kv_bytes_per_sequence")},
      {"kv_bytes", intAttr(model, "kv_bytes")},
      {"layers", std::move(layers)}};
  return llvm::formatv("{0:2}\n", llvm::json::Value(std::move(plan))).str();
}

std::string renderReport(ModuleOp module) {
  ModelOp model = theModel(module);
  std::string text;
  llvm::raw_string_ostream os(text);
  size_t numLayers = 0, numKernels = 0;
  for (auto layer : model.getLayers())
    (void)layer, numLayers++;
  for (auto kernel : model.getKernels())
    (void)kernel, numKernels++;
  os << "model " << model.getSymName() << ": " << model.getKind()
     << ", d_model " << model.getDModel() << ", max_batch "
     << model.getMaxBatch() << ", attention layers: " << numLayers << "\n";
  os << "layers:\n";
  for (AttentionLayerOp layer : model.getLayers()) {
    os << llvm::formatv("  {0,-8} {1,-5} heads {2}/{3} d {4} mask {5}",
                        layer.getSymName(), stringifyLayerKind(layer.getKind()),
                        layer.getNumQueryHeads(), layer.getNumKvHeads(),
                        layer.getHeadDim(), stringifyMaskKind(layer.getMask()));
    if (KvCacheAttr cache = layer.getCacheAttr())
      os << llvm::formatv(" | cache {0} {1} page {2} max {3}: {4}/seq",
                          stringifyCacheLayout(cache.getLayout()),
                          typeName(cache.getDtype()), cache.getPageSize(),
                          cache.getMaxLength(),
                          formatBytes(intAttr(layer, "kv_bytes_per_sequence")));
    os << " | " << layer.getPrefillKernel()->str();
    if (layer.getDecodeKernel())
      os << ", " << layer.getDecodeKernel()->str();
    os << "\n";
  }
  os << "kernels: " << numKernels << " for " << numLayers << " layers\n";
  for (KernelOp kernel : model.getKernels()) {
    os << "  " << kernel.getSymName();
    if (std::optional<ScheduleAttr> s = kernel.getSchedule()) {
      if (kernel.getFamily() == KernelFamily::Prefill)
        os << llvm::formatv(" schedule query_block={0} kv_chunk={1} "
                            "qk_tile_keys={2} pv_tile_rows={3}",
                            s->getQueryBlock(), s->getKvChunk(),
                            s->getQkTileKeys(), s->getPvTileRows());
      else
        os << " schedule split_keys=" << s->getSplitKeys();
      os << " vector_width=" << s->getVectorWidth() << " (" << s->getSource()
         << ")";
    }
    os << "\n";
  }
  os << "KV cache: " << formatBytes(intAttr(model, "kv_bytes_per_token"))
     << "/token, " << formatBytes(intAttr(model, "kv_bytes_per_sequence"))
     << "/sequence at max length, " << formatBytes(intAttr(model, "kv_bytes"))
     << " for max_batch " << model.getMaxBatch() << "\n";
  return text;
}

} // namespace attnc
