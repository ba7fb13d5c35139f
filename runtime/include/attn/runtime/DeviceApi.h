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

#include "attn/runtime/attnc_library.h"

namespace attn::runtime {

/// <model>_device_api's type (attnc_library.h, shared with attnc).
using DeviceApi = ::attnc_device_api;

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
