//===- SpecializeKernels.cpp - one kernel per distinct layer --------------===//

#include "attn/AttnDTypes.h"
#include "attn/AttnPasses.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mlir::attn {
#define GEN_PASS_DEF_SPECIALIZEKERNELS
#include "attn/AttnPasses.h.inc"

namespace {
/// What makes two kernels different; equal signatures share one kernel.
struct KernelSignature {
  KernelFamily family;
  int64_t queryHeads, kvHeads, headDim;
  bool causal;
  int64_t window; // sliding window, else 0
  float scale;
  float softcap; // 0: none
  bool alibi;
  bool keyPadding;  // prefill only
  int64_t pageSize; // decode only, else 0
  Type cacheType;   // decode only, else null
  bool bf16Compute; // prefill only
  bool sinks;       // a sink logit per query head

  std::string name() const {
    std::string text = (family == KernelFamily::Prefill ? "prefill" : "decode");
    text += "_h" + std::to_string(queryHeads) + "_kv" +
            std::to_string(kvHeads) + "_d" + std::to_string(headDim);
    if (pageSize)
      text += "_p" + std::to_string(pageSize);
    if (cacheType && !cacheType.isF32())
      text += cacheType.isF16() ? "_f16" : cacheType.isBF16() ? "_bf16" : "_i8";
    if (softcap > 0)
      text += "_cap" + std::to_string(int(softcap));
    if (alibi)
      text += "_alibi";
    if (keyPadding)
      text += "_kpad";
    if (bf16Compute)
      text += "_bf16c";
    if (sinks)
      text += "_sinks";
    if (window)
      return text + "_w" + std::to_string(window);
    return text + (causal ? "_causal" : "");
  }
  bool operator==(const KernelSignature &other) const {
    return family == other.family && queryHeads == other.queryHeads &&
           kvHeads == other.kvHeads && headDim == other.headDim &&
           causal == other.causal && window == other.window &&
           scale == other.scale && softcap == other.softcap &&
           alibi == other.alibi && keyPadding == other.keyPadding &&
           pageSize == other.pageSize && cacheType == other.cacheType &&
           bf16Compute == other.bf16Compute && sinks == other.sinks;
  }
};

/// Formats a float for a symbol name: 10000 → "10000", 0.5 → "0p5".
std::string nameNumber(float value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15f)
    return std::to_string(int64_t(value));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", double(value));
  std::string text = buffer;
  std::replace(text.begin(), text.end(), '.', 'p');
  std::replace(text.begin(), text.end(), '-', 'm');
  std::replace(text.begin(), text.end(), '+', 'p');
  return text;
}

/// Kernels of the rest of each block (projections, norms, FFNs, embeddings,
/// output head), deduplicated by everything that distinguishes them.
class BlockKernels {
public:
  BlockKernels(ModelOp model, OpBuilder &builder, SymbolTable &symbols)
      : model(model), builder(builder), symbols(symbols) {}

  struct Linear {
    int64_t in, out;
    bool bias = false;
    Activation activation = Activation::None;
    bool residual = false;
    float ropeTheta = 0;
    int64_t ropeHeads = 0, ropeHeadDim = 0;
    DictionaryAttr ropeScaling; // null: none
    QkNormAttr qkNorm;          // null: none; else on the RoPE heads
    int64_t ropeDim = 0;        // partial rotary: channels that rotate
    Activation inputGate = Activation::None;
    // gpt-oss's gated product (FfnOp's swiglu_alpha, swiglu_limit); 0: none.
    float gateAlpha = 0, gateLimit = 0;
    // The cache append (appendKvHeads > 0): K and V into cache slots.
    int64_t appendKvHeads = 0, appendHeadDim = 0;
    Type appendDtype;
    bool argmax = false; // an output head's greedy token
    float softcap = 0;   // an output head's logit cap; 0: none
    Type weights;        // null: the model's weight dtype
    // Weights of their own (a head's, #attn.weights): their group as given,
    // 0 for none; unset: kernelWeightGroup's for `weights`.
    std::optional<uint64_t> group;
    int64_t experts = 0; // a mixture's expert kernel: the stack's experts
  };

  /// `l` reading a projection's own weights (#attn.weights), where it has
  /// them.
  static Linear ownWeights(Linear l, WeightsAttr own) {
    if (own) {
      l.weights = own.getDtype();
      l.group = uint64_t(own.getGroup());
    }
    return l;
  }

