//===- DescriptionImport.cpp - native JSON descriptions to attn IR --------===//
//
// The native format is documented in docs/description-format.md. A file
// with a "model_type" key is a Hugging Face config.json instead
// (HuggingFaceImport.cpp).
//
//===----------------------------------------------------------------------===//

#include "DescriptionImport.h"

#include "DTypes.h"
#include "attn/runtime/Int4Weights.h"
#include "HuggingFaceImport.h"
#include "ModelBuilder.h"

#include "attn/JsonReader.h"
#include "attn/Limits.h"
#include "attn/Support.h"

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
      cache.optionalEnum("dtype", kDescriptionCacheDTypes, settings.dtype).str();
  settings.pageSize =
      cache.getInt("page_size", false, 1, limits::kPageSize, settings.pageSize)
          .value_or(0);
  settings.maxLength =
      cache.getInt("max_length", false, 1, limits::kLength, settings.maxLength)
          .value_or(0);
  return cache.finish();
}

/// Reads one layer object; `repeat` is how many identical layers it stands
/// for.
/// A cross layer's cache holds the encoder's output: with `sourceLength`
/// (the encoder's max_positions), that is its default max_length.
bool readLayer(const json::Object &object, const JsonPath &path,
               const JsonLocator &locator, const CacheSettings &modelCache,
               const ImportOptions &options, MLIRContext &context,
               LayerConfig &layer, int64_t &repeat, Location &loc,
               std::optional<int64_t> sourceLength = std::nullopt) {
  JsonObjectReader reader(object, path, locator);
  loc = reader.location();
  layer.kind = reader.optionalEnum("kind", {"self", "cross"}, "self") == "cross"
                   ? LayerKind::Cross
                   : LayerKind::Self;
  // A latent layer (#attn.latent) states its sizes there: its one key head
  // of rope_dim + rank channels follows.
  JsonPath latentPath;
  if (const json::Object *latent =
          reader.getObject("latent", false, latentPath)) {
    JsonObjectReader l(*latent, latentPath, locator);
    std::optional<int64_t> rank = l.getInt("rank", true, 1, limits::kHeadDim),
                           ropeDim =
                               l.getInt("rope_dim", true, 1, limits::kHeadDim),
                           nopeDim =
                               l.getInt("nope_dim", true, 1, limits::kHeadDim),
                           valueDim =
                               l.getInt("value_dim", true, 1, limits::kHeadDim),
                           queryRank = l.getInt("query_rank", false, 0,
                                                limits::kFeatures, 0);
    double eps = l.optionalPositiveNumber("eps").value_or(1e-6);
    if (!l.finish())
      return false;
    layer.latent = makeLatent(context, l.location(), *rank, *ropeDim, *nopeDim,
                              *valueDim, *queryRank, float(eps));
    if (!layer.latent)
      return false;
  }
  const bool latent = bool(layer.latent);
  layer.queryHeads =
      reader.getInt("num_query_heads", true, 1, limits::kHeads).value_or(1);
  layer.kvHeads = reader.getInt("num_kv_heads", !latent, 1, limits::kHeads)
                      .value_or(1);
  layer.headDim =
      reader.getInt("head_dim", !latent, 1, limits::kHeadDim)
          .value_or(latent ? layer.latent.getRopeDim() + layer.latent.getRank()
                           : 1);
  layer.mask = *symbolizeMaskKind(reader.optionalEnum(
      "mask", {"none", "causal", "sliding_window"}, "none"));
  layer.window = reader.getInt("window", false, 1, limits::kLength);
  if (auto scale = reader.optionalPositiveNumber("scale"))
    layer.scale = float(*scale);
  if (auto softcap = reader.optionalPositiveNumber("softcap"))
    layer.softcap = float(*softcap);
  layer.alibi = reader.optionalBool("alibi").value_or(false);
  layer.sinks = reader.optionalBool("sinks").value_or(false);
  layer.keyPadding = reader.optionalBool("key_padding").value_or(false);
  layer.bf16Compute = options.bf16Compute.value_or(
      reader.optionalEnum("compute_dtype", {"f32", "bf16"}, "f32") == "bf16");
  if (auto theta = reader.optionalPositiveNumber("rope_theta"))
    layer.ropeTheta = float(*theta);
  layer.ropeDim = reader.getInt("rope_dim", false, 1, limits::kHeadDim);
  layer.projectionBias = reader.optionalBool("projection_bias").value_or(false);
  JsonPath scalingPath;
  if (const json::Object *scaling =
          reader.getObject("rope_scaling", false, scalingPath)) {
    layer.ropeScaling =
        jsonToDictionary(*scaling, scalingPath, locator, context);
    if (!layer.ropeScaling)
      return false;
  }
  JsonPath qkNormPath;
  if (const json::Object *qkNorm =
          reader.getObject("qk_norm", false, qkNormPath)) {
    JsonObjectReader norm(*qkNorm, qkNormPath, locator);
    llvm::StringRef scope =
        norm.optionalEnum("scope", {"head", "projection"}, "head");
    double eps = norm.optionalPositiveNumber("eps").value_or(1e-6);
    if (!norm.finish())
      return false;
    layer.qkNorm = makeQkNorm(context,
                              *mlir::attn::symbolizeQkNormScope(scope),
                              float(eps));
  }
  std::optional<llvm::StringRef> stack = reader.optionalString("stack");
  if (stack)
    layer.stack = stack->str();
  repeat = reader.getInt("repeat", false, 1, limits::kRepeat, 1).value_or(1);
  bool cached = reader.optionalBool("cached").value_or(true);
  CacheSettings cache = modelCache;
  if (layer.kind == LayerKind::Cross && sourceLength)
    cache.maxLength = *sourceLength;
  if (!readCache(reader, locator, cache) || !reader.finish())
    return false;
  if (cached)
    layer.cache = makeKvCache(context, loc, cache.layout, cache.pageSize,
                              cache.dtype, cache.maxLength, options);
  return !cached || layer.cache;
}

