//===- ModelLibrary.h - a model's kernels and plan, linked or loaded -*- C++ -*-===//
//
// What Model::load needs from attnc's output, as one value: the plan, the
// kernel table, the GPU entry points if any. A program either links the
// library (the generated header's <name>_library: linked()) or loads, at
// run time, the lib<name>.so that `attnc --shared` wrote (open(): dlopen).
// Both check that this runtime can use it: the same library ABI and attnc
// version, and a CPU with the instruction-set features its kernels need;
// otherwise the status names the mismatch and what to do.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELLIBRARY_H
#define ATTN_RUNTIME_MODELLIBRARY_H

#include "attn/runtime/Status.h"
#include "attn/runtime/attnc_library.h"

#include <memory>
#include <string>

namespace attn::runtime {

class ModelLibrary {
public:
  /// Loads `path` (a lib<name>.so written by attnc --shared). The library
  /// stays loaded while the returned value, or a Model made from it, lives.
  static Status open(const std::string &path,
                     std::shared_ptr<const ModelLibrary> &library);
  /// A library linked into the program: `descriptor` is the generated
  /// header's <name>_library.
  static Status linked(const attnc_model_library &descriptor,
                       std::shared_ptr<const ModelLibrary> &library);

  const attnc_model_library &descriptor() const { return *descriptor_; }
  /// The file it was loaded from; "" when linked.
  const std::string &path() const { return path_; }

  ModelLibrary(const ModelLibrary &) = delete;
  ModelLibrary &operator=(const ModelLibrary &) = delete;
  ~ModelLibrary();

private:
  ModelLibrary() = default;
  void *handle_ = nullptr; ///< dlopen's; null when linked
  const attnc_model_library *descriptor_ = nullptr;
  std::string path_;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELLIBRARY_H