  /// A router's weights: as the model's float weights, or bf16 where the
  /// model quantizes to i8 / i4. The router is a sliver of the bytes a
  /// token reads (count · d_model) and decides which experts run; int
  /// rounding of it would change the choice where two experts are close.
  Type routerWeights() {
    Type weights = model.getWeightDtype().value_or(builder.getF32Type());
    return isa<IntegerType>(weights) ? builder.getBF16Type() : weights;
  }

  /// Whether `op`'s output joins the residual stream through the norm after
  /// it (a residual_add norm) rather than in its own output projection.
  static bool addsResidualItself(Operation *op) {
    auto next = dyn_cast_or_null<NormOp>(op->getNextNode());
    return !(next && next.getResidualAdd());
  }

  FlatSymbolRefAttr linear(const Linear &l, Location loc) {
    std::string name =
        "linear_i" + std::to_string(l.in) + "_o" + std::to_string(l.out);
    if (l.bias)
      name += "_bias";
    if (l.activation != Activation::None)
      name += "_" + stringifyActivation(l.activation).str();
    if (l.inputGate != Activation::None)
      name += "_gate_" + stringifyActivation(l.inputGate).str();
    if (l.gateAlpha > 0)
      name += "_a" + nameNumber(l.gateAlpha);
    if (l.gateLimit > 0)
      name += "_l" + nameNumber(l.gateLimit);
    if (l.residual)
      name += "_res";
    if (l.ropeTheta > 0)
      name += "_rope" + nameNumber(l.ropeTheta) + "_h" +
              std::to_string(l.ropeHeads) + "_d" +
              std::to_string(l.ropeHeadDim);
    if (l.ropeTheta > 0 && l.ropeScaling) {
      // The rule's type and factor, and a digest of all of it: kernels are
      // deduplicated by name.
      std::string text;
      llvm::raw_string_ostream(text) << l.ropeScaling;
      uint32_t digest = 2166136261u; // FNV-1a: stable across runs
      for (char c : text)
        digest = (digest ^ uint8_t(c)) * 16777619u;
      char hex[16];
      std::snprintf(hex, sizeof hex, "%08x", digest);
      name += "_" + ropeScalingType(l.ropeScaling).str() + "x" +
              nameNumber(float(*ropeScalingNumber(l.ropeScaling, "factor"))) +
              "_" + hex;
    }
    if (l.ropeTheta > 0 && l.ropeDim > 0)
      name += "_rd" + std::to_string(l.ropeDim);
    if (l.ropeTheta > 0 && l.qkNorm)
      name += (l.qkNorm.getScope() == QkNormScope::Projection ? "_qknormproj"
                                                              : "_qknorm") +
              std::string("_eps") + nameNumber(l.qkNorm.getEpsValue());
    if (l.appendKvHeads > 0) {
      std::string dtype;
      llvm::raw_string_ostream(dtype) << l.appendDtype;
      name += "_append_kv" + std::to_string(l.appendKvHeads) + "_d" +
              std::to_string(l.appendHeadDim) + "_" + dtype;
    }
    if (l.softcap > 0)
      name += "_cap" + nameNumber(l.softcap);
    if (l.argmax)
      name += "_argmax";
    if (l.experts > 0)
      name += "_x" + std::to_string(l.experts);
    // Every linear kernel of a model reads the model's weight dtype but a
    // router (routerWeights), experts of their own type and a head of its
    // own (OutputHeadOp's weight_dtype).
    Type weights = l.weights
                       ? l.weights
                       : model.getWeightDtype().value_or(builder.getF32Type());
    std::optional<uint64_t> group;
    if (l.group) {
      if (*l.group)
        group = l.group;
    } else if (const int64_t g = ::attn::kernelWeightGroup(
            toDType(weights),
            toDType(model.getWeightDtype().value_or(builder.getF32Type())),
            int64_t(model.getWeightGroup().value_or(0))))
      group = uint64_t(g);
    if (!weights.isF32())
      name += std::string("_w") + ::attn::dtypeName(toDType(weights));
    if (group)
      name += "_g" + std::to_string(*group);
    // A checkpoint's own int4 format: zero points per group.
    const bool zeros = group && weights.isSignlessInteger(4) &&
                       model.getWeightFormat().has_value();
    if (zeros)
      name += "z";
    // GGUF's Q4_1 and Q4_K: a minimum per group instead.
    const bool mins = group && weights.isSignlessInteger(4) &&
                      model.getWeightMins();
    if (mins)
      name += "m";
    auto positive = [&](int64_t value) {
      return value > 0 ? builder.getI64IntegerAttr(value) : IntegerAttr();
    };
    return dedupe(name, [&]() -> Operation * {
      return builder.create<LinearKernelOp>(
          loc, StringRef(name), uint64_t(l.in), uint64_t(l.out), l.bias,
          l.activation, l.residual,
          l.ropeTheta > 0 ? builder.getF32FloatAttr(l.ropeTheta) : FloatAttr(),
          l.ropeTheta > 0 ? builder.getI64IntegerAttr(l.ropeHeads)
                          : IntegerAttr(),
          l.ropeTheta > 0 ? builder.getI64IntegerAttr(l.ropeHeadDim)
                          : IntegerAttr(),
          l.inputGate != Activation::None
              ? ActivationAttr::get(builder.getContext(), l.inputGate)
              : ActivationAttr(),
          positive(l.appendKvHeads), positive(l.appendHeadDim),
          l.appendKvHeads > 0 ? TypeAttr::get(l.appendDtype) : TypeAttr(),
          l.argmax, l.ropeTheta > 0 ? l.ropeScaling : DictionaryAttr(),
          weights.isF32() ? TypeAttr() : TypeAttr::get(weights),
          group ? builder.getI64IntegerAttr(int64_t(*group)) : IntegerAttr(),
          zeros, l.ropeTheta > 0 ? l.qkNorm : QkNormAttr(),
          l.softcap > 0 ? builder.getF32FloatAttr(l.softcap) : FloatAttr(),
          l.ropeTheta > 0 ? positive(l.ropeDim) : IntegerAttr(),
          positive(l.experts),
          l.gateAlpha > 0 ? builder.getF32FloatAttr(l.gateAlpha) : FloatAttr(),
          l.gateLimit > 0 ? builder.getF32FloatAttr(l.gateLimit)
                          : FloatAttr(),
          mins);
    });
  }

