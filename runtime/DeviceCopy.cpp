//===- DeviceCopy.cpp - a host allocation's copy on a device --------------===//

#include "DeviceCopy.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace attn::runtime {

namespace {
std::atomic<uint64_t> copiesToDevice{0}, copiesToHost{0};
thread_local std::string lastDeviceError;

Status deviceError(const std::string &what) {
  std::string detail = takeLastDeviceError();
  return Status(StatusCode::KernelFailed,
                what + (detail.empty() ? "" : ": " + detail));
}

bool flag(const halide_buffer_t &buffer, halide_buffer_flags which) {
  return (buffer.flags & which) != 0;
}

void setFlag(halide_buffer_t &buffer, halide_buffer_flags which, bool on) {
  buffer.flags = on ? buffer.flags | which : buffer.flags & ~uint64_t(which);
}
} // namespace

void recordHalideError(void *, const char *message) {
  lastDeviceError += message;
}

std::string takeLastDeviceError() {
  std::string message = std::move(lastDeviceError);
  lastDeviceError.clear();
  return message;
}

void installErrorHandler(const DeviceApi &api) {
  api.set_error_handler(recordHalideError);
}

DeviceResidentCopies deviceResidentCopies() {
  return {copiesToDevice.load(), copiesToHost.load()};
}

Status DeviceCopy::allocate(const DeviceApi &api, const void *host,
                            size_t bytes, bool hostHasData) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer_.device && buffer_.host == host && bytes_ == bytes && api_ == &api)
    return Status::ok();
  if (buffer_.device)
    api_->device_free(nullptr, &buffer_);
  buffer_ = {};
  bytes_ = 0;
  if (!host || bytes == 0)
    return Status::ok();
  size_t chunk = size_t(1) << 20;
  while (bytes % chunk)
    chunk >>= 1;
  if (bytes / chunk > size_t(INT32_MAX))
    return Status(StatusCode::InvalidArgument,
                  "a device allocation of " + std::to_string(bytes) +
                      " bytes exceeds Halide's 32-bit extents");
  dims_[0] = {0, int32_t(chunk), 1, 0};
  dims_[1] = {0, int32_t(bytes / chunk), int32_t(chunk), 0};
  buffer_.host = static_cast<uint8_t *>(const_cast<void *>(host));
  buffer_.type = {halide_type_uint, 8, 1};
  buffer_.dimensions = 2;
  buffer_.dim = dims_;
  if (api.device_malloc(nullptr, &buffer_, api.device_interface()) != 0) {
    buffer_ = {};
    return Status(StatusCode::OutOfMemory,
                  "allocating " + std::to_string(bytes) + " bytes on the " +
                      api.name + " device failed: " + takeLastDeviceError());
  }
  api_ = &api;
  bytes_ = bytes;
  setFlag(buffer_, halide_buffer_flag_host_dirty, hostHasData);
  return Status::ok();
}

void DeviceCopy::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer_.device)
    api_->device_free(nullptr, &buffer_);
  buffer_ = {};
  bytes_ = 0;
}

Status DeviceCopy::upload() {
  if (!flag(buffer_, halide_buffer_flag_host_dirty))
    return Status::ok();
  copiesToDevice++;
  if (api_->copy_to_device(nullptr, &buffer_, api_->device_interface()) != 0)
    return deviceError("copying " + std::to_string(bytes_) +
                       " bytes to the device failed");
  return Status::ok();
}

void DeviceCopy::download() {
  if (!buffer_.device || !flag(buffer_, halide_buffer_flag_device_dirty))
    return;
  copiesToHost++;
  api_->copy_to_host(nullptr, &buffer_);
}

void DeviceCopy::hostReads() {
  std::lock_guard<std::mutex> lock(mutex_);
  download();
}

void DeviceCopy::hostWrites() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!buffer_.device)
    return;
  download();
  setFlag(buffer_, halide_buffer_flag_host_dirty, true);
}

Status DeviceCopy::describe(halide_buffer_t &buffer) {
  if (!buffer_.device)
    return Status(StatusCode::InvalidArgument,
                  "a device kernel argument whose memory has no device copy");
  if (buffer.host != buffer_.host)
    return Status(StatusCode::InvalidArgument,
                  "a device kernel argument starts inside an allocation, not "
                  "at its start (the runtime copies such views first)");
  if (Status s = upload(); !s)
    return s;
  buffer.device = buffer_.device;
  buffer.device_interface = buffer_.device_interface;
  return Status::ok();
}