/// Norm settings of a block: {"kind": "layer_norm"|"rms_norm", "eps": x,
/// "placement": "pre"|"post"|"sandwich"|"output"} (sandwich: a pre norm and
/// a residual_add norm of each sublayer's output, Gemma's; output: only the
/// residual_add norm, OLMo 2's).
struct NormSettings {
  NormKind kind = NormKind::LayerNorm;
  float eps = 1e-5f;
  bool pre = true;     ///< a norm the sublayer reads
  bool post = false;   ///< the stream normalized after the sublayer
  bool output = false; ///< the sublayer's output normalized, then added
};

/// Reads `key` of `parent` (if present) into `norm`; `present` says whether
/// it was there.
bool readNorm(JsonObjectReader &parent, const JsonLocator &locator,
              NormSettings &norm, const char *key = "norm",
              bool *present = nullptr) {
  JsonPath path;
  const json::Object *object = parent.getObject(key, false, path);
  if (present)
    *present = object != nullptr;
  if (!object)
    return parent.ok();
  JsonObjectReader reader(*object, path, locator);
  norm.kind = *symbolizeNormKind(
      reader.optionalEnum("kind", {"layer_norm", "rms_norm"}, "layer_norm"));
  if (auto eps = reader.optionalPositiveNumber("eps"))
    norm.eps = float(*eps);
  llvm::StringRef placement = reader.optionalEnum(
      "placement", {"pre", "post", "sandwich", "output"}, "pre");
  norm.pre = placement == "pre" || placement == "sandwich";
  norm.post = placement == "post";
  norm.output = placement == "sandwich" || placement == "output";
  return reader.finish();
}