  /// A norm kernel over rows of `dim` features (with the residual added for
  /// a residual_add norm).
  FlatSymbolRefAttr norm(NormKind kind, int64_t dim, float eps, bool residual,
                         Location loc) {
    std::string name =
        stringifyNormKind(kind).str() + "_d" + std::to_string(dim);
    if (residual)
      name += "_res";
    return dedupe(name + "|" + std::to_string(eps), [&]() -> Operation * {
      return builder.create<NormKernelOp>(loc, StringRef(name), kind,
                                          uint64_t(dim), llvm::APFloat(eps),
                                          residual);
    });
  }

  /// A latent layer's kernels (#attn.latent): the query (through its
  /// low-rank path with a query_rank), the shared rotated key and the
  /// latent, the latent's norm, W_ukᵀ and W_uv per head as expert kernels
  /// (a head per expert), and the output projection of the heads' values.
  void specializeLatent(AttentionLayerOp layer, LatentAttr latent, float theta,
                        DictionaryAttr scaling) {
    const int64_t dModel = model.getDModel(), hq = layer.getNumQueryHeads();
    const int64_t rope = latent.getRopeDim(), nope = latent.getNopeDim(),
                  rank = latent.getRank(), queryRank = latent.getQueryRank();
    const float eps = latent.getEpsValue();
    Location loc = layer.getLoc();
    // Each head's query channels as the runtime lays out their rows:
    // [rotated (rope_dim), the rest (nope_dim)]; partial rotary turns the
    // first rope_dim of every head.
    Linear query{queryRank ? queryRank : dModel, hq * (rope + nope)};
    query.ropeTheta = theta;
    query.ropeHeads = hq;
    query.ropeHeadDim = rope + nope;
    query.ropeDim = rope;
    query.ropeScaling = scaling;
    if (queryRank) {
      layer.setQueryDownKernelAttr(linear({dModel, queryRank}, loc));
      layer.setQueryNormKernelAttr(
          norm(NormKind::RmsNorm, queryRank, eps, false, loc));
    }
    layer.setQueryKernelAttr(linear(query, loc));
    // [the shared key (rope_dim, rotated), the latent (rank)].
    Linear keyLatent{dModel, rope + rank};
    keyLatent.ropeTheta = theta;
    keyLatent.ropeHeads = 1;
    keyLatent.ropeHeadDim = rope;
    keyLatent.ropeScaling = scaling;
    layer.setKeyValueKernelAttr(linear(keyLatent, loc));
    layer.setLatentNormKernelAttr(norm(NormKind::RmsNorm, rank, eps, false, loc));
    Linear absorb{nope, rank}, unabsorb{rank, latent.getValueDim()};
    absorb.experts = unabsorb.experts = hq;
    layer.setAbsorbKernelAttr(linear(absorb, loc));
    layer.setUnabsorbKernelAttr(linear(unabsorb, loc));
    layer.setOutputKernelAttr(
        linear({hq * latent.getValueDim(), dModel, false, Activation::None,
                addsResidualItself(layer)},
               loc));
  }

