//===- DeviceProbe.cpp - can a GPU API run kernels here? ------------------===//

#include "attn/runtime/DeviceProbe.h"

#include <cstdint>
#include <dlfcn.h>

namespace attn::runtime {

namespace {
std::string whyNoCudaDevice(void *driver) {
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (!init || !count || init(0) != 0 || count(&devices) != 0)
    return "the CUDA driver did not initialize";
  return devices < 1 ? "no CUDA device" : "";
}

std::string whyNoOpenclDevice(void *driver) {
  // cl_int clGetPlatformIDs(cl_uint, cl_platform_id *, cl_uint *) and
  // clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, ...), without CL headers.
  using PlatformsFn = int32_t (*)(uint32_t, void **, uint32_t *);
  using DevicesFn =
      int32_t (*)(void *, uint64_t, uint32_t, void **, uint32_t *);
  auto platforms =
      reinterpret_cast<PlatformsFn>(dlsym(driver, "clGetPlatformIDs"));
  auto devices = reinterpret_cast<DevicesFn>(dlsym(driver, "clGetDeviceIDs"));
  if (!platforms || !devices)
    return "libOpenCL.so.1 lacks clGetPlatformIDs";
  void *ids[16];
  uint32_t found = 0;
  if (platforms(16, ids, &found) != 0 || found == 0)
    return "no OpenCL platform (no ICD installed, e.g. pocl-opencl-icd)";
  const uint64_t kAllDevices = 0xFFFFFFFF; // CL_DEVICE_TYPE_ALL
  for (uint32_t p = 0; p < found && p < 16; p++) {
    uint32_t count = 0;
    if (devices(ids[p], kAllDevices, 0, nullptr, &count) == 0 && count > 0)
      return "";
  }
  return "no OpenCL device";
}
} // namespace

std::string whyNoDevice(const std::string &api, void **driverHandle) {
  if (driverHandle)
    *driverHandle = nullptr;
  const bool cuda = api == "cuda";
  if (!cuda && api != "opencl")
    return "unknown GPU API '" + api + "' (cuda or opencl)";
  const char *library = cuda ? "libcuda.so.1" : "libOpenCL.so.1";
  void *driver = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  if (driverHandle)
    *driverHandle = driver;
  if (!driver)
    return std::string(cuda ? "no CUDA driver (" : "no OpenCL loader (") +
           library + " not found)";
  return cuda ? whyNoCudaDevice(driver) : whyNoOpenclDevice(driver);
}

} // namespace attn::runtime
