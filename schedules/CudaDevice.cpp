//===- CudaDevice.cpp - finding a CUDA device for JIT-compiled kernels ----===//

#include "attn/schedules/CudaDevice.h"

#include <cstdlib>
#include <dlfcn.h>

namespace attn {

std::string whyNoCudaDevice(void **driverHandle) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driverHandle)
    *driverHandle = driver;
  if (!driver)
    return "no CUDA driver (libcuda.so.1 not found)";
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (!init || !count || init(0) != 0 || count(&devices) != 0)
    return "the CUDA driver did not initialize";
  if (devices < 1)
    return "no CUDA device";
  return "";
}

Halide::Target cudaJitTarget() {
  // The attention kernels use more than the default cap of 64 registers.
  setenv("HL_CUDA_JIT_MAX_REGISTERS", "255", /*overwrite=*/0);
  return Halide::get_host_target()
      .with_feature(Halide::Target::CUDA)
      .with_feature(Halide::Target::CUDACapability80);
}

} // namespace attn
