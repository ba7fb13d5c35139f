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
#include "attn/runtime/Placed.h"
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
  /// Expert kernels: the grouped variant over the whole stack of experts
  /// (`<name>_experts`, LinearCall::experts), null when the table has none.
  void (*grouped)(void) = nullptr;
  KernelMetadata groupedMetadata = nullptr;
  explicit operator bool() const { return function != nullptr; }
};

/// How a kernel indexes an argument: up to 4 dimensions, innermost first,
/// strides in elements.
class BufferShape {
public:
  struct Dim {
    int64_t extent, stride;
  };
  BufferShape(std::initializer_list<Dim> dims);
  const Dim *begin() const { return dims_; }
  const Dim *end() const { return dims_ + rank_; }
  /// False past 4 dimensions.
  bool valid() const { return valid_; }

private:
  Dim dims_[4]{};
  int rank_ = 0;
  bool valid_ = true;
};

/// A halide_buffer_t over caller-owned memory.
class BufferView {
public:
  BufferView(Placed<const void> data, halide_type_t type,
             const BufferShape &shape);
  BufferView(const BufferView &) = delete;
  BufferView &operator=(const BufferView &) = delete;
  halide_buffer_t *get() { return &buffer_; }
  /// The device copy of the memory it views (null: none).
  DeviceCopy *copy() const { return copy_; }
  /// False when an extent or stride does not fit Halide's int32 indexing.
  bool valid() const { return valid_; }

private:
  halide_buffer_t buffer_{};
  halide_dimension_t dims_[4]{};
  DeviceCopy *copy_ = nullptr;
  bool valid_ = true;
};

inline halide_type_t float32Type() { return {halide_type_float, 32, 1}; }
inline halide_type_t float16Type() { return {halide_type_float, 16, 1}; }
inline halide_type_t bfloat16Type() { return {halide_type_bfloat, 16, 1}; }
inline halide_type_t int32Type() { return {halide_type_int, 32, 1}; }

/// The kernel argument `name` (the names schedules/KernelAbi.cpp declares,
/// and the kernel's Halide metadata carries): its memory, element type and
/// shape.
struct KernelArg {
  const char *name;
  Placed<const void> data;
  halide_type_t type;
  BufferShape shape;
};

/// The most buffers a generated kernel takes.
constexpr size_t kMaxKernelArgs = 11;

/// Calls `kernel` with `args` (3 to kMaxKernelArgs buffers, by name, in any
/// order: the kernel's metadata orders them, and refuses a missing, extra or
/// differently typed one).
/// A non-zero Halide status becomes KernelFailed naming the kernel. With
/// `device`, `kernel` is a GPU kernel: arguments whose memory has a device
/// copy are passed as it, others copied in and out for the call
/// (DeviceCopy.h); without, arguments with device copies are brought back
/// to the host first.
Status callKernel(const Kernel &kernel, const std::vector<KernelArg> &args,
                  const DeviceApi *device = nullptr);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_KERNELCALL_H
