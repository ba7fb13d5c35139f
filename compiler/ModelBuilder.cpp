//===- ModelBuilder.cpp - building attn.model ops for the importers -------===//

#include "ModelBuilder.h"

#include "DTypes.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/Regex.h"

using namespace mlir;

namespace attnc {

ModelBuilder::ModelBuilder(MLIRContext &context, Location loc,
                           llvm::StringRef name, llvm::StringRef kind,
                           int64_t dModel, int64_t maxBatch)
    : builder(&context), module(ModuleOp::create(loc)) {
  builder.setInsertionPointToEnd(module->getBody());
  auto model = builder.create<mlir::attn::ModelOp>(
      loc, name, uint64_t(dModel), kind, uint64_t(maxBatch), TypeAttr(),
      StringAttr(), IntegerAttr(), StringAttr(), FloatAttr());
  model.getBody().emplaceBlock();
  builder.setInsertionPointToEnd(&model.getBody().front());
}

namespace {
StringAttr optionalString(Builder &builder, llvm::StringRef text) {
  return text.empty() ? StringAttr() : builder.getStringAttr(text);
}
} // namespace

void ModelBuilder::addEmbedding(llvm::StringRef name, int64_t vocabSize,
                                mlir::attn::PositionKind positions,
                                int64_t maxPositions, llvm::StringRef stack,
                                Location loc, float scale,
                                int64_t positionOffset) {
  builder.create<mlir::attn::EmbeddingOp>(
      loc, builder.getStringAttr(name), builder.getI64IntegerAttr(vocabSize),
      mlir::attn::PositionKindAttr::get(builder.getContext(), positions),
      builder.getI64IntegerAttr(maxPositions),
      scale != 1.0f ? builder.getF32FloatAttr(scale) : FloatAttr(),
      positionOffset ? builder.getI64IntegerAttr(positionOffset)
                     : IntegerAttr(),
      optionalString(builder, stack), FlatSymbolRefAttr());
}

void ModelBuilder::addNorm(llvm::StringRef name, mlir::attn::NormKind kind,
                           float eps, llvm::StringRef stack, Location loc,
                           NormPlacement placement) {
  auto unit = [&](bool set) { return set ? builder.getUnitAttr() : UnitAttr(); };
  builder.create<mlir::attn::NormOp>(
      loc, builder.getStringAttr(name),
      mlir::attn::NormKindAttr::get(builder.getContext(), kind),
      builder.getF32FloatAttr(eps), unit(placement == NormPlacement::Post),
      optionalString(builder, stack), FlatSymbolRefAttr(),
      unit(placement == NormPlacement::ResidualAdd));
}

void ModelBuilder::addFfn(llvm::StringRef name,
                          mlir::attn::Activation activation,
                          int64_t intermediateSize, bool bias, bool gated,
                          llvm::StringRef stack, Location loc,
                          mlir::attn::ExpertsAttr experts,
                          const FfnForm &form) {
  auto number = [&](std::optional<float> value) {
    return value ? builder.getF32FloatAttr(*value) : FloatAttr();
  };
  builder.create<mlir::attn::FfnOp>(
      loc, builder.getStringAttr(name),
      mlir::attn::ActivationAttr::get(builder.getContext(), activation),
      builder.getI64IntegerAttr(intermediateSize),
      bias ? builder.getUnitAttr() : UnitAttr(),
      gated ? builder.getUnitAttr() : UnitAttr(),
      optionalString(builder, stack), FlatSymbolRefAttr(), FlatSymbolRefAttr(),
      experts, FlatSymbolRefAttr(), FlatSymbolRefAttr(), FlatSymbolRefAttr(),
      number(form.swigluAlpha), number(form.swigluLimit),
      form.expertWeights ? TypeAttr::get(form.expertWeights) : TypeAttr(),
      mlir::attn::WeightsAttr(), mlir::attn::WeightsAttr());
}

mlir::attn::ExpertsAttr
ModelBuilder::experts(mlir::attn::RouterKind router, int64_t count,
                      int64_t perToken, bool normalize, int64_t shared,
                      bool sharedGate, ExpertRouting routing) {
  return mlir::attn::ExpertsAttr::get(
      builder.getContext(), router, count, perToken,
      builder.getBoolAttr(normalize), shared,
      sharedGate ? builder.getBoolAttr(true) : BoolAttr(), routing.groups,
      routing.groupTopK,
      routing.scale != 1.0 ? builder.getF32FloatAttr(float(routing.scale))
                           : FloatAttr());
}

void setWeights(mlir::attn::ModelOp model, Type type,
                std::optional<int64_t> group,
                std::optional<::attn::Int4Format> format, bool mins) {
  model.setWeightDtypeAttr(type && !type.isF32() ? TypeAttr::get(type)
                                                 : TypeAttr());
  if (!group && type && type.isSignlessInteger(4))
    group = kDefaultWeightGroup;
  Builder builder(model.getContext());
  model.setWeightGroupAttr(group ? builder.getI64IntegerAttr(*group)
                                 : IntegerAttr());
  model.setWeightFormatAttr(
      format ? builder.getStringAttr(::attn::int4FormatName(*format))
             : StringAttr());
  model.setWeightMins(mins);
  for (Operation &op : model.getBody().front()) {
    if (auto layer = dyn_cast<mlir::attn::AttentionLayerOp>(op)) {
      layer.removeQueryWeightsAttr();
      layer.removeKeyWeightsAttr();
      layer.removeValueWeightsAttr();
      layer.removeOutputWeightsAttr();
    } else if (auto ffn = dyn_cast<mlir::attn::FfnOp>(op)) {
      ffn.removeUpWeightsAttr();
      ffn.removeDownWeightsAttr();
    }
  }
}

void ModelBuilder::setWeightDtype(Type type, std::optional<int64_t> group,
                                  std::optional<::attn::Int4Format> format) {
  setWeights(cast<mlir::attn::ModelOp>(builder.getBlock()->getParentOp()),
             type, group, format);
}

void ModelBuilder::setWeightNaming(llvm::StringRef naming) {
  auto model = cast<mlir::attn::ModelOp>(builder.getBlock()->getParentOp());
  model.setWeightNamingAttr(builder.getStringAttr(naming));
}

void ModelBuilder::addOutputHead(int64_t vocabSize, bool bias, Location loc,
                                 bool tied, std::optional<float> softcap,
                                 Type weights) {
  auto head = builder.create<mlir::attn::OutputHeadOp>(
      loc, builder.getStringAttr("output_head"),
      builder.getI64IntegerAttr(vocabSize),
      bias ? builder.getUnitAttr() : UnitAttr(), FlatSymbolRefAttr(),
      tied ? builder.getUnitAttr() : UnitAttr(),
      softcap ? builder.getF32FloatAttr(*softcap) : FloatAttr(), TypeAttr(),
      IntegerAttr());
  setHeadWeights(cast<mlir::attn::ModelOp>(head->getParentOp()), weights);
}

void setHeadWeights(mlir::attn::ModelOp model, Type type, uint64_t group) {
  Builder builder(model.getContext());
  for (auto head : model.getBody().front().getOps<mlir::attn::OutputHeadOp>()) {
    head.setWeightDtypeAttr(type ? TypeAttr::get(type) : TypeAttr());
    head.setWeightGroupAttr(group ? builder.getI64IntegerAttr(int64_t(group))
                                  : IntegerAttr());
  }
}

void ModelBuilder::setNormWeightOffset(float offset) {
  auto model = cast<mlir::attn::ModelOp>(builder.getBlock()->getParentOp());
  model.setNormWeightOffsetAttr(builder.getF32FloatAttr(offset));
}

mlir::attn::QkNormAttr makeQkNorm(MLIRContext &context,
                                  mlir::attn::QkNormScope scope, float eps) {
  return mlir::attn::QkNormAttr::get(&context, scope,
                                     Builder(&context).getF32FloatAttr(eps));
}

mlir::attn::LatentAttr makeLatent(MLIRContext &context, Location loc,
                                  int64_t rank, int64_t ropeDim,
                                  int64_t nopeDim, int64_t valueDim,
                                  int64_t queryRank, float eps) {
  return mlir::attn::LatentAttr::getChecked(
      [&] { return mlir::emitError(loc); }, &context, rank, ropeDim, nopeDim,
      valueDim, queryRank, Builder(&context).getF32FloatAttr(eps));
}

int ModelBuilder::addLayer(const LayerConfig &c, Location loc) {
  auto optionalF32 = [&](std::optional<float> value) {
    return value ? builder.getF32FloatAttr(*value) : FloatAttr();
  };
  auto layer = builder.create<mlir::attn::AttentionLayerOp>(
      loc, builder.getStringAttr("layer" + std::to_string(layerCount++)),
      mlir::attn::LayerKindAttr::get(builder.getContext(), c.kind),
      builder.getI64IntegerAttr(c.queryHeads),
      builder.getI64IntegerAttr(c.kvHeads),
      builder.getI64IntegerAttr(c.headDim),
      mlir::attn::MaskKindAttr::get(builder.getContext(), c.mask),
      optionalF32(c.scale),
      c.window ? builder.getI64IntegerAttr(*c.window) : IntegerAttr(),
      optionalF32(c.softcap),
      c.alibi ? builder.getUnitAttr() : UnitAttr(),
      c.keyPadding ? builder.getUnitAttr() : UnitAttr(),
      c.bf16Compute ? TypeAttr::get(builder.getBF16Type()) : TypeAttr(),
      optionalF32(c.ropeTheta), c.ropeScaling, c.qkNorm,
      c.ropeDim ? builder.getI64IntegerAttr(*c.ropeDim) : IntegerAttr(),
      c.projectionBias ? builder.getUnitAttr() : UnitAttr(),
      c.outputBias ? builder.getBoolAttr(*c.outputBias) : BoolAttr(), c.cache,
      c.stack.empty() ? StringAttr() : builder.getStringAttr(c.stack),
      FlatSymbolRefAttr(), FlatSymbolRefAttr(), UnitAttr(), UnitAttr(),
      FlatSymbolRefAttr(), FlatSymbolRefAttr(), FlatSymbolRefAttr(),
      c.sinks ? builder.getUnitAttr() : UnitAttr(), c.latent,
      FlatSymbolRefAttr(), FlatSymbolRefAttr(), FlatSymbolRefAttr(),
      FlatSymbolRefAttr(), FlatSymbolRefAttr(),
      // Projections' own weight types: a GGUF file's (importGguf).
      mlir::attn::WeightsAttr(), mlir::attn::WeightsAttr(),
      mlir::attn::WeightsAttr(), mlir::attn::WeightsAttr(),
      FlatSymbolRefAttr());
  (void)layer;
  return layerCount - 1;
}

OwningOpRef<ModuleOp> ModelBuilder::finish() {
  if (failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

mlir::attn::KvCacheAttr makeKvCache(MLIRContext &context, Location loc,
                                    llvm::StringRef layout, int64_t pageSize,
                                    llvm::StringRef dtype, int64_t maxLength,
                                    const ImportOptions &options) {
  layout = options.kvLayout ? llvm::StringRef(*options.kvLayout) : layout;
  dtype = options.kvDtype ? llvm::StringRef(*options.kvDtype) : dtype;
  pageSize = options.pageSize.value_or(pageSize);
  maxLength = options.maxLength.value_or(maxLength);
  std::optional<mlir::attn::CacheLayout> cacheLayout =
      mlir::attn::symbolizeCacheLayout(layout);
  if (!cacheLayout) {
    emitError(loc) << "unknown KV cache layout '" << layout
                   << "' (expected contiguous or paged)";
    return {};
  }
  std::optional<::attn::DType> element =
      parseDescriptionDType(dtype, kDescriptionCacheDTypes);
  if (!element) {
    emitError(loc) << "unknown KV cache dtype '" << dtype << "' (expected "
                   << kDescriptionCacheDTypeList << ")";
    return {};
  }
  Type type = mlirType(context, *element);
  if (*cacheLayout == mlir::attn::CacheLayout::Contiguous)
    pageSize = maxLength;
  return mlir::attn::KvCacheAttr::getChecked([&] { return emitError(loc); },
                                             &context, *cacheLayout, pageSize,
                                             type, maxLength);
}

DictionaryAttr jsonToDictionary(const llvm::json::Object &object,
                                const mlir::attn::JsonPath &path,
                                const mlir::attn::JsonLocator &locator,
                                MLIRContext &context) {
  Builder builder(&context);
  llvm::SmallVector<NamedAttribute> entries;
  for (const auto &[key, value] : object) {
    Attribute attr;
    if (std::optional<int64_t> integer = value.getAsInteger())
      attr = builder.getI64IntegerAttr(*integer);
    else if (std::optional<double> number = value.getAsNumber())
      attr = builder.getF32FloatAttr(float(*number));
    else if (std::optional<llvm::StringRef> text = value.getAsString())
      attr = builder.getStringAttr(*text);
    else if (std::optional<bool> flag = value.getAsBoolean())
      attr = builder.getBoolAttr(*flag);
    else if (const llvm::json::Array *list = value.getAsArray()) {
      // LongRoPE's factor lists, in fp32 as transformers computes with them.
      llvm::SmallVector<float> numbers;
      for (const llvm::json::Value &element : *list)
        if (std::optional<double> number = element.getAsNumber())
          numbers.push_back(float(*number));
      if (numbers.size() == list->size())
        attr = builder.getDenseF32ArrayAttr(numbers);
    }
    if (!attr) {
      mlir::attn::JsonPath at = path;
      at.push_back(key.str());
      emitError(locator.at(at)) << "'" << key.str()
                                << "' must be a number, string, boolean or "
                                   "list of numbers";
      return {};
    }
    entries.push_back(builder.getNamedAttr(key.str(), attr));
  }
  return builder.getDictionaryAttr(entries);
}

bool isCIdentifier(llvm::StringRef name) {
  return llvm::Regex("^[A-Za-z_][A-Za-z0-9_]*$").match(name);
}

} // namespace attnc