  LogicalResult specialize(Operation *op) {
    const int64_t dModel = model.getDModel();
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      const int64_t hq = layer.getNumQueryHeads(), hkv = layer.getNumKvHeads(),
                    d = layer.getHeadDim();
      const bool bias = layer.getProjectionBias();
      const float theta =
          layer.getRopeTheta() ? layer.getRopeTheta()->convertToFloat() : 0;
      // RoPE's scaling rule, unless it is the identity.
      DictionaryAttr scaling = layer.getRopeScalingAttr();
      if (scaling && ropeScalingType(scaling) == "default")
        scaling = {};
      auto rotating = [&](Linear l) {
        l.ropeScaling = scaling;
        l.qkNorm = layer.getQkNormAttr();
        l.ropeDim = int64_t(layer.getRopeDim().value_or(0));
        return l;
      };
      if (LatentAttr latent = layer.getLatentAttr()) {
        specializeLatent(layer, latent, theta, scaling);
        return success();
      }
      Location loc = layer.getLoc();
      // The K/V-producing projection, with the cache append when fused.
      auto withAppend = [&](Linear l) {
        if (layer.getFusedCacheAppend()) {
          l.appendKvHeads = hkv;
          l.appendHeadDim = d;
          l.appendDtype = layer.getCacheAttr().getDtype();
        }
        return l;
      };
      const WeightsAttr queryWeights = layer.getQueryWeightsAttr(),
                        keyWeights = layer.getKeyWeightsAttr(),
                        valueWeights = layer.getValueWeightsAttr();
      if (layer.getFusedProjections()) {
        if (layer.getKind() != LayerKind::Self)
          return layer.emitOpError()
                 << "only self-attention layers fuse Q with K and V";
        // The verifier saw Q, K and V share one type.
        layer.setQueryKernelAttr(linear(
            ownWeights(rotating(withAppend({dModel, (hq + 2 * hkv) * d, bias,
                                            Activation::None, false, theta,
                                            theta > 0 ? hq + hkv : 0,
                                            theta > 0 ? d : 0})),
                       queryWeights),
            loc));
      } else {
        layer.setQueryKernelAttr(linear(
            ownWeights(rotating({dModel, hq * d, bias, Activation::None, false,
                                 theta, theta > 0 ? hq : 0, theta > 0 ? d : 0}),
                       queryWeights),
            loc));
        // K with V, or K alone beside a V of another weight type.
        const bool splitValue = model.projectionWeights(keyWeights) !=
                                model.projectionWeights(valueWeights);
        const int64_t keyValueWidth = (splitValue ? 1 : 2) * hkv * d;
        layer.setKeyValueKernelAttr(linear(
            ownWeights(rotating(withAppend({dModel, keyValueWidth, bias,
                                            Activation::None, false, theta,
                                            theta > 0 ? hkv : 0,
                                            theta > 0 ? d : 0})),
                       keyWeights),
            loc));
        if (splitValue)
          layer.setValueKernelAttr(linear(
              ownWeights({dModel, hkv * d, bias}, valueWeights), loc));
      }
      layer.setOutputKernelAttr(linear(
          ownWeights({hq * d, dModel, layer.hasOutputBias(), Activation::None,
                      addsResidualItself(layer)},
                     layer.getOutputWeightsAttr()),
          loc));
      return success();
    }
    if (auto ffn = dyn_cast<FfnOp>(op)) {
      const int64_t size = ffn.getIntermediateSize();
      // Experts: one expert's kernels; the runtime sums the chosen experts'
      // outputs, weighted, into the stream (no residual in the kernel).
      const bool residual = !ffn.getExperts() && addsResidualItself(ffn);
      int64_t experts = 0;
      // A gated down kernel's product act(gate)·up, as the FFN says.
      auto gate = [&](Linear &down) {
        down.inputGate = ffn.getActivation();
        if (std::optional<APFloat> alpha = ffn.getSwigluAlpha())
          down.gateAlpha = alpha->convertToFloat();
        if (std::optional<APFloat> limit = ffn.getSwigluLimit())
          down.gateLimit = limit->convertToFloat();
      };
      if (ExpertsAttr attr = ffn.getExpertsAttr()) {
        experts = attr.getCount();
        Linear router{dModel, experts, ffn.getBias()}; // gpt-oss's bias
        router.weights = routerWeights();
        ffn.setRouterKernelAttr(linear(router, ffn.getLoc()));
        // Shared experts: a dense FFN of the same kind every token runs; the
        // runtime adds its output (gated or not) to the stream.
        if (const int64_t shared = attr.getShared()) {
          Linear up{dModel, (ffn.getGated() ? 2 : 1) * shared, ffn.getBias(),
                    ffn.getGated() ? Activation::None : ffn.getActivation()};
          Linear down{shared, dModel, ffn.getBias()};
          if (ffn.getGated())
            gate(down);
          ffn.setSharedUpKernelAttr(linear(up, ffn.getLoc()));
          ffn.setSharedDownKernelAttr(linear(down, ffn.getLoc()));
        }
      }
      // The experts' own weight type (a checkpoint's MXFP4), else the
      // model's.
      const Type expertWeights = ffn.getExpertWeightDtype().value_or(Type());
      // A dense FFN's projections' own types (#attn.weights), if any.
      const WeightsAttr upWeights = ffn.getUpWeightsAttr(),
                        downWeights = ffn.getDownWeightsAttr();
      if (ffn.getGated()) { // up: [gate | up]; down reads act(gate)·up
        Linear up{dModel, 2 * size, ffn.getBias()};
        up.experts = experts;
        up.weights = expertWeights;
        ffn.setUpKernelAttr(linear(ownWeights(up, upWeights), ffn.getLoc()));
        Linear down{size, dModel, ffn.getBias(), Activation::None, residual};
        gate(down);
        down.experts = experts;
        down.weights = expertWeights;
        ffn.setDownKernelAttr(
            linear(ownWeights(down, downWeights), ffn.getLoc()));
        return success();
      }
      Linear up{dModel, size, ffn.getBias(), ffn.getActivation()};
      up.experts = experts;
      up.weights = expertWeights;
      ffn.setUpKernelAttr(linear(ownWeights(up, upWeights), ffn.getLoc()));
      Linear down{size, dModel, ffn.getBias(), Activation::None, residual};
      down.experts = experts;
      down.weights = expertWeights;
      ffn.setDownKernelAttr(linear(ownWeights(down, downWeights), ffn.getLoc()));
      return success();
    }
    if (auto head = dyn_cast<OutputHeadOp>(op)) {
      // With the greedy token fused in: the runtime's greedy decoding reads
      // one int per sequence instead of scanning the logits.
      Linear l{dModel, int64_t(head.getVocabSize()), head.getBias()};
      l.argmax = true;
      l.weights = head.getWeightDtype().value_or(Type());
      if (std::optional<uint64_t> group = head.getWeightGroup())
        l.group = group;
      if (std::optional<APFloat> cap = head.getSoftcap())
        l.softcap = cap->convertToFloat();
      head.setKernelAttr(linear(l, head.getLoc()));
      return success();
    }
    if (auto normOp = dyn_cast<NormOp>(op)) {
      normOp.setKernelAttr(norm(normOp.getKind(), dModel,
                                normOp.getEps().convertToFloat(),
                                normOp.getResidualAdd(), normOp.getLoc()));
      return success();
    }
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      PositionKind positions = embedding.getPositions();
      std::string name =
          "embedding_v" + std::to_string(embedding.getVocabSize()) + "_d" +
          std::to_string(dModel) + "_" + stringifyPositionKind(positions).str();
      if (positions == PositionKind::Learned)
        name += std::to_string(embedding.getMaxPositions());
      std::optional<int64_t> offset = embedding.getPositionOffset();
      if (offset && *offset)
        name += "_offset" + std::to_string(*offset);
      if (std::optional<APFloat> scale = embedding.getScale())
        name += "_scale" + nameNumber(scale->convertToFloat());
      embedding.setKernelAttr(dedupe(name, [&]() -> Operation * {
        return builder.create<EmbeddingKernelOp>(
            embedding.getLoc(), StringRef(name),
            uint64_t(embedding.getVocabSize()), uint64_t(dModel), positions,
            uint64_t(embedding.getMaxPositions()), embedding.getScaleAttr(),
            embedding.getPositionOffsetAttr());
      }));
      return success();
    }
    return success();
  }

