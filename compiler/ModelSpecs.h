//===- ModelSpecs.h - a model's kernels, without MLIR or Halide -*- C++ -*-===//

#ifndef ATTNC_MODELSPECS_H
#define ATTNC_MODELSPECS_H

#include "attn/schedules/KernelSpec.h"

#include <string>
#include <vector>

namespace attnc {

/// Everything the backend and the header need, without MLIR.
struct ModelSpecs {
  std::string name;
  std::vector<attn::SdpaSpec> prefill;
  std::vector<attn::DecodeSpec> decode;
  std::vector<attn::LinearSpec> linear;
  std::vector<attn::NormSpec> norm;
  std::vector<attn::EmbeddingSpec> embedding;
  /// Per layer, in execution order: its symbol and the C names of its
  /// kernels (decode empty when the layer never decodes).
  struct Layer {
    std::string symbol, prefill, decode;
  };
  std::vector<Layer> layers;
};

} // namespace attnc

#endif // ATTNC_MODELSPECS_H
