//===- DeviceProbe.h - can a GPU API run kernels here? ----------*- C++ -*-===//
//
// Loads a GPU API's driver the way Halide's runtime needs it (the versioned
// library with global symbols: Halide 14 asks for "libcuda.so" and
// "libOpenCL.so", which driver-only installs lack) and asks it for a
// device. Halide-free: the runtime, the tests and the benchmarks use it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_DEVICEPROBE_H
#define ATTN_RUNTIME_DEVICEPROBE_H

#include <string>

namespace attn::runtime {

/// Why no device of `api` ("cuda" or "opencl") can run kernels here ("no
/// CUDA driver (libcuda.so.1 not found)", "no OpenCL device", ...), or empty
/// when one can. `driver`, when given, receives the loaded library's handle
/// (null when it could not be loaded).
std::string whyNoDevice(const std::string &api, void **driver = nullptr);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_DEVICEPROBE_H
