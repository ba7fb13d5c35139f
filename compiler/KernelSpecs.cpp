//===- KernelSpecs.cpp - attn IR to plain kernel specs --------------------===//

#include "KernelSpecs.h"

#include "attn/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace attnc {

LogicalResult collectKernelSpecs(ModuleOp module,
                                 std::vector<::attn::SdpaSpec> &specs) {
  std::string prefix =
      module.getSymName() ? module.getSymName()->str() + "_" : std::string();
  WalkResult walk =
      module.walk([&](func::FuncOp function) {
        // The generated C function takes the function's arguments as its
        // buffers, so the body must be exactly one attention over them.
        Block &body = function.front();
        auto sdpa = dyn_cast<mlir::attn::SdpaOp>(body.front());
        auto ret = dyn_cast<func::ReturnOp>(body.back());
        if (!sdpa || !ret || body.getOperations().size() != 2 ||
            ret.getOperands() != ValueRange(sdpa.getResult()) ||
            sdpa.getOperands() != ValueRange(function.getArguments())) {
          function.emitError()
              << "cannot generate a kernel for this function: its body must be "
                 "one attn.sdpa over the function arguments, returned";
          return WalkResult::interrupt();
        }
        ::attn::SdpaSpec spec;
        spec.functionName = prefix + function.getSymName().str();
        spec.numQueryHeads = sdpa.getNumQueryHeads();
        spec.numKvHeads = sdpa.getNumKvHeads();
        spec.headDim = sdpa.getHeadDim();
        spec.causal = sdpa.getCausal();
        spec.scale = sdpa.getEffectiveScale();
        specs.push_back(spec);
        return WalkResult::advance();
      });
  if (walk.wasInterrupted())
    return failure();
  if (specs.empty())
    return module.emitError() << "the description defines no attention kernel";
  return success();
}

} // namespace attnc
