//===- CudaDevice.cpp - finding a CUDA device for JIT-compiled kernels ----===//

#include "attn/schedules/CudaDevice.h"

#include <cstdlib>

namespace attn {

Halide::Target cudaJitTarget() {
  // The attention kernels use more than the default cap of 64 registers.
  setenv("HL_CUDA_JIT_MAX_REGISTERS", "255", /*overwrite=*/0);
  return Halide::get_host_target()
      .with_feature(Halide::Target::CUDA)
      .with_feature(Halide::Target::CUDACapability80);
}

} // namespace attn
