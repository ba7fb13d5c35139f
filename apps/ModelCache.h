//===- ModelCache.h - compiled model libraries, keyed by config ---*- C++ -*-===//
//
// attn-run and attn-serve take a Hugging Face model folder or a GGUF file.
// Its config.json (or the file) is compiled by attnc (--shared) once; the library lands in a cache folder
// named by a hash of everything that decides what attnc writes: the
// config's bytes, attnc's version, library ABI and plan version, the target
// (for "host", this CPU's name and features) and the options passed. Later
// runs load it from there.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_MODELCACHE_H
#define ATTN_APPS_MODELCACHE_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace attn::apps {

struct CompileOptions {
  std::string attnc;    ///< the attnc to run; empty: beside this program, else PATH
  std::string cacheDir; ///< empty: $ATTNC_CACHE_DIR, $XDG_CACHE_HOME/attnc, ~/.cache/attnc
  std::string target = "host";
  std::vector<std::string> attncArgs; ///< e.g. --kv-dtype=f16, part of the key
  /// Keep the weights as laid out for the library's kernels beside it
  /// (packedWeightsPath), mapped by later loads.
  bool packedWeights = true;
};

/// The last component of `dir`, however it is written ("a/b/", "."):
/// what the cache entry and attn-serve's model id are named after.
std::string folderName(const std::string &dir);

/// Whether `path` is a file that starts as a GGUF file does: a model in
/// one file (its config, weights and tokenizer).
bool isGgufFile(const std::string &path);

/// The library (lib<name>.so) compiled from `modelDir`/config.json (or the
/// GGUF file `modelDir`): from the cache, or compiled now, attnc's progress
/// going to `log`. `compiled` says which.
llvm::Expected<std::string> findOrCompile(const std::string &modelDir,
                                          const CompileOptions &options,
                                          llvm::raw_ostream &log,
                                          bool &compiled);

/// Where the weights of `modelDir`, laid out for `library`'s kernels, are
/// kept: beside the library, named by a hash of the folder's absolute path
/// (the file itself says which checkpoint and plan it holds).
std::string packedWeightsPath(const std::string &library,
                              const std::string &modelDir);

} // namespace attn::apps

#endif // ATTN_APPS_MODELCACHE_H
