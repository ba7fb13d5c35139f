//===- CudaDevice.h - a CUDA device for JIT-compiled kernels --*- C++ -*-===//
//-*-===//
//
// For the programs that run the CUDA schedules on a device (gpu-numerics-test,
// attn-gpu-bench): whether one is usable, and the JIT target for it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_CUDADEVICE_H
#define ATTN_SCHEDULES_CUDADEVICE_H

#include "Halide.h"

#include <string>

namespace attn {

/// Why no CUDA device can run kernels here ("no CUDA driver ...", "no CUDA
/// device"), or empty when one can. Loads libcuda.so.1 into the process
/// with global symbols: Halide 14's runtime asks for "libcuda.so", which
/// driver-only installs lack, and finds the loaded driver's symbols instead.
/// `driver`, when given, receives the dlopen handle.
std::string whyNoCudaDevice(void **driver = nullptr);

/// The host target with CUDA (capability 8.0 PTX, which sm_90 also runs),
/// after raising Halide's 64-register cap for JIT-compiled kernels.
Halide::Target cudaJitTarget();

} // namespace attn

#endif // ATTN_SCHEDULES_CUDADEVICE_H
