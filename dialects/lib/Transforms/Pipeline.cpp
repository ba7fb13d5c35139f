//===- Pipeline.cpp - the passes attnc runs, as one named pipeline --------===//

#include "attn/AttnPasses.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::attn {

void buildAttnPipeline(OpPassManager &pm, const AttnPipelineOptions &options) {
  OpPassManager &model = pm.nest<ModelOp>();
  model.addPass(createMaterializeDefaults());
  model.addPass(createFuseProjections());
  model.addPass(createSpecializeKernels());
  model.addPass(createPlanKvCache({options.kvBudget}));
  model.addPass(createSelectSchedules({options.target, options.scheduleDb}));
}

void registerAttnPipeline() {
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-pipeline", "The passes attnc runs, in order", buildAttnPipeline);
}

} // namespace mlir::attn
