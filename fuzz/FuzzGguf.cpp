//===- FuzzGguf.cpp - the GGUF reader and its metadata import -------------===//
//
// One input: a whole GGUF file, parsed as the runtime and attnc open one
// (from memory: GgufFile::parse is what open() runs on the mapping), every
// readable tensor's rows then decoded, and its metadata read as the model
// description attnc derives (ggufConfig). Counts, lengths, offsets and types
// that lie must be errors, never reads past the input or allocations it
// cannot back.
//
//===----------------------------------------------------------------------===//

#include "GgufImport.h"

#include "attn/runtime/Gguf.h"

#include <cstdint>
#include <vector>

using namespace attn::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  GgufFile file;
  if (!GgufFile::parse(data, size, "input.gguf", file))
    return 0;
  for (const GgufTensor &tensor : file.tensors()) {
    if (!ggmlReadable(tensor.type) || tensor.elements() > (1 << 20))
      continue;
    std::vector<float> values(size_t(tensor.elements()));
    readRows(tensor, 0, tensor.elements() / tensor.dims[0], values.data());
  }
  llvm::Expected<llvm::json::Object> config = attnc::ggufConfig(file);
  if (!config)
    llvm::consumeError(config.takeError());
  return 0;
}
