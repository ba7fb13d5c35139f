//===- KernelCall.cpp - calling generated kernels through Halide buffers --===//

#include "attn/runtime/KernelCall.h"

#include "DeviceCopy.h"
#include "attn/runtime/KernelTemporaries.h"

#include <climits>
#include <cstring>
#include <mutex>
#include <optional>

// The Halide runtime linked with a model library (weak: a program without
// one leaves it null). Its default error handler calls abort(); a kernel
// whose buffers break a constraint (a plan edited against its kernels)
// must instead fail its call, with Halide's message. Its temporaries come
// from the runtime's cache (KernelTemporaries.h), as ModelLibrary arranges
// for a library it opens.
#pragma weak halide_set_error_handler
#pragma weak halide_set_custom_malloc
#pragma weak halide_set_custom_free

namespace attn::runtime {

BufferShape::BufferShape(std::initializer_list<Dim> dims) {
  for (const Dim &dim : dims) {
    if (rank_ == 4) {
      valid_ = false;
      break;
    }
    dims_[rank_++] = dim;
  }
}

BufferView::BufferView(Placed<const void> data, halide_type_t type,
                       const BufferShape &shape)
    : copy_(data.copy), valid_(shape.valid()) {
  int d = 0;
  for (const BufferShape::Dim &dim : shape) {
    if (dim.extent < 1 || dim.extent > INT32_MAX || dim.stride > INT32_MAX ||
        dim.stride < 0) {
      valid_ = false;
      break;
    }
    dims_[d].min = 0;
    dims_[d].extent = int32_t(dim.extent);
    dims_[d].stride = int32_t(dim.stride);
    dims_[d].flags = 0;
    d++;
  }
  buffer_.host = static_cast<uint8_t *>(const_cast<void *>(data.data));
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

/// The argument name as attnc declared it: Halide makes a pipeline's output
/// names unique in the compiling process ("output$3").
std::string declaredName(const char *name) {
  std::string s(name);
  return s.substr(0, s.find('$'));
}

/// The `views` of `args` in the order `kernel` was generated to take them
/// (its metadata), each checked to be of the element type and dimensions it
/// expects. A kernel called through a type-erased pointer with other arguments
/// would read garbage; a plan edited by hand, or a header and a library from
/// different attnc runs, is an error here instead. A bf16 pool given to a
/// kernel that takes uint16 (GPU kernels keep bf16 as its bits: Halide 14
/// has no bfloat loads on NVPTX or OpenCL) is retyped, the same bytes.
Status orderArguments(const Kernel &kernel,
                      const halide_filter_metadata_t *metadata,
                      const std::vector<KernelArg> &args,
                      std::optional<BufferView> *views,
                      std::vector<BufferView *> &ordered) {
  const std::string disagree = " (plan and kernels disagree)";
  std::vector<bool> used(args.size(), false);
  for (int i = 0; i < metadata->num_arguments; i++) {
    const halide_filter_argument_t &expected = metadata->arguments[i];
    const std::string name = declaredName(expected.name);
    size_t a = 0;
    while (a < args.size() && name != args[a].name)
      a++;
    if (a == args.size() || expected.kind == halide_argument_kind_input_scalar)
      return Status(StatusCode::InvalidArgument,
                    "kernel " + kernel.name + " takes '" + name + "', a " +
                        describe(expected.type, expected.dimensions) +
                        " buffer; the plan gives it none" + disagree);
    used[a] = true;
    halide_buffer_t &given = *views[a]->get();
    if (given.type.code == halide_type_bfloat && given.type.bits == 16 &&
        expected.type.code == halide_type_uint && expected.type.bits == 16)
      given.type.code = halide_type_uint;
    if (expected.dimensions != given.dimensions ||
        expected.type.code != given.type.code ||
        expected.type.bits != given.type.bits)
      return Status(StatusCode::InvalidArgument,
                    "kernel " + kernel.name + " argument '" + name +
                        "' is a " +
                        describe(expected.type, expected.dimensions) +
                        " buffer; the plan gives it a " +
                        describe(given.type, given.dimensions) + " one" +
                        disagree);
    ordered.push_back(&*views[a]);
  }
  for (size_t a = 0; a < args.size(); a++)
    if (!used[a])
      return Status(StatusCode::InvalidArgument,
                    "kernel " + kernel.name + " takes no '" + args[a].name +
                        "'; the plan gives it one" + disagree);
  return Status::ok();
}
} // namespace

Status callKernel(const Kernel &kernel, const std::vector<KernelArg> &args,
                  const DeviceApi *device) {
  static std::once_flag handlerInstalled;
  std::call_once(handlerInstalled, [] {
    if (&halide_set_error_handler != nullptr)
      halide_set_error_handler(recordHalideError);
    if (&halide_set_custom_malloc != nullptr &&
        &halide_set_custom_free != nullptr) {
      halide_set_custom_malloc(allocateKernelTemporary);
      halide_set_custom_free(freeKernelTemporary);
    }
  });
  const halide_filter_metadata_t *metadata =
      kernel.metadata ? kernel.metadata() : nullptr;
  if (!metadata)
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + " has no metadata");
  if (args.size() > kMaxKernelArgs)
    return Status(StatusCode::InvalidArgument,
                  "kernel " + kernel.name + " called with " +
                      std::to_string(args.size()) + " buffers");
  std::optional<BufferView> views[kMaxKernelArgs];
  for (size_t a = 0; a < args.size(); a++)
    views[a].emplace(args[a].data, args[a].type, args[a].shape);
  std::vector<BufferView *> ordered;
  if (Status s = orderArguments(kernel, metadata, args, views, ordered); !s)
    return s;
  auto isOutput = [&](size_t i) {
    return metadata->arguments[i].kind == halide_argument_kind_output_buffer;
  };
  std::vector<halide_buffer_t *> b;
  std::vector<DeviceCopy *> copies;
  for (BufferView *arg : ordered) {
    copies.push_back(arg->copy());
    if (!arg->valid())
      return Status(StatusCode::InvalidArgument,
                    "a buffer of kernel " + kernel.name +
                        " exceeds 32-bit indexing");
    b.push_back(arg->get());
  }
  std::optional<KernelCallOnDevice> onDevice;
  if (device) {
    onDevice.emplace(*device);
    for (size_t i = 0; i < b.size(); i++)
      if (Status s = onDevice->attach(*b[i], copies[i], isOutput(i)); !s)
        return Status(s.code(), "kernel " + kernel.name + ": " + s.message());
  } else {
    // A CPU kernel over memory a GPU model also used (a cache it filled):
    // the device's newer side comes back first, and what the kernel writes
    // goes up before the next device kernel.
    for (size_t i = 0; i < b.size(); i++)
      if (copies[i])
        isOutput(i) ? copies[i]->hostWrites() : copies[i]->hostReads();
  }
  using B = halide_buffer_t *;
  void (*f)(void) = kernel.function;
  int result;
  (void)takeLastDeviceError(); // nothing stale in this call's report
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
    std::string detail = takeLastDeviceError();
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
