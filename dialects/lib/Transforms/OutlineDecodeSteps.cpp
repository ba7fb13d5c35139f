//===- OutlineDecodeSteps.cpp - each layer's decode step as math ops ------===//
//
// The model-level ops say what a layer is; this pass says, with the
// tensor-level ops (attn.rope, attn.cache_*, attn.sdpa), what one decode
// step of it computes: the reference the generated kernels implement.
//
//===----------------------------------------------------------------------===//

#include "attn/AttnPasses.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn {
#define GEN_PASS_DEF_OUTLINEDECODESTEPS
#include "attn/AttnPasses.h.inc"

namespace {
struct OutlineDecodeStepsPass
    : impl::OutlineDecodeStepsBase<OutlineDecodeStepsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(module.getBody());
    SymbolTable symbols(module);
    for (ModelOp model : llvm::to_vector(module.getOps<ModelOp>()))
      for (AttentionLayerOp layer : model.getLayers())
        if (layer.getCacheAttr() &&
            failed(outline(builder, symbols, model, layer)))
          return signalPassFailure();
  }

  LogicalResult outline(OpBuilder &builder, SymbolTable &symbols, ModelOp model,
                        AttentionLayerOp layer) {
    if (!layer.getScale())
      return layer.emitOpError()
             << "has no scale: run --attn-materialize-defaults first";
    Location loc = layer.getLoc();
    MLIRContext *context = &getContext();
    const int64_t queryHeads = layer.getNumQueryHeads(),
                  kvHeads = layer.getNumKvHeads(), headDim = layer.getHeadDim();
    const int64_t dyn = ShapedType::kDynamic;
    Type f32 = builder.getF32Type();
    auto rows = [&](int64_t heads) {
      return RankedTensorType::get({dyn, dyn, heads, headDim}, f32);
    };
    auto cacheType =
        CacheType::get(context, kvHeads, headDim, layer.getCacheAttr());
    auto positionsType =
        RankedTensorType::get({dyn, dyn}, builder.getI32Type());
    const bool self = layer.getKind() == LayerKind::Self;
    const bool rope = self && layer.getRopeTheta().has_value();

    SmallVector<Type> inputs = {rows(queryHeads)};
    if (self)
      inputs.append({rows(kvHeads), rows(kvHeads)});
    if (rope)
      inputs.push_back(positionsType);
    inputs.push_back(cacheType);
    SmallVector<Type> results = {rows(queryHeads)};
    if (self)
      results.push_back(cacheType);

    std::string name =
        (model.getSymName() + "_" + layer.getSymName() + "_decode_step").str();
    auto func = builder.create<func::FuncOp>(
        loc, name, builder.getFunctionType(inputs, results));
    symbols.insert(func); // unique, should the name be taken
    Block *body = func.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(body);
    Value query = body->getArgument(0), cache = body->getArguments().back();
    if (self) {
      Value key = body->getArgument(1), value = body->getArgument(2);
      if (rope) {
        Value positions = body->getArgument(3);
        FloatAttr theta = layer.getRopeThetaAttr();
        query = b.create<RopeOp>(loc, query.getType(), query, positions, theta,
                                 layer.getRopeScalingAttr());
        key = b.create<RopeOp>(loc, key.getType(), key, positions, theta,
                               layer.getRopeScalingAttr());
      }
      cache = b.create<CacheAppendOp>(loc, cacheType, cache, key, value);
    }
    auto view = b.create<CacheViewOp>(loc, rows(kvHeads), rows(kvHeads), cache);
    const bool causal = layer.getMask() != MaskKind::None;
    auto sdpa = b.create<SdpaOp>(
        loc, rows(queryHeads), query, view.getKeys(), view.getValues(),
        b.getI64IntegerAttr(queryHeads), b.getI64IntegerAttr(kvHeads),
        b.getI64IntegerAttr(headDim), causal ? b.getUnitAttr() : UnitAttr(),
        layer.getScaleAttr(), layer.getWindowAttr(), layer.getSoftcapAttr(),
        layer.getAlibi() ? b.getUnitAttr() : UnitAttr());
    SmallVector<Value> returned = {sdpa.getResult()};
    if (self)
      returned.push_back(cache);
    b.create<func::ReturnOp>(loc, returned);
    return success();
  }
};
} // namespace
} // namespace mlir::attn
