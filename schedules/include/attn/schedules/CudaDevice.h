//===- CudaDevice.h - the JIT target for CUDA kernels -----------*- C++ -*-===//
//
// For the programs that run the CUDA schedules on a device (gpu-numerics-test,
// attn-gpu-bench); whether one is usable they ask the runtime
// (attn/runtime/DeviceProbe.h: it loads the driver as Halide needs it).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_CUDADEVICE_H
#define ATTN_SCHEDULES_CUDADEVICE_H

#include "Halide.h"


namespace attn {

/// The host target with CUDA (capability 8.0 PTX, which sm_90 also runs),
/// after raising Halide's 64-register cap for JIT-compiled kernels.
Halide::Target cudaJitTarget();

} // namespace attn

#endif // ATTN_SCHEDULES_CUDADEVICE_H