Status DeviceCopy::copyWithin(size_t fromOffset, size_t toOffset, size_t bytes,
                              bool &done) {
  done = false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!buffer_.device || bytes == 0)
    return Status::ok();
  if (fromOffset + bytes > bytes_ || toOffset + bytes > bytes_)
    return Status(StatusCode::InvalidArgument,
                  "a device copy past the end of an allocation");
  if (fromOffset + bytes > size_t(INT32_MAX) ||
      toOffset + bytes > size_t(INT32_MAX))
    return Status::ok();
  if (Status s = upload(); !s)
    return s;
  // Each range as a crop of the allocation (a one-dimensional byte alias
  // of it, cropped at the offset), then rebased to 0 so that Halide copies
  // the one onto the other.
  const size_t offsets[2] = {fromOffset, toOffset};
  halide_dimension_t aliasDims[2], viewDims[2];
  halide_buffer_t alias[2]{}, view[2]{};
  int cropped = 0;
  Status status;
  for (; cropped < 2; cropped++) {
    aliasDims[cropped] = {0, int32_t(offsets[cropped] + bytes), 1, 0};
    viewDims[cropped] = {int32_t(offsets[cropped]), int32_t(bytes), 1, 0};
    for (halide_buffer_t *b : {&alias[cropped], &view[cropped]}) {
      b->type = {halide_type_uint, 8, 1};
      b->dimensions = 1;
    }
    alias[cropped].host = buffer_.host;
    alias[cropped].device = buffer_.device;
    alias[cropped].device_interface = buffer_.device_interface;
    alias[cropped].dim = &aliasDims[cropped];
    view[cropped].host = buffer_.host + offsets[cropped];
    view[cropped].dim = &viewDims[cropped];
    if (api_->device_crop(nullptr, &alias[cropped], &view[cropped]) != 0) {
      status = deviceError("cropping a device allocation failed");
      break;
    }
    viewDims[cropped].min = 0;
  }
  if (status && api_->buffer_copy(nullptr, &view[0], api_->device_interface(),
                                  &view[1]) != 0)
    status = deviceError("a copy on the device failed");
  for (int i = 0; i < cropped; i++)
    api_->device_release_crop(nullptr, &view[i]);
  if (!status)
    return status;
  setFlag(buffer_, halide_buffer_flag_device_dirty, true);
  done = true;
  return Status::ok();
}

KernelCallOnDevice::~KernelCallOnDevice() {
  for (Argument &argument : arguments_)
    if (!argument.copy && argument.buffer->device)
      api_.device_free(nullptr, argument.buffer);
}

Status KernelCallOnDevice::attach(halide_buffer_t &buffer, DeviceCopy *copy,
                                  bool output) {
  if (!copy) {
    // Host memory of the call's own: copied in (inputs), or allocated on the
    // device and copied back by finish() (outputs).
    setFlag(buffer, halide_buffer_flag_host_dirty, !output);
    arguments_.push_back({&buffer, nullptr, output});
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(copy->mutex_);
  if (Status s = copy->describe(buffer); !s)
    return s;
  // A newer device side stays marked: should Halide read this buffer on the
  // host, it copies it back first.
  buffer.flags = copy->buffer_.flags;
  arguments_.push_back({&buffer, copy, output});
  return Status::ok();
}

Status KernelCallOnDevice::finish() {
  for (Argument &argument : arguments_) {
    halide_buffer_t &buffer = *argument.buffer;
    if (!argument.copy) {
      if (argument.output && api_.copy_to_host(nullptr, &buffer) != 0)
        return deviceError("copying a kernel's output to the host failed");
      continue;
    }
    if (!argument.output)
      continue;
    if (flag(buffer, halide_buffer_flag_host_dirty))
      return Status(StatusCode::KernelFailed,
                    "a device kernel wrote its output on the host");
    std::lock_guard<std::mutex> lock(argument.copy->mutex_);
    setFlag(argument.copy->buffer_, halide_buffer_flag_device_dirty, true);
  }
  return Status::ok();
}

Status copyOnDevice(const DeviceApi &api, DeviceCopy &fromCopy,
                    halide_buffer_t &from, DeviceCopy &toCopy,
                    halide_buffer_t &to) {
  if (&fromCopy == &toCopy)
    return Status(StatusCode::InvalidArgument,
                  "a device copy within one allocation");
  {
    std::scoped_lock lock(fromCopy.mutex_, toCopy.mutex_);
    if (Status s = fromCopy.describe(from); !s)
      return s;
    if (Status s = toCopy.describe(to); !s)
      return s;
    from.flags = to.flags = 0;
  }
  if (api.buffer_copy(nullptr, &from, api.device_interface(), &to) != 0)
    return deviceError("a copy on the device failed");
  std::lock_guard<std::mutex> lock(toCopy.mutex_);
  setFlag(toCopy.buffer_, halide_buffer_flag_device_dirty, true);
  return Status::ok();
}

} // namespace attn::runtime
