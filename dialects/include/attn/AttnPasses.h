//===- AttnPasses.h - attn dialect passes -----------------------*- C++ -*-===//

#ifndef ATTN_ATTNPASSES_H
#define ATTN_ATTNPASSES_H

#include "attn/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "attn/AttnPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/AttnPasses.h.inc"

/// The options of the whole pipeline: those of its passes that attnc sets.
struct AttnPipelineOptions : public PassPipelineOptions<AttnPipelineOptions> {
  Option<int64_t> kvBudget{
      *this, "kv-budget",
      llvm::cl::desc("KV cache budget in bytes for the whole model (0: "
                     "unlimited)"),
      llvm::cl::init(0)};
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("CPU targets the schedules are picked for"),
      llvm::cl::init("host")};
  Option<std::string> scheduleDb{
      *this, "schedule-db",
      llvm::cl::desc("A tuning database (docs/tuning.md)"), llvm::cl::init("")};
};

/// What attnc runs between import and code generation, in order, on each
/// attn.model: materialize defaults, fuse projections, specialize kernels,
/// plan the KV cache, select schedules. `attn-opt --attn-pipeline` runs the
/// same (registerAttnPipeline).
void buildAttnPipeline(OpPassManager &pm, const AttnPipelineOptions &options);
void registerAttnPipeline();

} // namespace mlir::attn

#endif // ATTN_ATTNPASSES_H
