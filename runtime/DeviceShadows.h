//===- DeviceShadows.h - device copies of host allocations ------*- C++ -*-===//
//
// A model loaded for a GPU runs its kernels on device memory. Every host
// allocation a kernel reads or writes in place (weights, KV page pools, the
// Workspace's activations) gets a shadow: one device allocation of the same
// size, kept for the allocation's life. A kernel argument whose host
// pointer is the start of a shadowed allocation is passed as that device
// memory, so nothing is copied between kernels; any other argument (token
// ids, positions, cache slots, block tables, the caller's logits) is copied
// in, or out, for the call.
//
// Coherence is the shadow's two dirty bits, as Halide keeps them for one
// buffer: a kernel's output makes the device side newer; host code that
// reads or writes shadowed memory (traces, KvCache::write for plans
// without a fused append) calls hostReads / hostWrites first, which copies
// the device side back when it is newer and marks the host side newer
// after a write, so the next kernel uploads it. Those paths cost
// whole-allocation copies; prefill, decode steps, cross-attention K/V
// storage and copy-on-write (copyBytes) touch none of them.
//
// One process-wide registry keyed by host address: the hooks cost an
// atomic load when nothing is shadowed (every CPU-only run).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_DEVICESHADOWS_H
#define ATTN_RUNTIME_DEVICESHADOWS_H

#include "attn/runtime/DeviceApi.h"
#include "attn/runtime/Status.h"

#include <cstddef>
#include <vector>

namespace attn::runtime::shadows {

/// Gives [host, host + bytes) a device shadow on `api`'s device (a no-op if
/// it has one of at least that size). With `hostHasData` its host contents
/// are uploaded before the first kernel uses it (weights, KV pools); without,
/// the device side starts undefined (scratch activations, which kernels
/// write before they read). Shadows overlapping the range are dropped
/// (memory freed and reused by a new allocation).
Status track(const DeviceApi &api, const void *host, size_t bytes,
             bool hostHasData);

/// Drops the shadow starting at `host`, if any (the allocation is going
/// away or moving).
void forget(const void *host);

/// Host code is about to read (write) the allocation containing `host`: a
/// newer device side is copied back first (and after a write, the host side
/// is the newer). No-ops for memory without a shadow.
void hostReads(const void *host);
void hostWrites(const void *host);

/// The arguments of one kernel call on `api`'s device: attach() describes
/// each buffer's device memory before the call (a shadow, or a temporary
/// copy of host memory), finish() records the outputs and copies
/// temporaries' results back afterwards.
class KernelCallOnDevice {
public:
  explicit KernelCallOnDevice(const DeviceApi &api) : api_(api) {}
  KernelCallOnDevice(const KernelCallOnDevice &) = delete;
  KernelCallOnDevice &operator=(const KernelCallOnDevice &) = delete;
  ~KernelCallOnDevice(); ///< frees the temporaries

  Status attach(halide_buffer_t &buffer, bool output);
  Status finish();

private:
  struct Argument {
    halide_buffer_t *buffer;
    bool output, temporary;
  };
  const DeviceApi &api_;
  std::vector<Argument> arguments_;
};

/// Copies the region `to` describes from `from` on the device (both must
/// start at shadowed allocations; mins place `to` inside `from`), as
/// std::memcpy would on the host.
Status copyOnDevice(const DeviceApi &api, halide_buffer_t &from,
                    halide_buffer_t &to);

/// std::memcpy(to, from, bytes) on the device when both ranges lie in
/// allocations with device copies (`done` set), e.g. a KV page copied on
/// write; `done` false, nothing copied, when either has none (or an offset
/// exceeds Halide's 32-bit extents): the caller copies on the host.
Status copyBytes(const void *from, void *to, size_t bytes, bool &done);

/// The last error Halide's runtime reported on this thread (CPU and device
/// runs install a handler that records it instead of aborting).
std::string takeLastDeviceError();
void installErrorHandler(const DeviceApi &api);
/// The handler itself, for the CPU path (KernelCall.cpp).
void recordHalideError(void *userContext, const char *message);

} // namespace attn::runtime::shadows

#endif // ATTN_RUNTIME_DEVICESHADOWS_H
