//===- Report.cpp - what attnc decided, for people -------------------------===//

#include "Report.h"

#include "DTypes.h"
#include "ModelFacts.h"

#include "attn/AttnOps.h"
#include "attn/Support.h"
#include "attn/runtime/DType.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <sstream>
#include <set>

using namespace mlir;
using namespace mlir::attn;

namespace attnc {
namespace {
/// "1.23 GFLOP" style.
std::string formatFlops(double flops) {
  const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"};
  int unit = 0;
  while (flops >= 1000 && unit < 4)
    flops /= 1000, unit++;
  return llvm::formatv(unit ? "{0:F2} {1}" : "{0:F0} {1}", flops, units[unit])
      .str();
}

/// Who uses each kernel ("layer3 (QKV)", "block0_ffn (up)"), in op order.
llvm::StringMap<std::vector<std::string>> kernelUsers(ModelOp model) {
  llvm::StringMap<std::vector<std::string>> users;
  auto use = [&](std::optional<StringRef> kernel, StringRef op,
                 StringRef role) {
    if (kernel)
      users[*kernel].push_back(
          (op + (role.empty() ? "" : " (" + role + ")")).str());
  };
  for (Operation &op : model.getBody().front()) {
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      StringRef name = layer.getSymName();
      use(layer.getPrefillKernel(), name, "prefill");
      use(layer.getDecodeKernel(), name, "decode");
      StringRef append = layer.getFusedCacheAppend() ? "+append" : "";
      use(layer.getQueryKernel(), name,
          layer.getFusedProjections() ? ("QKV" + append).str() : "Q");
      use(layer.getKeyValueKernel(), name,
          layer.getLatent()       ? "key+latent"
          : layer.getValueKernel() ? "K"
                                   : ("KV" + append).str());
      use(layer.getValueKernel(), name, "V");
      use(layer.getOutputKernel(), name, "out");
      use(layer.getQueryDownKernel(), name, "Q down");
      use(layer.getQueryNormKernel(), name, "Q norm");
      use(layer.getLatentNormKernel(), name, "latent norm");
      use(layer.getAbsorbKernel(), name, "absorb W_uk");
      use(layer.getUnabsorbKernel(), name, "unabsorb W_uv");
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      use(embedding.getKernel(), embedding.getSymName(), "");
    } else if (auto norm = dyn_cast<NormOp>(op)) {
      use(norm.getKernel(), norm.getSymName(), "");
    } else if (auto ffn = dyn_cast<FfnOp>(op)) {
      const bool experts = ffn.getExperts().has_value();
      use(ffn.getRouterKernel(), ffn.getSymName(), "router");
      use(ffn.getUpKernel(), ffn.getSymName(), experts ? "expert up" : "up");
      use(ffn.getDownKernel(), ffn.getSymName(),
          experts ? "expert down" : "down");
      use(ffn.getSharedUpKernel(), ffn.getSymName(), "shared up");
      use(ffn.getSharedDownKernel(), ffn.getSymName(), "shared down");
    } else if (auto head = dyn_cast<OutputHeadOp>(op)) {
      use(head.getKernel(), head.getSymName(), "");
    }
  }
  return users;
}

/// "a, b, c" or, for many, "a, b … z (32 uses)".
std::string listUsers(const std::vector<std::string> &users) {
  std::string text;
  size_t shown = users.size() <= 6 ? users.size() : 2;
  for (size_t i = 0; i < shown; i++)
    text += (i ? ", " : "") + users[i];
  if (shown < users.size())
    text +=
        " … " + users.back() + " (" + std::to_string(users.size()) + " uses)";
  return text;
}

/// What a kernel computes, in a few words.
std::string describeKernel(Operation &op) {
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    std::string text = llvm::formatv(
        "{0} heads {1}/{2} d {3}", stringifyKernelFamily(kernel.getFamily()),
        kernel.getNumQueryHeads(), kernel.getNumKvHeads(), kernel.getHeadDim());
    if (kernel.getCausal())
      text += kernel.getWindow()
                  ? " window " + std::to_string(*kernel.getWindow())
                  : std::string(" causal");
    if (kernel.getSoftcap())
      text += " softcap";
    if (kernel.getAlibi())
      text += " alibi";
    if (kernel.getSinks())
      text += " sinks";
    if (kernel.getKeyPadding())
      text += " key_padding";
    if (kernel.getComputeDtype())
      text += " " + typeName(*kernel.getComputeDtype()) + " compute";
    if (kernel.getPageSize())
      text += " page " + std::to_string(*kernel.getPageSize());
    if (kernel.getKvDtype())
      text += " " + typeName(*kernel.getKvDtype());
    return text;
  }
  if (auto linear = dyn_cast<LinearKernelOp>(op)) {
    std::string text = llvm::formatv(
        "linear {0} -> {1}", linear.getInFeatures(), linear.getOutFeatures());
    if (std::optional<Type> weights = linear.getWeightDtype())
      text += " " + typeName(*weights) + " weights";
    if (std::optional<uint64_t> group = linear.getWeightGroup())
      text += " (groups of " + std::to_string(*group) +
              (linear.getWeightZeros() ? ", zero points" : "") +
              (linear.getWeightMins() ? ", minimums" : "") + ")";
    if (linear.getInputGate())
      text +=
          " gated(" + stringifyActivation(*linear.getInputGate()).str() + ")";
    // gpt-oss's product: g·sigmoid(alpha·g)·(up + 1), clamped.
    auto number = [](const APFloat &value) {
      std::ostringstream text;
      text << value.convertToFloat();
      return text.str();
    };
    if (std::optional<APFloat> alpha = linear.getGateAlpha())
      text += " sigmoid gain " + number(*alpha);
    if (std::optional<APFloat> limit = linear.getGateLimit())
      text += " clamped to " + number(*limit) + ", (up + 1)";
    if (linear.getBias())
      text += " +bias";
    if (linear.getActivation() != Activation::None)
      text += " " + stringifyActivation(linear.getActivation()).str();
    if (QkNormAttr norm = linear.getQkNormAttr())
      text += norm.getScope() == QkNormScope::Projection ? " qk-norm(projection)"
                                                         : " qk-norm";
    if (linear.getRopeTheta())
      text += " rope";
    if (linear.getResidual())
      text += " +residual";
    if (std::optional<Type> dtype = linear.getAppendDtype())
      text += " +cache append (" + typeName(*dtype) + ")";
    if (linear.getArgmax())
      text += " +argmax";
    return text;
  }
  if (auto norm = dyn_cast<NormKernelOp>(op))
    return llvm::formatv("{0} {1}", stringifyNormKind(norm.getKind()),
                         norm.getDim());
  if (auto embedding = dyn_cast<EmbeddingKernelOp>(op))
    return llvm::formatv("embedding {0} x {1} {2}", embedding.getVocabSize(),
                         embedding.getDim(),
                         stringifyPositionKind(embedding.getPositions()));
  return "";
}

