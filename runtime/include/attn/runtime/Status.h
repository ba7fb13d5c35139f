//===- Status.h - error reporting of the attnc runtime ----------*- C++ -*-===//
//
// The runtime reports every failure as a Status with a code and a message; it
// never throws, aborts or writes out of bounds on bad input. An operation that
// fails leaves the object it was called on unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_STATUS_H
#define ATTN_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace attn::runtime {

enum class StatusCode {
  Ok = 0,
  InvalidArgument,  ///< a value outside what the call accepts
  NotFound,         ///< an unknown sequence, tensor or file
  CapacityExceeded, ///< a sequence over its maximum length
  OutOfMemory,      ///< no free page or slot left in a pool
  KernelFailed,     ///< a generated kernel returned an error
  IoError,          ///< a file could not be read
};

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_STATUS_H
