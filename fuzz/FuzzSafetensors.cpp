//===- FuzzSafetensors.cpp - the safetensors reader -----------------------===//
//
// One input: a whole .safetensors file (8-byte header length, JSON header,
// data), opened as the runtime opens checkpoints, every tensor then read as
// floats. Header lengths, offsets and shapes that lie must be errors.
//
//===----------------------------------------------------------------------===//

#include "FuzzScratch.h"

#include "attn/runtime/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

using namespace attn::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The reader maps files: each input goes through a private temporary one.
  const std::string &path = fuzzScratchFile("input.safetensors");
  if (FILE *file = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, file);
    std::fclose(file);
  }
  SafetensorsFile file;
  if (!SafetensorsFile::open(path, file))
    return 0;
  for (const TensorView &tensor : file.tensors()) {
    std::vector<float> values = readFloats(tensor);
    (void)values;
  }
  return 0;
}
