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
    if (layer.getQueryKernel()) {
      entry["projection_bias"] = layer.getProjectionBias();
      entry["fused_projections"] = layer.getFusedProjections();
      entry["query_kernel"] = prefix + layer.getQueryKernel()->str();
      if (layer.getKeyValueKernel())
        entry["key_value_kernel"] = prefix + layer.getKeyValueKernel()->str();
      entry["output_kernel"] = prefix + layer.getOutputKernel()->str();
    }
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
  // Every op in execution order: what a runtime walks to run the model.
  llvm::json::Array ops;
  for (Operation &op : model.getBody().front()) {
    llvm::json::Object entry;
    auto kernelName = [&](std::optional<StringRef> kernel) {
      return prefix + kernel.value_or("").str();
    };
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      entry =
          llvm::json::Object{{"op", "attention"}, {"name", layer.getSymName()}};
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      entry = llvm::json::Object{
          {"op", "embedding"},
          {"name", embedding.getSymName()},
          {"vocab_size", int64_t(embedding.getVocabSize())},
          {"positions", stringifyPositionKind(embedding.getPositions())},
          {"max_positions", int64_t(embedding.getMaxPositions())},
          {"kernel", kernelName(embedding.getKernel())}};
    } else if (auto norm = dyn_cast<NormOp>(op)) {
      entry = llvm::json::Object{{"op", "norm"},
                                 {"name", norm.getSymName()},
                                 {"kind", stringifyNormKind(norm.getKind())},
                                 {"eps", norm.getEps().convertToFloat()},
                                 {"kernel", kernelName(norm.getKernel())}};
    } else if (auto ffn = dyn_cast<FfnOp>(op)) {
      entry = llvm::json::Object{
          {"op", "ffn"},
          {"name", ffn.getSymName()},
          {"activation", stringifyActivation(ffn.getActivation())},
          {"intermediate_size", int64_t(ffn.getIntermediateSize())},
          {"bias", ffn.getBias()},
          {"gated", ffn.getGated()},
          {"up_kernel", kernelName(ffn.getUpKernel())},
          {"down_kernel", kernelName(ffn.getDownKernel())}};
    } else if (auto head = dyn_cast<OutputHeadOp>(op)) {
      entry = llvm::json::Object{{"op", "output_head"},
                                 {"name", head.getSymName()},
                                 {"vocab_size", int64_t(head.getVocabSize())},
                                 {"bias", head.getBias()},
                                 {"kernel", kernelName(head.getKernel())}};
    } else {
      continue; // kernels
    }
    if (auto stack = op.getAttrOfType<StringAttr>("stack"))
      entry["stack"] = stack.getValue();
    ops.push_back(std::move(entry));
  }
  llvm::json::Object plan{
      {"model", model.getSymName()},
      {"kind", model.getKind()},
      {"d_model", int64_t(model.getDModel())},
      {"max_batch", int64_t(model.getMaxBatch())},
      {"kv_bytes_per_token", intAttr(model, "kv_bytes_per_token")},
      {"kv_bytes_per_sequence", intAttr(model, "kv_bytes_per_sequence")},
      {"kv_bytes", intAttr(model, "kv_bytes")},
      {"activation_bytes_per_token",
       intAttr(model, "activation_bytes_per_token")},
      {"activation_bytes", intAttr(model, "activation_bytes")},
      {"layers", std::move(layers)},
      {"ops", std::move(ops)}};
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
  if (int64_t arena = intAttr(model, "activation_bytes_per_token"))
    os << "activations: one arena of " << formatBytes(arena)
       << "/token (each value its own buffer: "
       << formatBytes(intAttr(model, "activation_naive_bytes_per_token"))
       << "/token), " << formatBytes(intAttr(model, "activation_bytes"))
       << " for max_batch " << model.getMaxBatch()
       << " at the longest prefill\n";
  return text;
}

} // namespace attnc
