//===- HuggingFaceImport.h - config.json to attn IR -------------*- C++ -*-===//

#ifndef ATTNC_HUGGINGFACEIMPORT_H
#define ATTNC_HUGGINGFACEIMPORT_H

#include "DescriptionImport.h"

#include "attn/JsonReader.h"

namespace attnc {

/// Imports a Hugging Face config.json: model_type llama, mistral, qwen2
/// (decoder-only, GQA, RoPE), gpt2 (decoder-only, MHA, learned positions),
/// marian or bart (encoder-decoder). Keys attnc does not need are ignored;
/// a needed key that is missing or malformed is an error at its location.
/// The model name a description file gives when none is asked for: its
/// stem ("config" stands for its folder's name), as a C identifier.
std::string modelNameOf(llvm::StringRef fileName);

mlir::OwningOpRef<mlir::ModuleOp>
importHuggingFaceConfig(const llvm::json::Object &root,
                        const mlir::attn::JsonLocator &locator,
                        mlir::MLIRContext &context,
                        const ImportOptions &options, llvm::StringRef fileName);

} // namespace attnc

#endif // ATTNC_HUGGINGFACEIMPORT_H