/// Matrix-product FLOPs per token of one stack as
///   perToken + perContext·(context length) + perSource·(source length).
struct TokenFlops {
  double perToken = 0, perContext = 0, perSource = 0;
  bool windowed = false; // some layer counted at its full window
};

/// The window a self layer's cache keeps (its pages released behind it), or
/// 0 where it keeps every token.
int64_t keptWindow(AttentionLayerOp layer) {
  return layer.getKind() == LayerKind::Self ? layer.getWindow().value_or(0)
                                            : 0;
}

int64_t linearFlops(ModelOp model, std::optional<StringRef> kernel) {
  if (!kernel)
    return 0;
  auto linear = dyn_cast_or_null<LinearKernelOp>(model.lookupSymbol(*kernel));
  return linear ? 2 * linear.getInFeatures() * linear.getOutFeatures() : 0;
}
} // namespace

std::string renderReport(ModuleOp module) {
  ModelOp model = theModel(module);
  std::string text;
  llvm::raw_string_ostream os(text);
  size_t numLayers = 0, numKernels = 0, numOps = 0;
  for (auto layer : model.getLayers())
    (void)layer, numLayers++;
  for (Operation &op : model.getBody().front())
    (isa<KernelOp, LinearKernelOp, NormKernelOp, EmbeddingKernelOp>(op)
         ? numKernels
         : numOps)++;
  os << "model " << model.getSymName() << ": " << model.getKind()
     << ", d_model " << model.getDModel() << ", max_batch "
     << model.getMaxBatch() << ", " << numLayers << " attention layers, "
     << numOps << " ops\n";
  os << "layers:\n";
  for (AttentionLayerOp layer : model.getLayers()) {
    os << llvm::formatv("  {0,-8} {1,-5} heads {2}/{3} d {4} mask {5}",
                        layer.getSymName(), stringifyLayerKind(layer.getKind()),
                        layer.getNumQueryHeads(), layer.getNumKvHeads(),
                        layer.getHeadDim(), stringifyMaskKind(layer.getMask()));
    if (LatentAttr latent = layer.getLatentAttr())
      os << llvm::formatv(" | latent rank {0} + rope {1} (values = keys), "
                          "nope {2}, value {3}{4}",
                          latent.getRank(), latent.getRopeDim(),
                          latent.getNopeDim(), latent.getValueDim(),
                          latent.getQueryRank()
                              ? ", query rank " +
                                    std::to_string(latent.getQueryRank())
                              : std::string());
    if (KvCacheAttr cache = layer.getCacheAttr())
      os << llvm::formatv(" | cache {0} {1} page {2} max {3}{4}: {5}/seq",
                          stringifyCacheLayout(cache.getLayout()),
                          typeName(cache.getDtype()), cache.getPageSize(),
                          cache.getMaxLength(),
                          keptWindow(layer)
                              ? " window " + std::to_string(keptWindow(layer))
                              : std::string(),
                          formatBytes(intAttr(layer, "kv_bytes_per_sequence")));
    os << " | " << layer.getPrefillKernel()->str();
    if (layer.getDecodeKernel())
      os << ", " << layer.getDecodeKernel()->str();
    os << "\n";
  }

  os << "kernels: " << numKernels << " for " << numOps << " ops\n";
  llvm::StringMap<std::vector<std::string>> users = kernelUsers(model);
  for (Operation &op : model.getBody().front()) {
    auto symbol = op.getAttrOfType<StringAttr>("sym_name");
    std::string what = describeKernel(op);
    if (!symbol || what.empty())
      continue;
    os << "  " << symbol.getValue() << ": " << what;
    if (auto kernel = dyn_cast<KernelOp>(op))
      if (std::optional<ScheduleAttr> s = kernel.getSchedule()) {
        if (kernel.getFamily() == KernelFamily::Prefill)
          os << llvm::formatv(" | schedule query_block={0} kv_chunk={1} "
                              "qk_tile_keys={2} pv_tile_rows={3}",
                              s->getQueryBlock(), s->getKvChunk(),
                              s->getQkTileKeys(), s->getPvTileRows());
        else
          os << " | schedule split_keys=" << s->getSplitKeys();
        os << " vector_width=" << s->getVectorWidth() << " (" << s->getSource()
           << ")";
      }
    os << "\n      used by " << listUsers(users[symbol.getValue()]) << "\n";
  }

  // FLOPs of the matrix products per token, by stack. A decoder token pays
  // its projections, FFN and head, 4·Hq·D per cached token it attends to
  // and per source token it cross-attends to; an encoder token likewise
  // over the source. Cross-attention K/V are computed once per source token.
  llvm::StringMap<TokenFlops> stacks;
  double crossKeyValuePerSource = 0;
  int64_t maxContext = 0, maxSource = 0;
  for (Operation &op : model.getBody().front()) {
    auto stackAttr = op.getAttrOfType<StringAttr>("stack");
    StringRef stack = stackAttr                      ? stackAttr.getValue()
                      : model.getKind() == "encoder" ? "encoder"
                                                     : "decoder";
    TokenFlops &f = stacks[stack];
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      double attention =
          4.0 * double(layer.getNumQueryHeads()) * double(layer.getHeadDim());
      f.perToken += linearFlops(model, layer.getQueryKernel()) +
                    linearFlops(model, layer.getOutputKernel());
      if (layer.getLatent()) // its key and latent, and per head W_uk, W_uv
        f.perToken += linearFlops(model, layer.getQueryDownKernel()) +
                      linearFlops(model, layer.getKeyValueKernel()) +
                      double(layer.getNumQueryHeads()) *
                          (linearFlops(model, layer.getAbsorbKernel()) +
                           linearFlops(model, layer.getUnabsorbKernel()));
      // An unfused self layer's K and V (with V apart where it has a type
      // of its own).
      if (!layer.getLatent() && layer.getKind() != LayerKind::Cross)
        f.perToken += linearFlops(model, layer.getKeyValueKernel()) +
                      linearFlops(model, layer.getValueKernel());
      if (layer.getKind() == LayerKind::Cross) {
        f.perSource += attention;
        crossKeyValuePerSource += linearFlops(model, layer.getKeyValueKernel());
      } else if (layer.getWindow()) {
        f.perToken += attention * double(*layer.getWindow());
        f.windowed = true;
      } else if (stack == "encoder") {
        f.perSource += attention;
      } else {
        f.perContext += attention;
      }
      if (KvCacheAttr cache = layer.getCacheAttr();
          cache && layer.getKind() != LayerKind::Cross)
        maxContext = std::max(maxContext, cache.getMaxLength());
    } else if (auto ffn = dyn_cast<FfnOp>(op)) {
      const int64_t experts =
          ffn.getExperts() ? ffn.getExpertsAttr().getPerToken() : 1;
      f.perToken += experts * (linearFlops(model, ffn.getUpKernel()) +
                               linearFlops(model, ffn.getDownKernel())) +
                    linearFlops(model, ffn.getRouterKernel()) +
                    linearFlops(model, ffn.getSharedUpKernel()) +
                    linearFlops(model, ffn.getSharedDownKernel());
    } else if (auto head = dyn_cast<OutputHeadOp>(op)) {
      f.perToken += linearFlops(model, head.getKernel());
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      if (stack == "encoder")
        maxSource = embedding.getMaxPositions();
    }
  }
  os << "FLOPs per token (matrix products; norms, embeddings and softmax "
        "left out):\n";
  for (StringRef stack : {"encoder", "decoder"}) {
    auto it = stacks.find(stack);
    if (it == stacks.end() ||
        (it->second.perToken == 0 && it->second.perContext == 0 &&
         it->second.perSource == 0))
      continue;
    const TokenFlops &f = it->second;
    os << "  " << stack << ": " << formatFlops(f.perToken);
    if (f.perContext)
      os << " + " << formatFlops(f.perContext) << " x context length";
    if (f.perSource)
      os << " + " << formatFlops(f.perSource) << " x source length";
    double atMax = f.perToken + f.perContext * double(maxContext) +
                   f.perSource * double(maxSource);
    os << " = " << formatFlops(atMax) << " at";
    if (f.perContext)
      os << " context " << maxContext;
    if (f.perSource)
      os << (f.perContext ? "," : "") << " source " << maxSource;
    if (!f.perContext && !f.perSource)
      os << " any length";
    if (f.windowed)
      os << " (sliding-window layers counted at their full window)";
    os << "\n";
  }
  if (crossKeyValuePerSource)
    os << "  cross-attention K/V: " << formatFlops(crossKeyValuePerSource)
       << " per source token, once per input\n";

  auto bytes = [&](StringRef name, StringRef per) {
    int64_t value = intAttr(model, name);
    return formatBytes(value) + per.str() + " (" + std::to_string(value) +
           " B)";
  };
  // The output head's weights where they are its own (a checkpoint's
  // float head beside quantized blocks, or --head-dtype's).
  std::string headWeights;
  for (auto head : model.getBody().front().getOps<OutputHeadOp>())
    if (std::optional<Type> type = head.getWeightDtype())
      headWeights =
          ", the output head " + typeName(*type) +
          (head.getWeightGroup()
               ? " in groups of " + std::to_string(*head.getWeightGroup())
               : std::string()) +
          " (" + formatBytes(weightBytes(model, head.getKernel())) + ")";
  // Projections stored in a type of their own (a GGUF file's mixed
  // blocks), counted per type.
  std::map<std::string, int> ownTypes;
  auto countOwn = [&](WeightsAttr own) {
    if (own)
      ownTypes[typeName(own.getDtype()) +
               (own.getGroup() ? " in groups of " + std::to_string(own.getGroup())
                               : std::string())]++;
  };
  for (Operation &op : model.getBody().front()) {
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      for (WeightsAttr own :
           {layer.getQueryWeightsAttr(), layer.getKeyWeightsAttr(),
            layer.getValueWeightsAttr(), layer.getOutputWeightsAttr()})
        countOwn(own);
    } else if (auto ffn = dyn_cast<FfnOp>(op)) {
      countOwn(ffn.getUpWeightsAttr());
      countOwn(ffn.getDownWeightsAttr());
    }
  }
  for (const auto &[type, count] : ownTypes)
    headWeights += ", " + std::to_string(count) + " projection" +
                   (count > 1 ? "s " : " ") + type;
  if (int64_t perToken = weightBytesPerToken(model))
    os << "weights: " << typeName(weightDtype(model))
       << (model.getWeightGroup()
               ? " in groups of " + std::to_string(*model.getWeightGroup())
               : std::string())
       << (model.getWeightFormat()
               ? " with zero points, as the " + model.getWeightFormat()->str() +
                     " checkpoint holds them"
               : std::string())
       << headWeights << ", " << formatBytes(perToken)
       << "/token read by a decoded token (" << perToken << " B)\n";
  // A mixture of experts: what the experts hold against what a token reads.
  int64_t sparse = 0, dense = 0, expertBytes = 0, activeBytes = 0,
          sharedBytes = 0;
  std::set<std::pair<int64_t, int64_t>> shapes; // (count, per token)
  for (FfnOp ffn : model.getBody().front().getOps<FfnOp>()) {
    ExpertsAttr experts = ffn.getExpertsAttr();
    if (!experts) {
      dense++;
      continue;
    }
    sparse++;
    shapes.insert({experts.getCount(), experts.getPerToken()});
    const int64_t one = weightBytes(model, ffn.getUpKernel()) +
                        weightBytes(model, ffn.getDownKernel());
    expertBytes += experts.getCount() * one;
    activeBytes += experts.getPerToken() * one;
    sharedBytes += weightBytes(model, ffn.getSharedUpKernel()) +
                   weightBytes(model, ffn.getSharedDownKernel());
  }
  if (sparse) {
    os << "experts: " << sparse << " FFNs of";
    const char *separator = " ";
    for (auto [count, perToken] : shapes) {
      os << separator << count << " experts (" << perToken << " per token)";
      separator = ", ";
    }
    if (dense)
      os << " and " << dense << " dense";
    os << "; expert weights " << formatBytes(expertBytes) << " ("
       << expertBytes << " B), a token reads " << formatBytes(activeBytes)
       << " of them (" << activeBytes << " B)";
    if (sharedBytes)
      os << " and every token the shared experts' " << formatBytes(sharedBytes)
         << " (" << sharedBytes << " B)";
    os << "\n";
  }
  os << "KV cache: " << bytes("kv_bytes_per_token", "/token") << ", "
     << bytes("kv_bytes_per_sequence", "/sequence at max length") << ", "
     << bytes("kv_bytes",
              " for max_batch " + std::to_string(model.getMaxBatch()))
     << "\n";
  // Latent layers: the formula of their rows beside what their heads' keys
  // and values would take uncompressed.
  int latentLayers = 0;
  for (AttentionLayerOp layer : model.getLayers()) {
    LatentAttr latent = layer.getLatentAttr();
    KvCacheAttr cache = layer.getCacheAttr();
    if (!latent || !cache)
      continue;
    if (latentLayers++)
      continue; // stated once, for the first (the verifier's one geometry)
    const ::attn::DType dtype = toDType(cache.getDtype());
    const int64_t heads = layer.getNumQueryHeads(),
                  element = int64_t(::attn::byteSize(dtype)),
                  scale = int64_t(::attn::scaleBytes(dtype));
    os << llvm::formatv(
        "  latent rows: (rank {0} + rope {1}) x {2} B{3} = {4} B/token per "
        "layer (its {5} heads' keys and values uncompressed: {5} x ({6} + {7}) "
        "x {2} B = {8} B)",
        latent.getRank(), latent.getRopeDim(), element,
        scale ? " + " + std::to_string(scale) + " B scale" : std::string(),
        layer.getCacheTokenBytes(), heads, latent.getQueryHeadDim(),
        latent.getValueDim(),
        heads * (latent.getQueryHeadDim() + latent.getValueDim()) * element);
    os << "\n";
  }
  // With sliding windows, what each kind of layer holds per sequence: the
  // full layers every token, the others the pages of their window.
  struct CacheKind {
    int layers = 0;
    int64_t perToken = 0, perSequence = 0, tokens = 0;
  };
  std::map<int64_t, CacheKind> kinds; // by window kept (0: none)
  for (AttentionLayerOp layer : model.getLayers()) {
    KvCacheAttr cache = layer.getCacheAttr();
    if (!cache || layer.getKind() == LayerKind::Cross)
      continue;
    CacheKind &kind = kinds[keptWindow(layer)];
    kind.layers++;
    kind.perToken += intAttr(layer, "kv_bytes_per_token");
    kind.perSequence += intAttr(layer, "kv_bytes_per_sequence");
    kind.tokens = intAttr(layer, "kv_bytes_per_sequence") /
                  intAttr(layer, "kv_bytes_per_token");
  }
  if (kinds.size() > 1 || (kinds.size() == 1 && kinds.begin()->first)) {
    os << "  by layer kind, per sequence:";
    const char *separator = " ";
    for (const auto &[window, kind] : kinds) {
      os << separator << kind.layers
         << (window ? " sliding (window " + std::to_string(window) + ")"
                    : std::string(" full"))
         << " layers " << formatBytes(kind.perToken) << "/token x "
         << kind.tokens << " tokens = " << formatBytes(kind.perSequence);
      separator = "; ";
    }
    os << "\n";
  }
  return text;
}

} // namespace attnc