private:
  /// The kernel known by `key`, or a new one from `create` (inserted into
  /// the symbol table, which renames it on a clash).
  FlatSymbolRefAttr dedupe(const std::string &key,
                           llvm::function_ref<Operation *()> create) {
    auto [it, inserted] = kernels.try_emplace(key, nullptr);
    if (inserted) {
      it->second = create();
      symbols.insert(it->second);
    }
    return FlatSymbolRefAttr::get(it->second);
  }

  ModelOp model;
  OpBuilder &builder;
  SymbolTable &symbols;
  llvm::StringMap<Operation *> kernels;
};

struct SpecializeKernelsPass
    : impl::SpecializeKernelsBase<SpecializeKernelsPass> {
  void runOnOperation() override {
    ModelOp model = getOperation();
    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(&model.getBody().front());
    SymbolTable symbols(model);
    std::vector<std::pair<KernelSignature, KernelOp>> kernels;

    auto kernelFor = [&](const KernelSignature &signature,
                         Location loc) -> KernelOp {
      for (auto &[known, kernel] : kernels)
        if (known == signature)
          return kernel;
      auto kernel = builder.create<KernelOp>(
          loc, StringRef(signature.name()), signature.family,
          uint64_t(signature.queryHeads), uint64_t(signature.kvHeads),
          uint64_t(signature.headDim), signature.causal,
          llvm::APFloat(signature.scale),
          signature.window ? builder.getI64IntegerAttr(signature.window)
                           : IntegerAttr(),
          signature.softcap > 0 ? builder.getF32FloatAttr(signature.softcap)
                                : FloatAttr(),
          signature.alibi, signature.keyPadding,
          signature.pageSize ? builder.getI64IntegerAttr(signature.pageSize)
                             : IntegerAttr(),
          // Absent means f32, the common case.
          signature.cacheType && !signature.cacheType.isF32()
              ? TypeAttr::get(signature.cacheType)
              : TypeAttr(),
          signature.bf16Compute ? TypeAttr::get(builder.getBF16Type())
                                : TypeAttr(),
          ScheduleAttr(), signature.sinks);
      symbols.insert(kernel); // renames on a clash (same name, other scale)
      kernels.emplace_back(signature, kernel);
      return kernel;
    };

    BlockKernels blockKernels(model, builder, symbols);
    if (model.hasBlocks())
      for (Operation &op : llvm::make_early_inc_range(model.getBody().front()))
        if (failed(blockKernels.specialize(&op)))
          return signalPassFailure();

    for (AttentionLayerOp layer : model.getLayers()) {
      if (!layer.getScale()) {
        layer.emitOpError() << "has no scale: run --attn-materialize-defaults "
                               "first";
        return signalPassFailure();
      }
      KernelSignature prefill{
          KernelFamily::Prefill,
          int64_t(layer.getNumQueryHeads()),
          int64_t(layer.getNumKvHeads()),
          int64_t(layer.getHeadDim()),
          layer.getMask() != MaskKind::None,
          int64_t(layer.getWindow().value_or(0)),
          layer.getScale()->convertToFloat(),
          layer.getSoftcap() ? layer.getSoftcap()->convertToFloat() : 0.0f,
          layer.getAlibi(),
          layer.getKeyPadding(),
          0,
          Type(),
          layer.getComputeDtype() && layer.getComputeDtype()->isBF16(),
          layer.getSinks()};
      layer.setPrefillKernelAttr(
          FlatSymbolRefAttr::get(kernelFor(prefill, layer.getLoc())));
      if (KvCacheAttr cache = layer.getCacheAttr()) {
        KernelSignature decode = prefill;
        decode.family = KernelFamily::Decode;
        decode.keyPadding = false;
        decode.bf16Compute = false; // decode is bound by reading the cache
        decode.pageSize = cache.getPageSize();
        decode.cacheType = cache.getDtype();
        layer.setDecodeKernelAttr(
            FlatSymbolRefAttr::get(kernelFor(decode, layer.getLoc())));
      }
    }
  }
};
} // namespace
} // namespace mlir::attn
