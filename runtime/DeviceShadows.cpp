//===- DeviceShadows.cpp - device copies of host allocations --------------===//

#include "DeviceShadows.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace attn::runtime::shadows {

namespace {
/// One host allocation's device copy. `buffer` describes the whole
/// allocation as bytes, [chunk][bytes / chunk] (Halide extents are int32);
/// its host_dirty / device_dirty flags say which side is newer.
struct Shadow {
  const DeviceApi *api = nullptr;
  size_t bytes = 0;
  halide_buffer_t buffer{};
  halide_dimension_t dims[2]{};
};

std::mutex registryMutex;
std::map<uintptr_t, std::unique_ptr<Shadow>> registry; // by host address
std::atomic<size_t> shadowCount{0};
std::atomic<uint64_t> copiesToDevice{0}, copiesToHost{0};
thread_local std::string lastDeviceError;

Status deviceError(const std::string &what) {
  std::string detail = takeLastDeviceError();
  return Status(StatusCode::KernelFailed,
                what + (detail.empty() ? "" : ": " + detail));
}

/// The shadow whose allocation contains `host`, or null. Under the lock.
Shadow *containing(const void *host) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(host);
  auto it = registry.upper_bound(address);
  if (it == registry.begin())
    return nullptr;
  --it;
  return address < it->first + it->second->bytes ? it->second.get() : nullptr;
}

void drop(std::map<uintptr_t, std::unique_ptr<Shadow>>::iterator it) {
  Shadow &shadow = *it->second;
  if (shadow.buffer.device)
    shadow.api->device_free(nullptr, &shadow.buffer);
  registry.erase(it);
  shadowCount--;
}

bool flag(const halide_buffer_t &buffer, halide_buffer_flags which) {
  return (buffer.flags & which) != 0;
}

void setFlag(halide_buffer_t &buffer, halide_buffer_flags which, bool on) {
  buffer.flags = on ? buffer.flags | which : buffer.flags & ~uint64_t(which);
}

/// Makes the device side current (uploads a newer host side).
Status upload(Shadow &shadow) {
  if (!flag(shadow.buffer, halide_buffer_flag_host_dirty))
    return Status::ok();
  copiesToDevice++;
  if (shadow.api->copy_to_device(nullptr, &shadow.buffer,
                               shadow.api->device_interface()) != 0)
    return deviceError("copying " + std::to_string(shadow.bytes) +
                       " bytes to the device failed");
  return Status::ok();
}

} // namespace

void recordHalideError(void *, const char *message) {
  lastDeviceError += message;
}

Status track(const DeviceApi &api, const void *host, size_t bytes,
             bool hostHasData) {
  if (!host || bytes == 0)
    return Status::ok();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(host);
  std::lock_guard<std::mutex> lock(registryMutex);
  auto same = registry.find(begin);
  if (same != registry.end() && same->second->bytes >= bytes &&
      same->second->api == &api)
    return Status::ok();
  // Whatever overlaps is stale: its allocation was freed and reused.
  for (auto it = registry.lower_bound(begin); it != registry.begin();) {
    auto previous = std::prev(it);
    if (previous->first + previous->second->bytes <= begin)
      break;
    drop(previous);
  }
  for (auto it = registry.lower_bound(begin);
       it != registry.end() && it->first < begin + bytes;)
    drop(it++);

  auto shadow = std::make_unique<Shadow>();
  shadow->api = &api;
  shadow->bytes = bytes;
  size_t chunk = size_t(1) << 20;
  while (bytes % chunk)
    chunk >>= 1;
  if (bytes / chunk > size_t(INT32_MAX))
    return Status(StatusCode::InvalidArgument,
                  "a device allocation of " + std::to_string(bytes) +
                      " bytes exceeds Halide's 32-bit extents");
  shadow->dims[0] = {0, int32_t(chunk), 1, 0};
  shadow->dims[1] = {0, int32_t(bytes / chunk), int32_t(chunk), 0};
  halide_buffer_t &buffer = shadow->buffer;
  buffer.host = static_cast<uint8_t *>(const_cast<void *>(host));
  buffer.type = {halide_type_uint, 8, 1};
  buffer.dimensions = 2;
  buffer.dim = shadow->dims;
  if (api.device_malloc(nullptr, &buffer, api.device_interface()) != 0)
    return Status(StatusCode::OutOfMemory,
                  "allocating " + std::to_string(bytes) + " bytes on the " +
                      api.name + " device failed: " + takeLastDeviceError());
  setFlag(buffer, halide_buffer_flag_host_dirty, hostHasData);
  registry[begin] = std::move(shadow);
  shadowCount++;
  return Status::ok();
}

