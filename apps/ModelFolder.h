//===- ModelFolder.h - a Hugging Face model folder, ready to generate -*- C++ -*-===//
//
// What attn-run and attn-serve both do first: compile (or find in the
// cache) the folder's config.json, load the library, the weights as
// published and the tokenizer, and check that tokenizer and model agree.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_MODELFOLDER_H
#define ATTN_APPS_MODELFOLDER_H

#include "ModelCache.h"

#include "attn/runtime/Model.h"
#include "attn/runtime/ModelLibrary.h"
#include "attn/runtime/Tokenizer.h"

namespace attn::apps {

struct ModelFolder {
  std::shared_ptr<const runtime::ModelLibrary> library;
  std::unique_ptr<runtime::Model> model;
  runtime::Tokenizer tokenizer;
  double loadSeconds = 0; ///< library, weights and tokenizer
};

/// Loads `dir` (compiling its config first if the cache lacks it, attnc's
/// progress on `log`).
llvm::Error loadModelFolder(const std::string &dir,
                            const CompileOptions &options,
                            llvm::raw_ostream &log, ModelFolder &folder);

} // namespace attn::apps

#endif // ATTN_APPS_MODELFOLDER_H
