//===- CApiSupport.h - status and exception handling of the C APIs -*- C++ -*-===//
//
// Shared by the runtime's C API (CApi.cpp) and the tokenizer's
// (tokenizer/TokenizerCApi.cpp): one per-thread last-error message, and the
// rule that no exception crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_CAPI_SUPPORT_H
#define ATTN_RUNTIME_CAPI_SUPPORT_H

#include "attn/runtime/Status.h"
#include "attn/runtime/attn_runtime.h"

#include <new>
#include <stdexcept>
#include <string>

namespace attn::runtime::capi {

/// What attn_last_error() returns on this thread.
std::string &lastError();

inline attn_status report(const Status &status) {
  if (!status.isOk())
    lastError() = status.message();
  return static_cast<attn_status>(status.code());
}

inline attn_status invalid(const char *message) {
  lastError() = message;
  return ATTN_INVALID_ARGUMENT;
}

/// Runs a C API function's body: no exception crosses the C boundary (an
/// allocation too large for the machine is ATTN_OUT_OF_MEMORY, anything
/// else thrown below is reported with its message).
template <class Body>
attn_status guarded(const char *function, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    lastError() = std::string(function) + ": out of memory";
    return ATTN_OUT_OF_MEMORY;
  } catch (const std::length_error &) {
    lastError() = std::string(function) + ": out of memory (a size too large)";
    return ATTN_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    lastError() = std::string(function) + ": " + e.what();
    return ATTN_INVALID_ARGUMENT;
  } catch (...) {
    lastError() = std::string(function) + ": an unknown exception";
    return ATTN_INVALID_ARGUMENT;
  }
}

} // namespace attn::runtime::capi

#endif // ATTN_RUNTIME_CAPI_SUPPORT_H