void forget(const void *host) {
  if (shadowCount.load() == 0 || !host)
    return;
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry.find(reinterpret_cast<uintptr_t>(host));
  if (it != registry.end())
    drop(it);
}

namespace {
/// Makes the host side current (copies a newer device side back).
void download(Shadow &shadow) {
  if (!flag(shadow.buffer, halide_buffer_flag_device_dirty))
    return;
  copiesToHost++;
  shadow.api->copy_to_host(nullptr, &shadow.buffer);
}
} // namespace

void hostReads(const void *host) {
  if (shadowCount.load() == 0)
    return;
  std::lock_guard<std::mutex> lock(registryMutex);
  if (Shadow *shadow = containing(host))
    download(*shadow);
}

void hostWrites(const void *host) {
  if (shadowCount.load() == 0)
    return;
  std::lock_guard<std::mutex> lock(registryMutex);
  if (Shadow *shadow = containing(host)) {
    download(*shadow);
    setFlag(shadow->buffer, halide_buffer_flag_host_dirty, true);
  }
}

KernelCallOnDevice::~KernelCallOnDevice() {
  for (Argument &argument : arguments_)
    if (argument.temporary && argument.buffer->device)
      api_.device_free(nullptr, argument.buffer);
}

Status KernelCallOnDevice::attach(halide_buffer_t &buffer, bool output) {
  std::lock_guard<std::mutex> lock(registryMutex);
  Shadow *shadow = containing(buffer.host);
  if (!shadow) {
    // Host memory of the call's own: copied in (inputs), or allocated on the
    // device and copied back by finish() (outputs).
    setFlag(buffer, halide_buffer_flag_host_dirty, !output);
    arguments_.push_back({&buffer, output, /*temporary=*/true});
    return Status::ok();
  }
  if (buffer.host != shadow->buffer.host)
    return Status(StatusCode::InvalidArgument,
                  "a device kernel argument starts inside an allocation, not "
                  "at its start (the runtime copies such views first)");
  if (Status s = upload(*shadow); !s)
    return s;
  buffer.device = shadow->buffer.device;
  buffer.device_interface = shadow->buffer.device_interface;
  // A newer device side stays marked: should Halide read this buffer on the
  // host, it copies it back first.
  buffer.flags = shadow->buffer.flags;
  arguments_.push_back({&buffer, output, /*temporary=*/false});
  return Status::ok();
}

Status KernelCallOnDevice::finish() {
  for (Argument &argument : arguments_) {
    halide_buffer_t &buffer = *argument.buffer;
    if (argument.temporary) {
      if (argument.output && api_.copy_to_host(nullptr, &buffer) != 0)
        return deviceError("copying a kernel's output to the host failed");
      continue;
    }
    if (!argument.output)
      continue;
    std::lock_guard<std::mutex> lock(registryMutex);
    if (Shadow *shadow = containing(buffer.host)) {
      if (flag(buffer, halide_buffer_flag_host_dirty))
        return Status(StatusCode::KernelFailed,
                      "a device kernel wrote its output on the host");
      setFlag(shadow->buffer, halide_buffer_flag_device_dirty, true);
    }
  }
  return Status::ok();
}

