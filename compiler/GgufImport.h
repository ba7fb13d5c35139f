//===- GgufImport.h - a GGUF file's model to attn IR ------------*- C++ -*-===//
//
// A GGUF file states its model in metadata (`general.architecture`, then
// `<arch>.*` hyperparameters) and its tensors' types. attnc reads it as the
// Hugging Face config.json the metadata stands for (ggufConfig: every key
// that changes the math mapped or refused by name), imported by the same
// code as a config.json (so a GGUF file and its model's config.json give
// one plan), with the linear weights' dtype taken from the tensors: F32,
// F16 and BF16 as they are, Q8_0, Q5_0 and Q6_K as int8 in groups of 32,
// 32 and 16 and Q4_0, Q4_1 and Q4_K as int4 in groups of 32 (the same
// values: q · d, (q - 16) · d, (q - 32) · d · scale, (q - 8) · d, q · d + m
// with a minimum per group),
// a float output head as stored, and Llama 3's RoPE from its
// tensor rope_freqs.weight. Types attnc cannot run yet are refused naming a
// tensor.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_GGUFIMPORT_H
#define ATTNC_GGUFIMPORT_H

#include "DescriptionImport.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace attn::runtime {
class GgufFile;
}

namespace attnc {

/// Whether `bytes` start as a GGUF file does.
bool isGguf(llvm::StringRef bytes);

/// The Hugging Face config (model_type, sizes, rope_theta, torch_dtype …)
/// that `file`'s metadata and tensor table state; an error names the key or
/// tensor at fault.
llvm::Expected<llvm::json::Object>
ggufConfig(const ::attn::runtime::GgufFile &file);

/// What --emit=report adds for a GGUF file: its tensors (each one's name,
/// type and shape, a count per type) and the tokenizer it carries.
std::string ggufReport(const std::string &path);

/// Imports the GGUF file at `path`: the config ggufConfig derives, as text
/// in `sourceMgr` (so errors of the config import point into it, emitted
/// through `context`), then its weights' dtype; the model is named after
/// the file unless `options` name it. Null after an error: the file's or
/// its metadata's in `error`, or one emitted.
mlir::OwningOpRef<mlir::ModuleOp>
importGguf(const std::string &path, llvm::SourceMgr &sourceMgr,
           mlir::MLIRContext &context, const ImportOptions &options,
           std::string &error);

} // namespace attnc

#endif // ATTNC_GGUFIMPORT_H
