//===- KernelCall.cpp - calling generated kernels through Halide buffers --===//

#include "attn/runtime/KernelCall.h"

#include "DeviceShadows.h"

#include <climits>
#include <cstring>
#include <mutex>
#include <optional>

// The Halide runtime linked with a model library (weak: a program without
// one leaves it null). Its default error handler calls abort(); a kernel
// whose buffers break a constraint (a plan edited against its kernels)
// must instead fail its call, with Halide's message.
#pragma weak halide_set_error_handler

namespace attn::runtime {

BufferView::BufferView(const void *data, halide_type_t type,
                       std::initializer_list<Dim> dims) {
  int d = 0;
  for (const Dim &dim : dims) {
    if (d == 4 || dim.extent < 1 || dim.extent > INT32_MAX ||
        dim.stride > INT32_MAX || dim.stride < 0) {
      valid_ = false;
      break;
    }
    dims_[d].min = 0;
    dims_[d].extent = int32_t(dim.extent);
    dims_[d].stride = int32_t(dim.stride);
    dims_[d].flags = 0;
    d++;
  }
  buffer_.host = static_cast<uint8_t *>(const_cast<void *>(data));
  buffer_.type = type;
  buffer_.dimensions = d;
  buffer_.dim = dims_;
}

namespace {
std::string describe(const halide_type_t &type, int dimensions) {
  const char *code = type.code == halide_type_int      ? "int"
                     : type.code == halide_type_uint   ? "uint"
                     : type.code == halide_type_float  ? "float"
                     : type.code == halide_type_bfloat ? "bfloat"
                                                       : "handle";
  return std::to_string(dimensions) + "-D " + code + std::to_string(type.bits);
}

/// Whether `args` are what `kernel` was generated to take (its metadata):
/// as many buffers, each of the element type and dimensions it expects.
/// A kernel called through a type-erased pointer with other arguments
/// would read garbage; a plan edited by hand, or a header and a library
/// from different attnc runs, is an error here instead. A bf16 pool given
/// to a kernel that takes uint16 (GPU kernels keep bf16 as its bits:
/// Halide 14 has no bfloat loads on NVPTX or OpenCL) is retyped, the same
/// bytes.
Status checkArguments(const Kernel &kernel,
                      const halide_filter_metadata_t *metadata,
                      const std::vector<BufferView *> &args) {
  if (metadata->num_arguments != int(args.size()))
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + " takes " +
                      std::to_string(metadata->num_arguments) +
                      " buffers; the plan gives it " +
                      std::to_string(args.size()) +
                      " (plan and kernels disagree)");
  for (size_t i = 0; i < args.size(); i++) {
    const halide_filter_argument_t &expected = metadata->arguments[i];
    halide_buffer_t &given = *args[i]->get();
    if (given.type.code == halide_type_bfloat && given.type.bits == 16 &&
        expected.type.code == halide_type_uint && expected.type.bits == 16)
      given.type.code = halide_type_uint;
    if (expected.kind == halide_argument_kind_input_scalar ||
        expected.dimensions != given.dimensions ||
        expected.type.code != given.type.code ||
        expected.type.bits != given.type.bits)
      return Status(StatusCode::InvalidArgument,
                    "kernel " + kernel.name + " argument '" + expected.name +
                        "' is a " +
                        describe(expected.type, expected.dimensions) +
                        " buffer; the plan gives it a " +
                        describe(given.type, given.dimensions) +
                        " one (plan and kernels disagree)");
  }
  return Status::ok();
}
} // namespace

Status callKernel(const Kernel &kernel, const std::vector<BufferView *> &args,
                  const DeviceApi *device) {
  static std::once_flag handlerInstalled;
  std::call_once(handlerInstalled, [] {
    if (&halide_set_error_handler != nullptr)
      halide_set_error_handler(shadows::recordHalideError);
  });
  const halide_filter_metadata_t *metadata =
      kernel.metadata ? kernel.metadata() : nullptr;
  if (metadata)
    if (Status s = checkArguments(kernel, metadata, args); !s)
      return s;
  // Outputs as the metadata says (checked above to match `args`).
  auto isOutput = [&](size_t i) {
    return metadata &&
           metadata->arguments[i].kind == halide_argument_kind_output_buffer;
  };
  std::vector<halide_buffer_t *> b;
  for (BufferView *arg : args) {
    if (!arg->valid())
      return Status(StatusCode::InvalidArgument,
                    "a buffer of kernel " + kernel.name +
                        " exceeds 32-bit indexing");
    b.push_back(arg->get());
  }
  std::optional<shadows::KernelCallOnDevice> onDevice;
  if (device) {
    if (!metadata)
      return Status(StatusCode::InvalidArgument,
                    "device kernel " + kernel.name +
                        " has no metadata to tell its outputs");
    onDevice.emplace(*device);
    for (size_t i = 0; i < b.size(); i++)
      if (Status s = onDevice->attach(*b[i], isOutput(i)); !s)
        return Status(s.code(), "kernel " + kernel.name + ": " + s.message());
  } else {
    // A CPU kernel over memory a GPU model also used (a cache it filled):
    // the device's newer side comes back first, and what the kernel writes
    // goes up before the next device kernel. No-ops in CPU-only runs.
    for (size_t i = 0; i < b.size(); i++)
      (isOutput(i) ? shadows::hostWrites : shadows::hostReads)(b[i]->host);
  }
  using B = halide_buffer_t *;
  void (*f)(void) = kernel.function;
  int result;
  (void)shadows::takeLastDeviceError(); // nothing stale in this call's report
  // Every kernel takes only buffers; cast back to the arity it was built with.
  switch (b.size()) {
  case 3:
    result = reinterpret_cast<int (*)(B, B, B)>(f)(b[0], b[1], b[2]);
    break;
  case 4:
    result = reinterpret_cast<int (*)(B, B, B, B)>(f)(b[0], b[1], b[2], b[3]);
    break;
  case 5:
    result = reinterpret_cast<int (*)(B, B, B, B, B)>(f)(b[0], b[1], b[2], b[3],
                                                         b[4]);
    break;
  case 6:
    result = reinterpret_cast<int (*)(B, B, B, B, B, B)>(f)(b[0], b[1], b[2],
                                                            b[3], b[4], b[5]);
    break;
  case 7:
    result = reinterpret_cast<int (*)(B, B, B, B, B, B, B)>(f)(
        b[0], b[1], b[2], b[3], b[4], b[5], b[6]);
    break;
  case 8:
    result = reinterpret_cast<int (*)(B, B, B, B, B, B, B, B)>(f)(
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
    break;
  case 9:
    result = reinterpret_cast<int (*)(B, B, B, B, B, B, B, B, B)>(f)(
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]);
    break;
  case 10:
    result = reinterpret_cast<int (*)(B, B, B, B, B, B, B, B, B, B)>(f)(
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9]);
    break;
  case 11:
    result = reinterpret_cast<int (*)(B, B, B, B, B, B, B, B, B, B, B)>(f)(
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10]);
    break;
  default:
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + " called with " +
                      std::to_string(b.size()) + " buffers");
  }
  if (result != 0) {
    std::string detail = shadows::takeLastDeviceError();
    return Status(StatusCode::KernelFailed,
                  "kernel " + kernel.name + " failed with Halide error " +
                      std::to_string(result) +
                      (detail.empty() ? "" : ": " + detail));
  }
  if (onDevice)
    if (Status s = onDevice->finish(); !s)
      return Status(s.code(), "kernel " + kernel.name + ": " + s.message());
  return Status::ok();
}

} // namespace attn::runtime
