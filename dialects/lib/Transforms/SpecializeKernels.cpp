//===- SpecializeKernels.cpp - one kernel per distinct layer --------------===//

#include "attn/AttnPasses.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

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
  int64_t pageSize; // decode only, else 0
  Type cacheType;   // decode only, else null

  std::string name() const {
    std::string text = (family == KernelFamily::Prefill ? "prefill" : "decode");
    text += "_h" + std::to_string(queryHeads) + "_kv" +
            std::to_string(kvHeads) + "_d" + std::to_string(headDim);
    if (pageSize)
      text += "_p" + std::to_string(pageSize);
    if (cacheType && !cacheType.isF32())
      text += cacheType.isF16() ? "_f16" : "_bf16";
    if (softcap > 0)
      text += "_cap" + std::to_string(int(softcap));
    if (alibi)
      text += "_alibi";
    if (window)
      return text + "_w" + std::to_string(window);
    return text + (causal ? "_causal" : "");
  }
  bool operator==(const KernelSignature &other) const {
    return family == other.family && queryHeads == other.queryHeads &&
           kvHeads == other.kvHeads && headDim == other.headDim &&
           causal == other.causal && window == other.window &&
           scale == other.scale && softcap == other.softcap &&
           alibi == other.alibi && pageSize == other.pageSize &&
           cacheType == other.cacheType;
  }
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
          signature.window ? builder.getI64IntegerAttr(signature.window)
                           : IntegerAttr(),
          llvm::APFloat(signature.scale),
          signature.softcap > 0 ? builder.getF32FloatAttr(signature.softcap)
                                : FloatAttr(),
          signature.alibi,
          signature.pageSize ? builder.getI64IntegerAttr(signature.pageSize)
                             : IntegerAttr(),
          // Absent means f32, the common case.
          signature.cacheType && !signature.cacheType.isF32()
              ? TypeAttr::get(signature.cacheType)
              : TypeAttr(),
          ScheduleAttr());
      symbols.insert(kernel); // renames on a clash (same name, other scale)
      kernels.emplace_back(signature, kernel);
      return kernel;
    };

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
          0,
          Type()};
      layer.setPrefillKernelAttr(
          FlatSymbolRefAttr::get(kernelFor(prefill, layer.getLoc())));
      if (KvCacheAttr cache = layer.getCacheAttr()) {
        KernelSignature decode = prefill;
        decode.family = KernelFamily::Decode;
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
