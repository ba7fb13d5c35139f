//===- DescriptionImport.cpp - native JSON descriptions to attn IR --------===//
//
// The native format is documented in docs/description-format.md. A file
// with a "model_type" key is a Hugging Face config.json instead
// (HuggingFaceImport.cpp).
//
//===----------------------------------------------------------------------===//

#include "DescriptionImport.h"
#include "HuggingFaceImport.h"
#include "ModelBuilder.h"

#include "attn/JsonReader.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::attn;
namespace json = llvm::json;

namespace attnc {
namespace {

/// Cache settings: a "kv_cache" object over `fallback`.
struct CacheSettings {
  std::string layout = "contiguous", dtype = "f32";
  int64_t pageSize = 16, maxLength = 4096;
};

bool readCache(JsonObjectReader &parent, const JsonLocator &locator,
               CacheSettings &settings) {
  JsonPath path;
  const json::Object *object = parent.getObject("kv_cache", false, path);
  if (!object)
    return parent.ok();
  JsonObjectReader cache(*object, path, locator);
  settings.layout =
      cache.optionalEnum("layout", {"contiguous", "paged"}, settings.layout)
          .str();
  settings.dtype =
      cache.optionalEnum("dtype", {"f32", "f16", "bf16"}, settings.dtype).str();
  settings.pageSize =
      cache.getInt("page_size", false, 1, 1 << 20, settings.pageSize)
          .value_or(0);
  settings.maxLength =
      cache.getInt("max_length", false, 1, 1 << 30, settings.maxLength)
          .value_or(0);
  return cache.finish();
}

/// Reads one layer object; `repeat` is how many identical layers it stands
/// for.
bool readLayer(const json::Object &object, const JsonPath &path,
               const JsonLocator &locator, const CacheSettings &modelCache,
               const ImportOptions &options, MLIRContext &context,
               LayerConfig &layer, int64_t &repeat, Location &loc) {
  JsonObjectReader reader(object, path, locator);
  loc = reader.location();
  layer.kind = reader.optionalEnum("kind", {"self", "cross"}, "self") == "cross"
                   ? LayerKind::Cross
                   : LayerKind::Self;
  layer.queryHeads =
      reader.getInt("num_query_heads", true, 1, 1 << 16).value_or(1);
  layer.kvHeads = reader.getInt("num_kv_heads", true, 1, 1 << 16).value_or(1);
  layer.headDim = reader.getInt("head_dim", true, 1, 1 << 16).value_or(1);
  layer.mask = *symbolizeMaskKind(reader.optionalEnum(
      "mask", {"none", "causal", "sliding_window"}, "none"));
  layer.window = reader.getInt("window", false, 1, 1 << 30);
  if (auto scale = reader.optionalPositiveNumber("scale"))
    layer.scale = float(*scale);
  if (auto softcap = reader.optionalPositiveNumber("softcap"))
    layer.softcap = float(*softcap);
  layer.alibi = reader.optionalBool("alibi").value_or(false);
  if (auto theta = reader.optionalPositiveNumber("rope_theta"))
    layer.ropeTheta = float(*theta);
  layer.projectionBias = reader.optionalBool("projection_bias").value_or(false);
  JsonPath scalingPath;
  if (const json::Object *scaling =
          reader.getObject("rope_scaling", false, scalingPath)) {
    layer.ropeScaling =
        jsonToDictionary(*scaling, scalingPath, locator, context);
    if (!layer.ropeScaling)
      return false;
  }
  std::optional<llvm::StringRef> stack = reader.optionalString("stack");
  if (stack)
    layer.stack = stack->str();
  repeat = reader.getInt("repeat", false, 1, 4096, 1).value_or(1);
  bool cached = reader.optionalBool("cached").value_or(true);
  CacheSettings cache = modelCache;
  if (!readCache(reader, locator, cache) || !reader.finish())
    return false;
  if (cached)
    layer.cache = makeKvCache(context, loc, cache.layout, cache.pageSize,
                              cache.dtype, cache.maxLength, options);
  return !cached || layer.cache;
}

OwningOpRef<ModuleOp> importNative(const json::Object &root,
                                   const JsonLocator &locator,
                                   MLIRContext &context,
                                   const ImportOptions &options,
                                   llvm::StringRef fileName) {
  JsonObjectReader model(root, {}, locator);
  std::optional<llvm::StringRef> describedName = model.optionalString("name");
  llvm::StringRef kind = model.optionalEnum(
      "kind", {"decoder-only", "encoder", "encoder-decoder"}, "decoder-only");
  std::optional<int64_t> dModel = model.getInt("d_model", false, 1, 1 << 20);
  std::optional<int64_t> maxBatch =
      model.getInt("max_batch", false, 1, 1 << 16, 1);
  CacheSettings cache;
  bool cacheOk = readCache(model, locator, cache);
  // Layers: a "layers" array, or one "attention" object as a shorthand.
  JsonPath layersPath, attentionPath;
  const json::Array *layers = model.has("attention")
                                  ? nullptr
                                  : model.getArray("layers", true, layersPath);
  const json::Object *attention =
      model.has("attention") ? model.getObject("attention", true, attentionPath)
                             : nullptr;
  if (!model.finish() || !cacheOk || (!layers && !attention))
    return nullptr;

  std::string name = options.modelName;
  if (name.empty())
    name = describedName ? describedName->str()
                         : llvm::sys::path::stem(fileName).str();
  if (!isCIdentifier(name)) {
    emitError(locator.at(JsonPath{std::string("name")}))
        << "model name '" << name
        << "' must be a C identifier: it prefixes the generated functions";
    return nullptr;
  }

  std::vector<std::tuple<LayerConfig, int64_t, Location>> configs;
  auto read = [&](const json::Object &object, const JsonPath &path) {
    LayerConfig layer;
    int64_t repeat = 1;
    Location loc = locator.at(path);
    if (!readLayer(object, path, locator, cache, options, context, layer,
                   repeat, loc))
      return false;
    configs.emplace_back(layer, repeat, loc);
    return true;
  };
  if (attention && !read(*attention, attentionPath))
    return nullptr;
  for (size_t i = 0; layers && i < layers->size(); i++) {
    JsonPath path = layersPath;
    path.push_back(i);
    const json::Object *object = (*layers)[i].getAsObject();
    if (!object) {
      emitError(locator.at(path)) << "a layer must be a JSON object";
      return nullptr;
    }
    if (!read(*object, path))
      return nullptr;
  }
  if (configs.empty()) {
    emitError(locator.at(layersPath)) << "the model has no attention layer";
    return nullptr;
  }

  const LayerConfig &first = std::get<0>(configs.front());
  ModelBuilder builder(context, locator.at(JsonPath{}), name, kind,
                       dModel.value_or(first.queryHeads * first.headDim),
                       options.maxBatch.value_or(maxBatch.value_or(1)));
  for (auto &[layer, repeat, loc] : configs)
    for (int64_t r = 0; r < repeat; r++)
      builder.addLayer(layer, loc);
  return builder.finish();
}

} // namespace

OwningOpRef<ModuleOp> importJsonDescription(llvm::SourceMgr &sourceMgr,
                                            MLIRContext &context,
                                            const ImportOptions &options) {
  context.loadDialect<AttnDialect>();
  unsigned id = sourceMgr.getMainFileID();
  JsonLocator locator(sourceMgr, id, context);
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(id);
  std::optional<json::Value> document = parseJson(buffer->getBuffer(), locator);
  if (!document)
    return nullptr;
  const json::Object *root = document->getAsObject();
  if (!root) {
    emitError(locator.at(JsonPath{}))
        << "a model description must be a JSON object";
    return nullptr;
  }
  if (root->get("model_type"))
    return importHuggingFaceConfig(*root, locator, context, options,
                                   buffer->getBufferIdentifier());
  return importNative(*root, locator, context, options,
                      buffer->getBufferIdentifier());
}

} // namespace attnc
