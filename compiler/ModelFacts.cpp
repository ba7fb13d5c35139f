//===- ModelFacts.cpp - what the plan and the report both state ----------===//

#include "ModelFacts.h"

#include "DTypes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

namespace attnc {

ModelOp theModel(ModuleOp module) { return *module.getOps<ModelOp>().begin(); }

int64_t intAttr(Operation *op, StringRef name) {
  auto attr = op->getAttrOfType<IntegerAttr>(name);
  return attr ? attr.getInt() : 0;
}

std::string typeName(Type type) {
  if (isa<Mxfp4Type>(type))
    return ::attn::dtypeName(::attn::DType::MXFP4);
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

Type weightDtype(ModelOp model) {
  return model.getWeightDtype().value_or(Float32Type::get(model.getContext()));
}

int64_t weightBytes(ModelOp model, std::optional<StringRef> kernel) {
  if (!kernel)
    return 0;
  auto linear = dyn_cast_or_null<LinearKernelOp>(model.lookupSymbol(*kernel));
  if (!linear)
    return 0;
  return int64_t(::attn::linearWeightBytes(
      toDType(linear.getWeightDtype().value_or(Type())),
      linear.getInFeatures(), linear.getOutFeatures(),
      linear.getWeightGroup().value_or(0)));
}

int64_t weightBytesPerToken(ModelOp model) {
  int64_t bytes = 0;
  for (Operation &op : model.getBody().front()) {
    auto stack = op.getAttrOfType<StringAttr>("stack");
    if (stack && stack.getValue() == "encoder")
      continue;
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      bytes += weightBytes(model, layer.getQueryKernel()) +
               weightBytes(model, layer.getOutputKernel());
      if (layer.getKind() != LayerKind::Cross)
        bytes += weightBytes(model, layer.getKeyValueKernel()) +
                 weightBytes(model, layer.getValueKernel());
      // A latent layer's query down projection and every head's W_uk, W_uv.
      if (layer.getLatent())
        bytes += weightBytes(model, layer.getQueryDownKernel()) +
                 int64_t(layer.getNumQueryHeads()) *
                     (weightBytes(model, layer.getAbsorbKernel()) +
                      weightBytes(model, layer.getUnabsorbKernel()));
    } else if (auto ffn = dyn_cast<FfnOp>(op)) {
      // Experts: the router, the experts a token runs and the shared ones.
      const int64_t experts =
          ffn.getExperts() ? ffn.getExpertsAttr().getPerToken() : 1;
      bytes += experts * (weightBytes(model, ffn.getUpKernel()) +
                          weightBytes(model, ffn.getDownKernel())) +
               weightBytes(model, ffn.getRouterKernel()) +
               weightBytes(model, ffn.getSharedUpKernel()) +
               weightBytes(model, ffn.getSharedDownKernel());
    } else if (auto head = dyn_cast<OutputHeadOp>(op)) {
      bytes += weightBytes(model, head.getKernel());
    }
  }
  return bytes;
}

} // namespace attnc
