//===- DeviceApi.h - a generated library's GPU entry points -----*- C++ -*-===//
//
// A library attnc generated with a GPU target (--target=...,cuda or
// ...,opencl) declares `<model>_device_api` in <model>.h: the driver loader
// and the few functions of Halide's device runtime the runtime needs to keep
// weights, KV caches and activations on the device. The runtime reaches
// them only through this table, so it links against CPU-only model
// libraries too (they lack the GPU API's halide_* symbols).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_DEVICEAPI_H
#define ATTN_RUNTIME_DEVICEAPI_H

#include "HalideRuntime.h"

namespace attn::runtime {

/// The layout of attnc_device_api.
struct DeviceApi {
  const char *name; ///< "cuda" or "opencl": also the GPU kernels' suffix
  int (*loadDriver)(void);
  const halide_device_interface_t *(*deviceInterface)(void);
  int (*deviceMalloc)(void *, halide_buffer_t *,
                      const halide_device_interface_t *);
  int (*deviceFree)(void *, halide_buffer_t *);
  int (*copyToDevice)(void *, halide_buffer_t *,
                      const halide_device_interface_t *);
  int (*copyToHost)(void *, halide_buffer_t *);
  int (*bufferCopy)(void *, halide_buffer_t *,
                    const halide_device_interface_t *, halide_buffer_t *);
  int (*deviceCrop)(void *, const halide_buffer_t *, halide_buffer_t *);
  int (*deviceReleaseCrop)(void *, halide_buffer_t *);
  halide_error_handler_t (*setErrorHandler)(halide_error_handler_t);
};

/// Copies of whole device-resident allocations (weights, KV pools,
/// activations) between host and device so far, process-wide. Per-call
/// inputs and outputs (token ids, positions, slots, block tables, logits)
/// are not counted: a steady-state decode step should add none.
struct DeviceResidentCopies {
  uint64_t toDevice = 0, toHost = 0;
};
DeviceResidentCopies deviceResidentCopies();

} // namespace attn::runtime

#endif // ATTN_RUNTIME_DEVICEAPI_H
