//===- PlanWriter.cpp - <model>_plan.json ---------------------------------===//

#include "PlanWriter.h"

#include "DTypes.h"
#include "ModelFacts.h"

#include "attn/runtime/PlanSchema.h"
#include "attn/schedules/KernelSpec.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::attn;
namespace plan = ::attn::plan;

namespace attnc {

std::string renderPlanJson(ModuleOp module,
                           llvm::ArrayRef<std::string> devices) {
  ModelOp model = theModel(module);
  std::string prefix = model.getSymName().str() + "_";
  llvm::json::Array layers;
  for (AttentionLayerOp layer : model.getLayers()) {
    llvm::json::Object entry{
        {plan::kName, layer.getSymName()},
        {plan::kKind, stringifyLayerKind(layer.getKind())},
        {plan::kNumQueryHeads, int64_t(layer.getNumQueryHeads())},
        {plan::kNumKvHeads, int64_t(layer.getNumKvHeads())},
        {plan::kHeadDim, int64_t(layer.getHeadDim())},
        {plan::kMask, stringifyMaskKind(layer.getMask())},
        {plan::kScale,
         layer.getScale() ? layer.getScale()->convertToFloat() : 0.0},
        {plan::kPrefillKernel, prefix + layer.getPrefillKernel()->str()}};
    if (layer.getStack())
      entry[plan::kStack] = *layer.getStack();
    if (layer.getQueryKernel()) {
      entry[plan::kProjectionBias] = layer.getProjectionBias();
      entry[plan::kOutputBias] = layer.hasOutputBias();
      entry[plan::kFusedProjections] = layer.getFusedProjections();
      entry[plan::kFusedCacheAppend] = layer.getFusedCacheAppend();
      entry[plan::kQueryKernel] = prefix + layer.getQueryKernel()->str();
      if (layer.getKeyValueKernel())
        entry[plan::kKeyValueKernel] =
            prefix + layer.getKeyValueKernel()->str();
      if (layer.getValueKernel())
        entry[plan::kValueKernel] = prefix + layer.getValueKernel()->str();
      entry[plan::kOutputKernel] = prefix + layer.getOutputKernel()->str();
    }
    if (layer.getRopeTheta())
      entry[plan::kRopeTheta] = layer.getRopeTheta()->convertToFloat();
    if (mlir::attn::QkNormAttr norm = layer.getQkNormAttr())
      entry[plan::kQkNorm] =
          mlir::attn::stringifyQkNormScope(norm.getScope()).str();
    if (layer.getSinks())
      entry[plan::kSinks] = true;
    if (layer.getKeyPadding())
      entry[plan::kKeyPadding] = true;
    if (layer.getWindow())
      entry[plan::kWindow] = *layer.getWindow();
    if (LatentAttr latent = layer.getLatentAttr()) {
      llvm::json::Object object{
          {plan::kRank, latent.getRank()},
          {plan::kRopeDim, latent.getRopeDim()},
          {plan::kNopeDim, latent.getNopeDim()},
          {plan::kValueDim, latent.getValueDim()},
          {plan::kQueryRank, latent.getQueryRank()},
          {plan::kEps, latent.getEpsValue()}};
      for (auto [key, kernel] :
           {std::pair{plan::kQueryDownKernel, layer.getQueryDownKernel()},
            std::pair{plan::kQueryNormKernel, layer.getQueryNormKernel()},
            std::pair{plan::kLatentNormKernel, layer.getLatentNormKernel()},
            std::pair{plan::kAbsorbKernel, layer.getAbsorbKernel()},
            std::pair{plan::kUnabsorbKernel, layer.getUnabsorbKernel()}})
        if (kernel)
          object[key] = prefix + kernel->str();
      entry[plan::kLatent] = std::move(object);
    }
    if (KvCacheAttr cache = layer.getCacheAttr()) {
      entry[plan::kDecodeKernel] = prefix + layer.getDecodeKernel()->str();
      entry[plan::kKvCache] = llvm::json::Object{
          {plan::kLayout, stringifyCacheLayout(cache.getLayout())},
          {plan::kPageSize, cache.getPageSize()},
          {plan::kDtype, ::attn::dtypeName(toDType(cache.getDtype()))},
          {plan::kMaxLength, cache.getMaxLength()},
          {plan::kBytesPerToken, intAttr(layer, "kv_bytes_per_token")},
          {plan::kBytesPerSequence, intAttr(layer, "kv_bytes_per_sequence")}};
    }
    layers.push_back(std::move(entry));
  }
  // Every op in execution order: what a runtime walks to run the model.
  llvm::json::Array ops;
  for (Operation &op : model.getBody().front()) {
    llvm::json::Object entry;
    auto kernelName = [&](std::optional<StringRef> kernel) {
      return prefix + kernel.value_or("").str();
    };
    if (auto layer = dyn_cast<AttentionLayerOp>(op)) {
      entry = llvm::json::Object{{plan::kOp, plan::kOpAttention},
                                 {plan::kName, layer.getSymName()}};
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      entry = llvm::json::Object{
          {plan::kOp, plan::kOpEmbedding},
          {plan::kName, embedding.getSymName()},
          {plan::kVocabSize, int64_t(embedding.getVocabSize())},
          {plan::kPositions, stringifyPositionKind(embedding.getPositions())},
          {plan::kMaxPositions, int64_t(embedding.getMaxPositions())},
          {plan::kPositionOffset, embedding.getPositionOffset().value_or(0)},
          {plan::kScale, embedding.getScale()
                             ? embedding.getScale()->convertToFloat()
                             : 1.0f},
          {plan::kKernel, kernelName(embedding.getKernel())}};
    } else if (auto norm = dyn_cast<NormOp>(op)) {
      entry =
          llvm::json::Object{{plan::kOp, plan::kOpNorm},
                             {plan::kName, norm.getSymName()},
                             {plan::kKind, stringifyNormKind(norm.getKind())},
                             {plan::kEps, norm.getEps().convertToFloat()},
                             {plan::kPost, norm.getPost()},
                             {plan::kResidualAdd, norm.getResidualAdd()},
                             {plan::kKernel, kernelName(norm.getKernel())}};
    } else if (auto ffn = dyn_cast<FfnOp>(op)) {
      entry = llvm::json::Object{
          {plan::kOp, plan::kOpFfn},
          {plan::kName, ffn.getSymName()},
          {plan::kActivation, stringifyActivation(ffn.getActivation())},
          {plan::kIntermediateSize, int64_t(ffn.getIntermediateSize())},
          {plan::kBias, ffn.getBias()},
          {plan::kGated, ffn.getGated()},
          {plan::kUpKernel, kernelName(ffn.getUpKernel())},
          {plan::kDownKernel, kernelName(ffn.getDownKernel())}};
      if (ExpertsAttr experts = ffn.getExpertsAttr()) {
        auto router = SymbolTable::lookupNearestSymbolFrom<LinearKernelOp>(
            ffn, ffn.getRouterKernelAttr());
        const ::attn::DType routerType =
            toDType(router.getWeightDtype().value_or(Type()));
        auto up = SymbolTable::lookupNearestSymbolFrom<LinearKernelOp>(
            ffn, ffn.getUpKernelAttr());
        const ::attn::DType expertType =
            toDType(up.getWeightDtype().value_or(Type()));
        entry[plan::kExperts] = llvm::json::Object{
            {plan::kRouter, stringifyRouterKind(experts.getRouter())},
            {plan::kCount, experts.getCount()},
            {plan::kPerToken, experts.getPerToken()},
            {plan::kNormalize, experts.getNormalize().getValue()},
            {plan::kGroups, experts.getGroups()},
            {plan::kGroupTopK, experts.getGroupTopK()},
            {plan::kScale, experts.getScaleValue()},
            {plan::kRouterKernel, kernelName(ffn.getRouterKernel())},
            {plan::kRouterDtype, ::attn::dtypeName(routerType)},
            {plan::kRouterPanel, int64_t(::attn::weightPanel(routerType))},
            {plan::kWeightDtype, ::attn::dtypeName(expertType)},
            {plan::kWeightPanel, int64_t(::attn::weightPanel(expertType))}};
        if (experts.getShared() > 0)
          (*entry[plan::kExperts].getAsObject())[plan::kShared] =
              llvm::json::Object{
                  {plan::kIntermediateSize, experts.getShared()},
                  {plan::kSharedGate, experts.getSharedGate() &&
                                          experts.getSharedGate().getValue()},
                  {plan::kUpKernel, kernelName(ffn.getSharedUpKernel())},
                  {plan::kDownKernel, kernelName(ffn.getSharedDownKernel())}};
      }
    } else if (auto head = dyn_cast<OutputHeadOp>(op)) {
      // Whether the kernel also writes each token's greedy choice.
      auto kernel = head.getKernelAttr()
                        ? SymbolTable::lookupNearestSymbolFrom<LinearKernelOp>(
                              head, head.getKernelAttr())
                        : LinearKernelOp();
      // Its weights' type: its own (a checkpoint's float head), else the
      // model's.
      const ::attn::DType headType = toDType(
          head.getWeightDtype().value_or(weightDtype(model)));
      entry =
          llvm::json::Object{{plan::kOp, plan::kOpOutputHead},
                             {plan::kName, head.getSymName()},
                             {plan::kVocabSize, int64_t(head.getVocabSize())},
                             {plan::kBias, head.getBias()},
                             {plan::kArgmax, kernel && kernel.getArgmax()},
                             {plan::kTied, head.getTied()},
                             {plan::kKernel, kernelName(head.getKernel())},
                             {plan::kWeightDtype, ::attn::dtypeName(headType)},
                             {plan::kWeightPanel,
                              int64_t(::attn::weightPanel(headType))},
                             // Its kernel's inputs per scale (0: none).
                             {plan::kWeightGroup,
                              int64_t(kernel ? kernel.getWeightGroup().value_or(0)
                                             : 0)}};
    } else {
      continue; // kernels
    }
    if (auto stack = op.getAttrOfType<StringAttr>("stack"))
      entry[plan::kStack] = stack.getValue();
    ops.push_back(std::move(entry));
  }
  // Every attention kernel with what specializes it and its schedule: what
  // attn-tune needs to rebuild and time it.
  llvm::json::Array kernels;
  for (KernelOp kernel : model.getKernels()) {
    llvm::json::Object entry{
        {plan::kName, prefix + kernel.getSymName().str()},
        {plan::kSymbol, kernel.getSymName()},
        {plan::kFamily, stringifyKernelFamily(kernel.getFamily())},
        {plan::kNumQueryHeads, int64_t(kernel.getNumQueryHeads())},
        {plan::kNumKvHeads, int64_t(kernel.getNumKvHeads())},
        {plan::kHeadDim, int64_t(kernel.getHeadDim())},
        {plan::kCausal, kernel.getCausal()},
        {plan::kWindow, int64_t(kernel.getWindow().value_or(0))},
        {plan::kScale, kernel.getScale().convertToFloat()},
        {plan::kSoftcap,
         kernel.getSoftcap() ? kernel.getSoftcap()->convertToFloat() : 0.0},
        {plan::kAlibi, kernel.getAlibi()},
        {plan::kSinks, kernel.getSinks()},
        {plan::kKeyPadding, kernel.getKeyPadding()},
        {plan::kComputeDtype, kernel.getComputeDtype()
                                  ? typeName(*kernel.getComputeDtype())
                                  : std::string("f32")}};
    if (kernel.getPageSize()) {
      entry[plan::kPageSize] = int64_t(*kernel.getPageSize());
      entry[plan::kKvDtype] = ::attn::dtypeName(
          toDType(kernel.getKvDtype().value_or(mlir::Type())));
    }
    if (std::optional<ScheduleAttr> s = kernel.getSchedule())
      entry[plan::kSchedule] =
          llvm::json::Object{{plan::kQueryBlock, s->getQueryBlock()},
                             {plan::kKvChunk, s->getKvChunk()},
                             {plan::kQkTileKeys, s->getQkTileKeys()},
                             {plan::kPvTileRows, s->getPvTileRows()},
                             {plan::kSplitKeys, s->getSplitKeys()},
                             {plan::kVectorWidth, s->getVectorWidth()},
                             {plan::kSource, s->getSource()}};
    kernels.push_back(std::move(entry));
  }
  // How each linear kernel reads its weights: the runtime lays each
  // matrix out for its kernel.
  llvm::json::Object linearKernels;
  for (Operation &op : model.getBody().front())
    if (auto linear = dyn_cast<LinearKernelOp>(op)) {
      const ::attn::DType type =
          toDType(linear.getWeightDtype().value_or(Type()));
      linearKernels[prefix + linear.getSymName().str()] = llvm::json::Object{
          {plan::kWeightDtype, ::attn::dtypeName(type)},
          {plan::kWeightPanel, int64_t(::attn::weightPanel(type))},
          {plan::kWeightGroup, int64_t(linear.getWeightGroup().value_or(0))}};
    }
  llvm::json::Object root{
      {plan::kPlanVersion, int64_t(plan::kVersion)},
      {plan::kModel, model.getSymName()},
      {plan::kKind, model.getKind()},
      {plan::kDModel, int64_t(model.getDModel())},
      {plan::kMaxBatch, int64_t(model.getMaxBatch())},
      {plan::kDevices, llvm::json::Array(devices)},
      {plan::kWeightDtype, ::attn::dtypeName(toDType(weightDtype(model)))},
      {plan::kWeightNaming, model.getWeightNaming().value_or("")},
      {plan::kWeightPanel,
       int64_t(::attn::weightPanel(toDType(weightDtype(model))))},
      {plan::kWeightGroup, int64_t(model.getWeightGroup().value_or(0))},
      {plan::kWeightFormat, model.getWeightFormat().value_or("")},
      {plan::kWeightMins, model.getWeightMins()},
      {plan::kNormWeightOffset,
       model.getNormWeightOffset()
           ? double(model.getNormWeightOffset()->convertToFloat())
           : 0.0},
      {plan::kWeightBytesPerToken, weightBytesPerToken(model)},
      {plan::kKvBytesPerToken, intAttr(model, "kv_bytes_per_token")},
      {plan::kKvBytesPerSequence, intAttr(model, "kv_bytes_per_sequence")},
      {plan::kKvBytes, intAttr(model, "kv_bytes")},
      {plan::kLayers, std::move(layers)},
      {plan::kKernels, std::move(kernels)},
      {plan::kLinearKernels, std::move(linearKernels)},
      {plan::kOps, std::move(ops)}};
  return llvm::formatv("{0:2}\n", llvm::json::Value(std::move(root))).str();
}

} // namespace attnc
