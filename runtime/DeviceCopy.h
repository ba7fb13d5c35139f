//===- DeviceCopy.h - a host allocation's copy on a device ------*- C++ -*-===//
//
// A model loaded for a GPU runs its kernels on device memory. Each host
// allocation a kernel reads or writes in place keeps its own DeviceCopy:
// the weight arrays (ModelWeights.h), the KV cache's page pools
// (KvCache.h), the execution context's activations (ContextBuffers.h). A
// kernel argument whose memory names its owner's copy (Placed<T>,
// KernelCall.h) is passed as that device memory, so nothing is copied
// between kernels; any other argument (token ids, positions, cache slots,
// block tables, the caller's logits) is copied in, or out, for the call.
//
// Coherence is the copy's two dirty bits, as Halide keeps them for one
// buffer: a kernel's output makes the device side newer; host code that
// reads or writes the allocation (traces, KvCache::write for plans without
// a fused append, a CPU kernel over a cache a GPU model filled) calls
// hostReads / hostWrites first, which copies the device side back when it
// is newer and marks the host side newer after a write, so the next kernel
// uploads it. Those paths cost whole-allocation copies; prefill, decode
// steps, cross-attention K/V storage and copy-on-write (copyWithin) touch
// none of them.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_DEVICECOPY_H
#define ATTN_RUNTIME_DEVICECOPY_H

#include "attn/runtime/DeviceApi.h"
#include "attn/runtime/Status.h"

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace attn::runtime {

/// One host allocation's device copy. Not movable: kernel arguments point
/// at it; owners hold it by value in a fixed place or by unique_ptr.
class DeviceCopy {
public:
  DeviceCopy() = default;
  DeviceCopy(const DeviceCopy &) = delete;
  DeviceCopy &operator=(const DeviceCopy &) = delete;
  ~DeviceCopy() { release(); }

  /// Gives [host, host + bytes) its copy on `api`'s device, replacing one
  /// of another allocation (the owner's memory moved or grew). With
  /// `hostHasData` the host contents go up before the first kernel reads
  /// them (weights, KV pools); without, the device side starts undefined
  /// (activations, which kernels write before they read).
  Status allocate(const DeviceApi &api, const void *host, size_t bytes,
                  bool hostHasData);
  /// Frees the device memory (the owner's memory is going away).
  void release();

  /// Host code is about to read (write) the allocation: a newer device side
  /// is copied back first (and after a write, the host side is the newer).
  void hostReads();
  void hostWrites();

  /// std::memcpy within the allocation, on the device (`done` set), e.g. a
  /// KV page copied on write; `done` false, nothing copied, without device
  /// memory or past Halide's 32-bit extents: the caller copies on the host.
  Status copyWithin(size_t fromOffset, size_t toOffset, size_t bytes,
                    bool &done);

private:
  friend class KernelCallOnDevice;
  friend Status copyOnDevice(const DeviceApi &, DeviceCopy &, halide_buffer_t &,
                             DeviceCopy &, halide_buffer_t &);
  /// Makes the device side current (uploads a newer host side). Locked.
  Status upload();
  /// Makes the host side current. Locked.
  void download();
  /// `buffer` (a view starting at the allocation's start) as this device
  /// memory, uploaded first. Locked.
  Status describe(halide_buffer_t &buffer);

  std::mutex mutex_; // contexts on other threads share weights and caches
  const DeviceApi *api_ = nullptr;
  size_t bytes_ = 0;
  /// The whole allocation as bytes, [chunk][bytes / chunk] (Halide extents
  /// are int32); its host_dirty / device_dirty flags say which side is
  /// newer.
  halide_buffer_t buffer_{};
  halide_dimension_t dims_[2]{};
};

/// The arguments of one kernel call on `api`'s device: attach() describes
/// each buffer's device memory before the call (its owner's copy, or a
/// temporary copy of host memory), finish() records the outputs and copies
/// temporaries' results back afterwards.
class KernelCallOnDevice {
public:
  explicit KernelCallOnDevice(const DeviceApi &api) : api_(api) {}
  KernelCallOnDevice(const KernelCallOnDevice &) = delete;
  KernelCallOnDevice &operator=(const KernelCallOnDevice &) = delete;
  ~KernelCallOnDevice(); ///< frees the temporaries

  /// `copy`: the device copy of the memory `buffer` starts at (null: none).
  Status attach(halide_buffer_t &buffer, DeviceCopy *copy, bool output);
  Status finish();

private:
  struct Argument {
    halide_buffer_t *buffer;
    DeviceCopy *copy; // null: a temporary
    bool output;
  };
  const DeviceApi &api_;
  std::vector<Argument> arguments_;
};

/// Copies the region `to` describes from `from` on the device (views that
/// start at their copies' allocations; mins place `to` inside `from`), as
/// std::memcpy would on the host.
Status copyOnDevice(const DeviceApi &api, DeviceCopy &fromCopy,
                    halide_buffer_t &from, DeviceCopy &toCopy,
                    halide_buffer_t &to);

/// The last error Halide's runtime reported on this thread (CPU and device
/// runs install a handler that records it instead of aborting).
std::string takeLastDeviceError();
void installErrorHandler(const DeviceApi &api);
/// The handler itself, for the CPU path (KernelCall.cpp).
void recordHalideError(void *userContext, const char *message);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_DEVICECOPY_H