/// One stack of blocks: {"stack", "embedding", "blocks", "final_norm",
/// "output_head"}, appended to `builder` in execution order. Ops of a
/// decoder-only model carry no stack, as the Hugging Face importer's do: the
/// same model gives the same IR from either description.
bool readStack(const json::Object &object, const JsonPath &path,
               const JsonLocator &locator, llvm::StringRef modelKind,
               const CacheSettings &modelCache, const ImportOptions &options,
               MLIRContext &context, ModelBuilder &builder, int &blockCount,
               int &layerCount, std::optional<int64_t> &sourceLength) {
  JsonObjectReader stack(object, path, locator);
  std::string name =
      stack.optionalEnum("stack", {"encoder", "decoder"}, "decoder").str();
  if (modelKind == "decoder-only" && name != "decoder") {
    emitError(stack.location())
        << "a decoder-only model has one decoder stack; make \"kind\" "
           "\"encoder-decoder\" to give it an encoder";
    return false;
  }
  // The stack attribute and name prefix of every op of this stack.
  std::string tag = modelKind == "decoder-only" ? "" : name;
  std::string prefix = tag.empty() ? "" : tag + "_";
  JsonPath embeddingPath, blocksPath, headPath;
  const json::Object *embedding =
      stack.getObject("embedding", false, embeddingPath);
  const json::Array *blocks = stack.getArray("blocks", true, blocksPath);
  std::optional<bool> finalNorm = stack.optionalBool("final_norm");
  const json::Object *head = stack.getObject("output_head", false, headPath);
  if (!stack.finish() || !blocks)
    return false;

  if (embedding) {
    JsonObjectReader reader(*embedding, embeddingPath, locator);
    int64_t vocab =
        reader.getInt("vocab_size", true, 1, limits::kVocabulary).value_or(1);
    PositionKind positions = *symbolizePositionKind(reader.optionalEnum(
        "positions", {"none", "sinusoidal", "learned", "sinusoidal_halves"},
        "none"));
    int64_t maxPositions =
        reader.getInt("max_positions", false, 1, limits::kPositions, 4096)
            .value_or(1);
    float scale = float(reader.optionalPositiveNumber("scale").value_or(1.0));
    int64_t offset =
        reader.getInt("position_offset", false, 0, 1 << 24, 0).value_or(0);
    if (offset && positions != PositionKind::Learned) {
      JsonPath offsetPath = embeddingPath;
      offsetPath.push_back(std::string("position_offset"));
      emitError(locator.at(offsetPath))
          << "position_offset applies to learned positions only";
      return false;
    }
    // An optional norm of the embedded rows (BART's layernorm_embedding).
    NormSettings embeddingNorm;
    bool hasNorm = false;
    bool normOk = readNorm(reader, locator, embeddingNorm, "norm", &hasNorm);
    if (!reader.finish() || !normOk)
      return false;
    builder.addEmbedding(prefix + "embedding", vocab, positions, maxPositions,
                         tag, reader.location(), scale, offset);
    if (hasNorm)
      builder.addNorm(prefix + "embedding_norm", embeddingNorm.kind,
                      embeddingNorm.eps, tag, reader.location(),
                      NormPlacement::Post);
    if (name == "encoder")
      sourceLength = maxPositions;
  }
  NormSettings norm;
  Location lastBlock = locator.at(blocksPath);
  for (size_t i = 0; i < blocks->size(); i++) {
    JsonPath blockPath = blocksPath;
    blockPath.push_back(i);
    const json::Object *blockObject = (*blocks)[i].getAsObject();
    if (!blockObject) {
      emitError(locator.at(blockPath)) << "a block must be a JSON object";
      return false;
    }
    JsonObjectReader block(*blockObject, blockPath, locator);
    lastBlock = block.location();
    int64_t repeat =
        block.getInt("repeat", false, 1, limits::kRepeat, 1).value_or(1);
    bool normOk = readNorm(block, locator, norm);
    JsonPath attentionPath, ffnPath;
    const json::Array *attention =
        block.getArray("attention", true, attentionPath);
    const json::Object *ffn = block.getObject("ffn", false, ffnPath);
    if (!block.finish() || !normOk || !attention)
      return false;

    std::vector<std::pair<LayerConfig, Location>> layers;
    for (size_t j = 0; j < attention->size(); j++) {
      JsonPath layerPath = attentionPath;
      layerPath.push_back(j);
      const json::Object *layerObject = (*attention)[j].getAsObject();
      if (!layerObject) {
        emitError(locator.at(layerPath)) << "a layer must be a JSON object";
        return false;
      }
      LayerConfig layer;
      int64_t layerRepeat = 1;
      Location loc = locator.at(layerPath);
      if (!readLayer(*layerObject, layerPath, locator, modelCache, options,
                     context, layer, layerRepeat, loc, sourceLength))
        return false;
      if (layerRepeat != 1) {
        emitError(loc) << "repeat a block, not a layer inside it";
        return false;
      }
      if (!layer.stack.empty() && layer.stack != name) {
        emitError(loc) << "a layer of the " << name
                       << " stack cannot set stack "
                          " << layer.stack << "
                          "";
        return false;
      }
      layer.stack = tag;
      layers.emplace_back(layer, loc);
    }
    Activation activation = Activation::None;
    int64_t ffnSize = 0;
    bool ffnBias = false, ffnGated = false;
    ExpertsAttr ffnExperts;
    FfnForm ffnForm;
    Location ffnLoc = block.location();
    if (ffn) {
      JsonObjectReader reader(*ffn, ffnPath, locator);
      ffnLoc = reader.location();
      activation = *symbolizeActivation(reader.optionalEnum(
          "activation", {"gelu", "gelu_tanh", "relu", "silu"}, "gelu_tanh"));
      ffnSize =
          reader.getInt("intermediate_size", true, 1, limits::kFfn).value_or(1);
      ffnBias = reader.optionalBool("bias").value_or(false);
      ffnGated = reader.optionalBool("gated").value_or(false);
      // gpt-oss's gated product (checked by the op's verifier).
      if (std::optional<double> alpha =
              reader.optionalPositiveNumber("swiglu_alpha"))
        ffnForm.swigluAlpha = float(*alpha);
      if (std::optional<double> limit =
              reader.optionalPositiveNumber("swiglu_limit"))
        ffnForm.swigluLimit = float(*limit);
      JsonPath expertsPath;
      const json::Object *expertsObject =
          reader.getObject("experts", false, expertsPath);
      if (!reader.finish())
        return false;
      if (expertsObject) {
        JsonObjectReader experts(*expertsObject, expertsPath, locator);
        llvm::StringRef router = experts.optionalEnum(
            "router", {"softmax_top_k", "sigmoid_top_k"}, "softmax_top_k");
        std::optional<int64_t> count =
            experts.getInt("count", true, 2, limits::kExperts);
        std::optional<int64_t> perToken =
            experts.getInt("per_token", true, 1, limits::kExperts);
        bool normalize = experts.optionalBool("normalize").value_or(true);
        std::optional<int64_t> shared =
            experts.getInt("shared", false, 0, limits::kFfn, 0);
        bool sharedGate = experts.optionalBool("shared_gate").value_or(false);
        // The experts' own weight type: a checkpoint's MXFP4 (gpt-oss's).
        if (experts.optionalEnum("weight_dtype", {"mxfp4"}, "") == "mxfp4")
          ffnForm.expertWeights = Mxfp4Type::get(&context);
        ExpertRouting routing;
        std::optional<int64_t> groups =
            experts.getInt("groups", false, 1, limits::kExperts, 1);
        std::optional<int64_t> groupTopK =
            experts.getInt("group_top_k", false, 1, limits::kExperts, 1);
        if (experts.has("scale"))
          if (std::optional<double> scale =
                  experts.optionalPositiveNumber("scale"))
            routing.scale = *scale;
        if (count && groups && (*count % *groups))
          experts.error("groups", "groups (" + llvm::Twine(*groups) +
                                      ") must divide count (" +
                                      llvm::Twine(*count) + ")");
        else if (groups && groupTopK && *groupTopK > *groups)
          experts.error("group_top_k", "group_top_k (" +
                                           llvm::Twine(*groupTopK) +
                                           ") exceeds groups (" +
                                           llvm::Twine(*groups) + ")");
        else if (count && perToken && groups && groupTopK &&
                 *perToken > *groupTopK * (*count / *groups))
          experts.error("per_token",
                        "per_token (" + llvm::Twine(*perToken) +
                            ") exceeds the experts of group_top_k groups (" +
                            llvm::Twine(*groupTopK * (*count / *groups)) +
                            ")");
        else if (router == "sigmoid_top_k" && count && groups && *groups > 1 &&
                 *count / *groups < 2)
          experts.error("groups", "sigmoid_top_k scores a group by its two "
                                  "best experts: groups need 2 experts or "
                                  "more");
        if (groups)
          routing.groups = *groups;
        if (groupTopK)
          routing.groupTopK = *groupTopK;
        if (count && perToken && *perToken > *count)
          experts.error("per_token", "per_token (" + llvm::Twine(*perToken) +
                                         ") exceeds count (" +
                                         llvm::Twine(*count) + ")");
        if (sharedGate && shared && *shared == 0)
          experts.error("shared_gate", "shared_gate needs shared experts "
                                       "('shared' hidden features)");
        if (!experts.finish() || !count || !perToken || !shared || !groups ||
            !groupTopK)
          return false;
        ffnExperts =
            builder.experts(*symbolizeRouterKind(router), *count, *perToken,
                            normalize, *shared, sharedGate, routing);
      }
    }
    // Pre-norm: norm, then the sublayer reads it. Post-norm: the sublayer
    // reads the residual stream, then the norm normalizes the stream.
    for (int64_t r = 0; r < repeat; r++) {
      for (auto &[layer, loc] : layers) {
        std::string normName = "layer" + std::to_string(layerCount) + "_norm";
        if (norm.pre)
          builder.addNorm(normName, norm.kind, norm.eps, tag, loc);
        layerCount = builder.addLayer(layer, loc) + 1;
        if (norm.post)
          builder.addNorm(normName, norm.kind, norm.eps, tag, loc,
                          NormPlacement::Post);
        if (norm.output)
          builder.addNorm("layer" + std::to_string(layerCount - 1) +
                              "_output_norm",
                          norm.kind, norm.eps, tag, loc,
                          NormPlacement::ResidualAdd);
      }
      if (ffn) {
        std::string block = "block" + std::to_string(blockCount);
        if (norm.pre)
          builder.addNorm(block + "_ffn_norm", norm.kind, norm.eps, tag,
                          ffnLoc);
        builder.addFfn(block + "_ffn", activation, ffnSize, ffnBias, ffnGated,
                       tag, ffnLoc, ffnExperts, ffnForm);
        if (norm.post)
          builder.addNorm(block + "_ffn_norm", norm.kind, norm.eps, tag, ffnLoc,
                          NormPlacement::Post);
        if (norm.output)
          builder.addNorm(block + "_ffn_output_norm", norm.kind, norm.eps, tag,
                          ffnLoc, NormPlacement::ResidualAdd);
      }
      blockCount++;
    }
  }
  // A post-norm stack ends normalized already.
  if (finalNorm.value_or(!norm.post))
    builder.addNorm(prefix + "final_norm", norm.kind, norm.eps, tag, lastBlock);
  if (head) {
    JsonObjectReader reader(*head, headPath, locator);
    int64_t vocab =
        reader.getInt("vocab_size", true, 1, limits::kVocabulary).value_or(1);
    bool bias = reader.optionalBool("bias").value_or(false);
    std::optional<double> softcap = reader.optionalPositiveNumber("softcap");
    // The head's own weights (absent: the model's weight_dtype).
    std::optional<::attn::DType> weights;
    if (reader.has("weight_dtype"))
      weights = parseDescriptionDType(
          reader.optionalEnum("weight_dtype", kDescriptionHeadDTypes, "f32"),
          kDescriptionHeadDTypes);
    if (!reader.finish())
      return false;
    builder.addOutputHead(vocab, bias, reader.location(), /*tied=*/false,
                          softcap ? std::optional<float>(float(*softcap))
                                  : std::nullopt,
                          weights ? mlirType(context, *weights) : Type());
  }
  return true;
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
  std::optional<int64_t> dModel =
      model.getInt("d_model", false, 1, limits::kDModel);
  std::optional<int64_t> maxBatch =
      model.getInt("max_batch", false, 1, limits::kBatch, 1);
  // How the linear kernels read their weights (whole models only).
  Type weights = mlirType(
      context,
      parseDescriptionDType(
          model.optionalEnum("weight_dtype", kDescriptionDTypes, "f32"))
          .value_or(::attn::DType::F32));
  // The group of inputs per scale: int4's (32, 64 or 128), int8's where
  // it has one (16 or 32; else a scale per output feature).
  std::optional<int64_t> weightGroup =
      model.getInt("weight_group", false, 16, 128);
  if (weightGroup && weights.isSignlessInteger(4) &&
      !::attn::isInt4Group(*weightGroup))
    model.error("weight_group", llvm::Twine("weight_group must be ") +
                                    ::attn::kInt4Groups + " for int4 weights");
  else if (weightGroup && weights.isSignlessInteger(8) &&
           !::attn::isInt8Group(*weightGroup))
    model.error("weight_group", llvm::Twine("weight_group must be ") +
                                    ::attn::kInt8Groups + " for int8 weights");
  else if (weightGroup && !weights.isSignlessInteger(4) &&
           !weights.isSignlessInteger(8))
    model.error("weight_group",
                "weight_group applies to int4 and int8 weights only");
  // How its checkpoints name their tensors, when the description says.
  llvm::StringRef naming = model.optionalEnum(
      "weight_naming",
      llvm::SmallVector<llvm::StringRef>(std::begin(kWeightNamings),
                                         std::end(kWeightNamings)),
      "");
  // What the checkpoint's RMS norm weights lack (Gemma's 1).
  std::optional<double> normWeightOffset =
      model.optionalNumber("norm_weight_offset");
  CacheSettings cache;
  bool cacheOk = readCache(model, locator, cache);
  // Whole blocks: a "stacks" array. Attention layers alone: a "layers"
  // array, or one "attention" object as a shorthand.
  JsonPath layersPath, attentionPath, stacksPath;
  const json::Array *stacks = model.has("stacks")
                                  ? model.getArray("stacks", true, stacksPath)
                                  : nullptr;
  const json::Array *layers = model.has("attention") || stacks
                                  ? nullptr
                                  : model.getArray("layers", true, layersPath);
  const json::Object *attention =
      model.has("attention") ? model.getObject("attention", true, attentionPath)
                             : nullptr;
  if (stacks && (model.has("layers") || attention)) {
    emitError(locator.at(stacksPath, /*atKey=*/true))
        << "a model has \"stacks\" of blocks or attention \"layers\", not "
           "both";
    return nullptr;
  }
  if (!model.finish() || !cacheOk || (!layers && !attention && !stacks))
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

  if (stacks) {
    if (!dModel) {
      emitError(locator.at(JsonPath{})) << "a model of stacks needs d_model";
      return nullptr;
    }
    ModelBuilder builder(context, locator.at(JsonPath{}), name, kind, *dModel,
                         options.maxBatch.value_or(maxBatch.value_or(1)));
    builder.setWeightDtype(weights, weightGroup);
    if (!naming.empty())
      builder.setWeightNaming(naming);
    if (normWeightOffset)
      builder.setNormWeightOffset(float(*normWeightOffset));
    int blockCount = 0, layerCount = 0;
    std::optional<int64_t> sourceLength;
    for (size_t i = 0; i < stacks->size(); i++) {
      JsonPath path = stacksPath;
      path.push_back(i);
      const json::Object *object = (*stacks)[i].getAsObject();
      if (!object) {
        emitError(locator.at(path)) << "a stack must be a JSON object";
        return nullptr;
      }
      if (!readStack(*object, path, locator, kind, cache, options, context,
                     builder, blockCount, layerCount, sourceLength))
        return nullptr;
    }
    if (layerCount == 0) {
      emitError(locator.at(stacksPath)) << "the model has no attention layer";
      return nullptr;
    }
    return builder.finish();
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
  std::vector<JsonDuplicateKey> duplicates;
  std::optional<json::Value> document =
      parseJson(buffer->getBuffer(), locator, &duplicates);
  if (!document)
    return nullptr;
  const json::Object *root = document->getAsObject();
  if (!root) {
    emitError(locator.at(JsonPath{}))
        << "a model description must be a JSON object";
    return nullptr;
  }
  // A key stated twice: transformers (Python's json) takes the last, as
  // llvm::json does, so a Hugging Face config gets a warning; in attnc's
  // own format it is an error.
  const bool huggingFace = root->get("model_type");
  for (const JsonDuplicateKey &d : duplicates) {
    InFlightDiagnostic diagnostic =
        huggingFace ? emitWarning(locator.atOffset(d.second))
                          << "duplicate key '" << d.key
                          << "': the last one counts, as in transformers"
                    : emitError(locator.atOffset(d.second))
                          << "duplicate key '" << d.key << "'";
    diagnostic.attachNote(locator.atOffset(d.first)) << "first stated here";
  }
  if (!huggingFace && !duplicates.empty())
    return nullptr;
  if (huggingFace)
    return importHuggingFaceConfig(*root, locator, context, options,
                                   buffer->getBufferIdentifier());
  return importNative(*root, locator, context, options,
                      buffer->getBufferIdentifier());
}

} // namespace attnc
