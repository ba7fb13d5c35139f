//===- KernelCall.h - calling generated kernels through Halide buffers -*- C++
//-*-===//
//
// Generated kernels take halide_buffer_t arguments (HalideRuntime.h). This
// describes plain arrays as such buffers (extents and strides innermost
// first, as Halide orders them) and calls a type-erased kernel from an
// attnc kernel table with its arguments.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_KERNELCALL_H
#define ATTN_RUNTIME_KERNELCALL_H

#include "attn/runtime/DeviceApi.h"
#include "attn/runtime/Status.h"

#include "HalideRuntime.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace attn::runtime {

/// Halide's description of a generated function's arguments
/// (`<function>_metadata`).
using KernelMetadata = const halide_filter_metadata_t *(*)(void);

/// One entry of a generated `<model>_kernel_table` (attnc_library.h,
/// shared with attnc): the kernel's name, its function, type-erased, and
/// its metadata.
using KernelEntry = ::attnc_kernel_entry;

/// A kernel resolved from a table.
struct Kernel {
  std::string name;
  void (*function)(void) = nullptr;
  KernelMetadata metadata = nullptr;
  /// Linear kernels: the variant for one or two tokens (`<name>_gemv`),
  /// null when the table has none.
  void (*fewTokens)(void) = nullptr;
  KernelMetadata fewTokensMetadata = nullptr;
  explicit operator bool() const { return function != nullptr; }
};

/// A halide_buffer_t over caller-owned memory, up to 4 dimensions.
class BufferView {
public:
  struct Dim {
    int64_t extent, stride;
  };
  /// Dimensions innermost first; strides in elements.
  BufferView(const void *data, halide_type_t type, std::initializer_list<Dim>);
  BufferView(const BufferView &) = delete;
  BufferView &operator=(const BufferView &) = delete;
  halide_buffer_t *get() { return &buffer_; }
  /// False when an extent or stride does not fit Halide's int32 indexing.
  bool valid() const { return valid_; }

private:
  halide_buffer_t buffer_{};
  halide_dimension_t dims_[4]{};
  bool valid_ = true;
};

inline halide_type_t float32Type() { return {halide_type_float, 32, 1}; }
inline halide_type_t float16Type() { return {halide_type_float, 16, 1}; }
inline halide_type_t bfloat16Type() { return {halide_type_bfloat, 16, 1}; }
inline halide_type_t int32Type() { return {halide_type_int, 32, 1}; }

/// A buffer for the kernel argument `name`: the names schedules/KernelAbi.cpp
/// declares (and the kernel's Halide metadata carries).
struct KernelArg {
  const char *name;
  BufferView *buffer;
};

/// Calls `kernel` with `args` (3 to 11 buffers, by name, in any order: the
/// kernel's metadata orders them, and refuses a missing, extra or
/// differently typed one).
/// A non-zero Halide status becomes KernelFailed naming the kernel. With
/// `device`, `kernel` is a GPU kernel: arguments over shadowed allocations
/// are passed as their device memory, others copied in and out for the
/// call (DeviceShadows.h).
Status callKernel(const Kernel &kernel, const std::vector<KernelArg> &args,
                  const DeviceApi *device = nullptr);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_KERNELCALL_H
