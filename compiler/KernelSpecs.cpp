//===- KernelSpecs.cpp - attn IR to plain kernel specs --------------------===//

#include "KernelSpecs.h"

#include "DTypes.h"

#include "attn/AttnOps.h"

#include <cmath>

using namespace mlir;
using mlir::attn::AttentionLayerOp;
using mlir::attn::EmbeddingKernelOp;
using mlir::attn::KernelFamily;
using mlir::attn::KernelOp;
using mlir::attn::LinearKernelOp;
using mlir::attn::ModelOp;
using mlir::attn::NormKernelOp;

// The plain enums mirror the dialect's, value for value.
static_assert(int(::attn::Activation::GeluTanh) ==
                  int(mlir::attn::Activation::GeluTanh) &&
              int(::attn::Activation::Silu) ==
                  int(mlir::attn::Activation::Silu));
static_assert(int(::attn::PositionKind::Learned) ==
              int(mlir::attn::PositionKind::Learned));
static_assert(int(::attn::PositionKind::SinusoidalHalves) ==
              int(mlir::attn::PositionKind::SinusoidalHalves));
static_assert(int(::attn::Activation::Gelu) ==
              int(mlir::attn::Activation::Gelu));

namespace attnc {

namespace {
/// What prefill and decode specs share: the attention the kernel computes,
/// from the attributes attn.kernel and attn.sdpa have in common.
template <class Op>
::attn::AttentionSettings commonSettings(Op op, float scale) {
  ::attn::AttentionSettings settings;
  settings.numQueryHeads = op.getNumQueryHeads();
  settings.numKvHeads = op.getNumKvHeads();
  settings.headDim = op.getHeadDim();
  settings.causal = op.getCausal();
  settings.window = op.getWindow().value_or(0);
  settings.scale = scale;
  settings.softcap = op.getSoftcap() ? op.getSoftcap()->convertToFloat() : 0.0f;
  settings.alibi = op.getAlibi();
  return settings;
}
} // namespace

::attn::AttentionSettings attentionSettings(KernelOp op) {
  ::attn::AttentionSettings settings =
      commonSettings(op, op.getScale().convertToFloat());
  settings.sinks = op.getSinks();
  return settings;
}

::attn::AttentionSettings attentionSettings(mlir::attn::SdpaOp op) {
  return commonSettings(op, op.getEffectiveScale());
}

::attn::RopeScaling ropeScaling(DictionaryAttr scaling) {
  // Verified: default, linear, llama3, yarn, dynamic or longrope with
  // every number and list it needs.
  if (mlir::attn::ropeScalingType(scaling) == "default")
    return {};
  auto number = [&](StringRef key) {
    return *mlir::attn::ropeScalingNumber(scaling, key);
  };
  ::attn::RopeScaling rule;
  rule.factor = number("factor");
  rule.type = ::attn::RopeScaling::Type::Linear;
  if (mlir::attn::ropeScalingType(scaling) == "llama3") {
    rule.type = ::attn::RopeScaling::Type::Llama3;
    rule.lowFreqFactor = number("low_freq_factor");
    rule.highFreqFactor = number("high_freq_factor");
    rule.originalMaxPositions = number("original_max_position_embeddings");
  }
  if (mlir::attn::ropeScalingType(scaling) == "dynamic") {
    rule.type = ::attn::RopeScaling::Type::Dynamic;
    rule.originalMaxPositions = number("original_max_position_embeddings");
  }
  if (mlir::attn::ropeScalingType(scaling) == "longrope") {
    // Verified: both lists, one factor per rotating channel pair.
    rule.type = ::attn::RopeScaling::Type::LongRope;
    rule.originalMaxPositions = number("original_max_position_embeddings");
    // (The lists are copied out of the optionals first: a range-for over
    // *temporary would outlive it.)
    const ArrayRef<float> shortFactors =
                              *mlir::attn::ropeScalingList(scaling,
                                                           "short_factor"),
                          longFactors = *mlir::attn::ropeScalingList(
                              scaling, "long_factor");
    rule.shortFactors.assign(shortFactors.begin(), shortFactors.end());
    rule.longFactors.assign(longFactors.begin(), longFactors.end());
    rule.attentionFactor =
        mlir::attn::ropeScalingNumber(scaling, "attention_factor")
            .value_or(rule.factor <= 1
                          ? 1.0
                          : std::sqrt(1 + std::log(rule.factor) /
                                              std::log(rule.originalMaxPositions)));
  }
  if (mlir::attn::ropeScalingType(scaling) == "yarn") {
    // Optional keys take transformers' defaults.
    auto optional = [&](StringRef key, double otherwise) {
      return mlir::attn::ropeScalingNumber(scaling, key).value_or(otherwise);
    };
    rule.type = ::attn::RopeScaling::Type::Yarn;
    rule.originalMaxPositions = number("original_max_position_embeddings");
    rule.betaFast = optional("beta_fast", 32);
    rule.betaSlow = optional("beta_slow", 1);
    if (auto truncate = scaling.getAs<BoolAttr>("truncate"))
      rule.truncate = truncate.getValue();
    rule.attentionFactor =
        optional("attention_factor",
                 ::attn::yarnAttentionFactor(rule.factor, optional("mscale", 0),
                                             optional("mscale_all_dim", 0)));
  }
  return rule;
}

LogicalResult collectKernelSpecs(ModuleOp module, ModelSpecs &specs) {
  auto models = module.getOps<ModelOp>();
  if (std::distance(models.begin(), models.end()) != 1)
    return module.emitError() << "expected exactly one attn.model";
  ModelOp model = *models.begin();
  specs.name = model.getSymName().str();
  const std::string prefix = specs.name + "_";

  for (KernelOp kernel : model.getKernels()) {
    std::optional<mlir::attn::ScheduleAttr> schedule = kernel.getSchedule();
    if (!schedule)
      return kernel.emitOpError()
             << "has no schedule: run --attn-select-schedules first";
    std::string name = prefix + kernel.getSymName().str();
    if (kernel.getFamily() == KernelFamily::Prefill) {
      ::attn::SdpaSpec spec;
      static_cast<::attn::AttentionSettings &>(spec) =
          attentionSettings(kernel);
      spec.functionName = name;
      spec.schedule.vectorWidth = schedule->getVectorWidth();
      spec.schedule.queryBlock = schedule->getQueryBlock();
      spec.schedule.kvChunk = schedule->getKvChunk();
      spec.schedule.qkTileKeys = schedule->getQkTileKeys();
      spec.schedule.pvTileRows = schedule->getPvTileRows();
      spec.keyPadding = kernel.getKeyPadding();
      if (kernel.getComputeDtype() && kernel.getComputeDtype()->isBF16())
        spec.compute = ::attn::SdpaCompute::BF16;
      // The defaults' per-family tile goes with a heuristic schedule; a
      // database entry was measured on one machine and stands as it is.
      if (schedule->getSource() == "heuristic")
        spec.schedule.intelQkTile =
            ::attn::defaultSdpaSchedule(spec.headDim, spec.compute)
                .intelQkTile;
      specs.prefill.push_back(spec);
    } else {
      ::attn::DecodeSpec spec;
      static_cast<::attn::AttentionSettings &>(spec) =
          attentionSettings(kernel);
      spec.functionName = name;
      spec.pageSize = *kernel.getPageSize();
      spec.cacheElement = toDType(kernel.getKvDtype().value_or(Type()));
      spec.schedule.vectorWidth = schedule->getVectorWidth();
      spec.schedule.splitKeys = schedule->getSplitKeys();
      specs.decode.push_back(spec);
    }
  }
  for (Operation &op : model.getBody().front()) {
    if (auto kernel = dyn_cast<LinearKernelOp>(op)) {
      ::attn::LinearSpec spec;
      spec.functionName = prefix + kernel.getSymName().str();
      spec.inFeatures = kernel.getInFeatures();
      spec.outFeatures = kernel.getOutFeatures();
      spec.bias = kernel.getBias();
      spec.activation = ::attn::Activation(int(kernel.getActivation()));
      spec.residual = kernel.getResidual();
      if (std::optional<mlir::attn::Activation> gate = kernel.getInputGate())
        spec.inputGate = ::attn::Activation(int(*gate));
      if (std::optional<APFloat> alpha = kernel.getGateAlpha())
        spec.gateAlpha = alpha->convertToFloat();
      if (std::optional<APFloat> limit = kernel.getGateLimit())
        spec.gateLimit = limit->convertToFloat();
      if (std::optional<APFloat> theta = kernel.getRopeTheta()) {
        spec.ropeTheta = theta->convertToFloat();
        spec.ropeHeads = *kernel.getRopeHeads();
        spec.ropeHeadDim = *kernel.getRopeHeadDim();
        spec.ropeDim = int(kernel.getRopeDim().value_or(0));
      }
      if (DictionaryAttr scaling = kernel.getRopeScalingAttr())
        spec.ropeScaling = ropeScaling(scaling);
      if (mlir::attn::QkNormAttr norm = kernel.getQkNormAttr()) {
        spec.qkNormEps = norm.getEpsValue();
        spec.qkNormScope =
            norm.getScope() == mlir::attn::QkNormScope::Projection
                ? ::attn::QkNormScope::Projection
                : ::attn::QkNormScope::Head;
      }
      if (std::optional<uint64_t> kvHeads = kernel.getAppendKvHeads()) {
        spec.cacheAppend.kvHeads = int(*kvHeads);
        spec.cacheAppend.headDim = int(*kernel.getAppendHeadDim());
        spec.cacheAppend.element = toDType(*kernel.getAppendDtype());
      }
      spec.argmax = kernel.getArgmax();
      if (std::optional<APFloat> cap = kernel.getSoftcap())
        spec.softcap = cap->convertToFloat();
      spec.weightElement = toDType(kernel.getWeightDtype().value_or(Type()));
      spec.weightGroup = spec.weightElement == ::attn::DType::MXFP4
                             ? int(::attn::kMxBlock)
                             : int(kernel.getWeightGroup().value_or(0));
      spec.weightZeros = kernel.getWeightZeros();
      spec.weightMins = kernel.getWeightMins();
      spec.experts = int(kernel.getExperts().value_or(0));
      specs.linear.push_back(spec);
    } else if (auto kernel = dyn_cast<NormKernelOp>(op)) {
      ::attn::NormSpec spec;
      spec.functionName = prefix + kernel.getSymName().str();
      spec.kind = kernel.getKind() == mlir::attn::NormKind::LayerNorm
                      ? ::attn::NormKind::LayerNorm
                      : ::attn::NormKind::RmsNorm;
      spec.dim = kernel.getDim();
      spec.eps = kernel.getEps().convertToFloat();
      spec.residual = kernel.getResidual();
      specs.norm.push_back(spec);
    } else if (auto kernel = dyn_cast<EmbeddingKernelOp>(op)) {
      ::attn::EmbeddingSpec spec;
      spec.functionName = prefix + kernel.getSymName().str();
      spec.vocabSize = kernel.getVocabSize();
      spec.dim = kernel.getDim();
      spec.positions = ::attn::PositionKind(int(kernel.getPositions()));
      spec.maxPositions = kernel.getMaxPositions();
      if (std::optional<APFloat> scale = kernel.getScale())
        spec.scale = scale->convertToFloat();
      spec.positionOffset = int(kernel.getPositionOffset().value_or(0));
      specs.embedding.push_back(spec);
    }
  }
  for (AttentionLayerOp layer : model.getLayers()) {
    if (!layer.getPrefillKernel())
      return layer.emitOpError()
             << "has no kernel: run --attn-specialize-kernels first";
    specs.layers.push_back(
        {layer.getSymName().str(), prefix + layer.getPrefillKernel()->str(),
         layer.getDecodeKernel() ? prefix + layer.getDecodeKernel()->str()
                                 : std::string()});
  }
  return success();
}

} // namespace attnc
