//===- ModelLibrary.cpp - a model's kernels and plan, linked or loaded ----===//

#include "attn/runtime/ModelLibrary.h"

#include "DeviceCopy.h"
#include "HostTarget.h"
#include "attn/runtime/KernelTemporaries.h"
#include "attn/runtime/Version.h"

#include <dlfcn.h>

namespace attn::runtime {

namespace {

/// Whether this runtime can run `library`; `where` names it in messages.
Status check(const attnc_model_library &library, const std::string &where) {
  auto refuse = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument, where + ": " + why);
  };
  if (library.abi != ATTNC_LIBRARY_ABI)
    return refuse("written with model-library ABI " +
                  std::to_string(library.abi) + "; this runtime reads ABI " +
                  std::to_string(ATTNC_LIBRARY_ABI) +
                  ": rebuild it with this runtime's attnc");
  std::string version = library.attnc_version ? library.attnc_version : "?";
  if (version != ATTNC_VERSION)
    return refuse("built by attnc " + version + "; this runtime is attnc " +
                  ATTNC_VERSION + ": rebuild it with this runtime's attnc");
  if (!library.plan_json || !library.kernels || !library.name ||
      !library.cpu_targets || !library.set_error_handler ||
      !library.set_custom_malloc || !library.set_custom_free)
    return refuse("an incomplete model library (null fields)");
  // The last CPU target is the one the kernels fall back to.
  std::string targets = library.cpu_targets;
  if (!targets.empty()) {
    std::string fallback = targets.substr(targets.rfind(',') + 1);
    if (std::string why = whyHostCannotRun(fallback); !why.empty())
      return refuse("cannot run here: " + why + " (built for " + targets +
                    "; rebuild it on this machine, or for a target list "
                    "ending in a baseline such as x86-64)");
  }
  return Status::ok();
}

/// Points the library's own Halide runtime at this runtime's error record
/// and temporary-buffer cache.
void hookRuntime(const attnc_model_library &library) {
  library.set_error_handler(recordHalideError);
  library.set_custom_malloc(allocateKernelTemporary);
  library.set_custom_free(freeKernelTemporary);
}

} // namespace

Status ModelLibrary::open(const std::string &path,
                          std::shared_ptr<const ModelLibrary> &library) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Status(StatusCode::IoError,
                  path + ": cannot be loaded: " + (why ? why : "dlopen failed"));
  }
  std::shared_ptr<ModelLibrary> result(new ModelLibrary());
  result->handle_ = handle;
  result->path_ = path;
  using Entry = const attnc_model_library *(*)(void);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, ATTNC_LIBRARY_SYMBOL));
  if (!entry)
    return Status(StatusCode::InvalidArgument,
                  path + ": not an attnc model library (it exports no " +
                      ATTNC_LIBRARY_SYMBOL + "(); attnc --shared writes one)");
  result->descriptor_ = entry();
  if (!result->descriptor_)
    return Status(StatusCode::InvalidArgument,
                  path + ": " + ATTNC_LIBRARY_SYMBOL + "() returned null");
  if (Status status = check(*result->descriptor_, path); !status)
    return status;
  // Its kernels run on their own copy of Halide's runtime.
  hookRuntime(*result->descriptor_);
  library = std::move(result);
  return Status::ok();
}

Status ModelLibrary::linked(const attnc_model_library &descriptor,
                            std::shared_ptr<const ModelLibrary> &library) {
  std::string where = std::string("model library '") +
                      (descriptor.name ? descriptor.name : "?") + "'";
  if (Status status = check(descriptor, where); !status)
    return status;
  std::shared_ptr<ModelLibrary> result(new ModelLibrary());
  result->descriptor_ = &descriptor;
  hookRuntime(descriptor);
  library = std::move(result);
  return Status::ok();
}

ModelLibrary::~ModelLibrary() {
  if (handle_)
    dlclose(handle_);
}

} // namespace attn::runtime