Status copyOnDevice(const DeviceApi &api, halide_buffer_t &from,
                    halide_buffer_t &to) {
  Shadow *target = nullptr;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    Shadow *source = containing(from.host);
    target = containing(to.host);
    if (!source || !target || source->buffer.host != from.host ||
        target->buffer.host != to.host)
      return Status(StatusCode::InvalidArgument,
                    "a device copy between buffers that are not whole "
                    "device allocations");
    if (Status s = upload(*source); !s)
      return s;
    if (Status s = upload(*target); !s)
      return s;
    from.device = source->buffer.device;
    from.device_interface = source->buffer.device_interface;
    to.device = target->buffer.device;
    to.device_interface = target->buffer.device_interface;
    from.flags = to.flags = 0;
  }
  if (api.buffer_copy(nullptr, &from, api.device_interface(), &to) != 0)
    return deviceError("a copy on the device failed");
  std::lock_guard<std::mutex> lock(registryMutex);
  setFlag(target->buffer, halide_buffer_flag_device_dirty, true);
  return Status::ok();
}

Status copyBytes(const void *from, void *to, size_t bytes, bool &done) {
  done = false;
  if (shadowCount.load() == 0 || bytes == 0)
    return Status::ok();
  std::lock_guard<std::mutex> lock(registryMutex);
  Shadow *source = containing(from), *target = containing(to);
  if (!source || !target)
    return Status::ok();
  const size_t fromOffset =
                   static_cast<const uint8_t *>(from) - source->buffer.host,
               toOffset = static_cast<uint8_t *>(to) - target->buffer.host;
  if (fromOffset + bytes > source->bytes || toOffset + bytes > target->bytes)
    return Status(StatusCode::InvalidArgument,
                  "a device copy past the end of an allocation");
  if (fromOffset + bytes > size_t(INT32_MAX) ||
      toOffset + bytes > size_t(INT32_MAX))
    return Status::ok();
  if (Status s = upload(*source); !s)
    return s;
  if (Status s = upload(*target); !s)
    return s;
  // Each range as a crop of its allocation (a one-dimensional byte alias of
  // it, cropped at the offset), then rebased to 0 so that Halide copies the
  // one onto the other.
  const DeviceApi &api = *target->api;
  halide_dimension_t aliasDims[2], viewDims[2];
  halide_buffer_t alias[2]{}, view[2]{};
  const Shadow *shadows[2] = {source, target};
  const size_t offsets[2] = {fromOffset, toOffset};
  int cropped = 0;
  Status status;
  for (; cropped < 2; cropped++) {
    const Shadow &shadow = *shadows[cropped];
    aliasDims[cropped] = {0, int32_t(offsets[cropped] + bytes), 1, 0};
    viewDims[cropped] = {int32_t(offsets[cropped]), int32_t(bytes), 1, 0};
    for (halide_buffer_t *b : {&alias[cropped], &view[cropped]}) {
      b->type = {halide_type_uint, 8, 1};
      b->dimensions = 1;
    }
    alias[cropped].host = shadow.buffer.host;
    alias[cropped].device = shadow.buffer.device;
    alias[cropped].device_interface = shadow.buffer.device_interface;
    alias[cropped].dim = &aliasDims[cropped];
    view[cropped].host = shadow.buffer.host + offsets[cropped];
    view[cropped].dim = &viewDims[cropped];
    if (api.device_crop(nullptr, &alias[cropped], &view[cropped]) != 0) {
      status = deviceError("cropping a device allocation failed");
      break;
    }
    viewDims[cropped].min = 0;
  }
  if (status &&
      api.buffer_copy(nullptr, &view[0], api.device_interface(), &view[1]) != 0)
    status = deviceError("a copy on the device failed");
  for (int i = 0; i < cropped; i++)
    api.device_release_crop(nullptr, &view[i]);
  if (!status)
    return status;
  setFlag(target->buffer, halide_buffer_flag_device_dirty, true);
  done = true;
  return Status::ok();
}

std::string takeLastDeviceError() {
  std::string message = std::move(lastDeviceError);
  lastDeviceError.clear();
  return message;
}

void installErrorHandler(const DeviceApi &api) {
  api.set_error_handler(recordHalideError);
}

} // namespace attn::runtime::shadows

namespace attn::runtime {
DeviceResidentCopies deviceResidentCopies() {
  return {shadows::copiesToDevice.load(), shadows::copiesToHost.load()};
}
} // namespace attn::runtime
