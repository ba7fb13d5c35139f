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
    // The math-level ops state no QK-norm, partial rotary or sinks yet: a
    // step without them would be a wrong reference, so such layers are
    // refused.
    if (layer.getQkNorm() || layer.getRopeDim() || layer.getSinks() ||
        layer.getLatent())
      return layer.emitOpError()
             << "has "
             << (layer.getQkNorm()    ? "qk_norm"
                 : layer.getRopeDim() ? "rope_dim"
                 : layer.getSinks()   ? "sinks"
                                      : "a latent")
             << ", which the outlined decode step cannot state yet (no "
                "math-level op for it)";
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

    // A model of whole blocks: the step starts from the layer's input and
    // ends with the residual stream (the projections included).
    const bool blocks = model.hasBlocks();
    const int64_t dModel = model.getDModel();
    const bool bias = layer.getProjectionBias();
    auto stream = RankedTensorType::get({dyn, dyn, dModel}, f32);
    auto matrix = [&](int64_t in, int64_t out) {
      return RankedTensorType::get({in, out}, f32);
    };
    auto vector = [&](int64_t n) { return RankedTensorType::get({n}, f32); };
    SmallVector<Type> inputs;
    if (blocks)
      inputs = {stream, stream};
    else
      inputs = {rows(queryHeads)};
    if (self && !blocks)
      inputs.append({rows(kvHeads), rows(kvHeads)});
    if (rope)
      inputs.push_back(positionsType);
    inputs.push_back(cacheType);
    const unsigned firstWeight = inputs.size();
    if (blocks) {
      // wq, [bq], (self) wk, [bk], wv, [bv], then wo, [bo].
      SmallVector<int64_t> widths = {queryHeads * headDim};
      if (self)
        widths.append({kvHeads * headDim, kvHeads * headDim});
      for (int64_t width : widths) {
        inputs.push_back(matrix(dModel, width));
        if (bias)
          inputs.push_back(vector(width));
      }
      inputs.push_back(matrix(queryHeads * headDim, dModel));
      if (layer.hasOutputBias())
        inputs.push_back(vector(dModel));
    }
    SmallVector<Type> results = {blocks ? Type(stream) : rows(queryHeads)};
    if (self)
      results.push_back(cacheType);

    std::string name =
        (model.getSymName() + "_" + layer.getSymName() + "_decode_step").str();
    auto func = builder.create<func::FuncOp>(
        loc, name, builder.getFunctionType(inputs, results));
    symbols.insert(func); // unique, should the name be taken
    Block *body = func.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(body);
    Value cache = body->getArgument(firstWeight - 1);
    Value query, key, value;
    unsigned weight = firstWeight;
    // input · W (+ b) (+ residual), split into `heads` when heads > 0.
    auto project = [&](Value input, int64_t heads, Value residual,
                       bool withBias) {
      Value w = body->getArgument(weight++);
      Value offset = withBias ? body->getArgument(weight++) : Value();
      Type type = heads ? Type(rows(heads)) : Type(stream);
      return b.create<ProjectOp>(loc, type, input, w, offset, residual)
          .getResult();
    };
    if (blocks) {
      Value input = body->getArgument(0);
      query = project(input, queryHeads, Value(), bias);
      if (self) {
        key = project(input, kvHeads, Value(), bias);
        value = project(input, kvHeads, Value(), bias);
      }
    } else {
      query = body->getArgument(0);
      if (self)
        key = body->getArgument(1), value = body->getArgument(2);
    }
    if (self) {
      if (rope) {
        Value positions = body->getArgument(blocks ? 2 : 3);
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
    Value attended = sdpa.getResult();
    if (blocks) // the output projection adds the residual stream
      attended = project(attended, 0, body->getArgument(1),
                         layer.hasOutputBias());
    SmallVector<Value> returned = {attended};
    if (self)
      returned.push_back(cache);
    b.create<func::ReturnOp>(loc, returned);
    return success();
  }
};
} // namespace
} // namespace mlir::attn
