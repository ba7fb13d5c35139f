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
  /// Which kernel sets the library holds (from --target): CPU kernels, GPU
  /// kernels of one API ("cuda" or "opencl"; empty: none), or both.
  bool cpuKernels = true;
  std::string gpuApi;
  /// The CPU targets as Halide resolved them ("host" spelled out),
  /// comma-separated, most specific first: what the library records.
  std::string cpuTargets;
  /// What a GPU kernel's C name adds to its CPU twin's: `<name>_cuda_kernel`
  /// beside `<name>_kernel`, and `<name>_cuda` in the kernel table.
  std::string gpuSuffix() const { return gpuApi.empty() ? "" : "_" + gpuApi; }
  /// "cpu" and/or the GPU API, as the plan lists them.
  std::vector<std::string> devices() const {
    std::vector<std::string> result;
    if (cpuKernels)
      result.push_back("cpu");
    if (!gpuApi.empty())
      result.push_back(gpuApi);
    return result;
  }
  /// The suffixes of the kernel sets' C names: "" (CPU), then gpuSuffix().
  std::vector<std::string> deviceSuffixes() const {
    std::vector<std::string> result;
    if (cpuKernels)
      result.push_back("");
    if (!gpuApi.empty())
      result.push_back(gpuSuffix());
    return result;
  }
  std::vector<attn::SdpaSpec> prefill;
  std::vector<attn::DecodeSpec> decode;
  std::vector<attn::LinearSpec> linear;

  /// Every linear kernel, and with `fewTokens` beside each its one-token
  /// variant `<name>_gemv` (one-row register tiles: a decode step of one
  /// sequence would otherwise compute the whole row tile, 6x the work) and
  /// beside an expert kernel its grouped variant `<name>_experts` (every
  /// expert a decode step chose, one call). The GPU set has neither: its
  /// schedule has no row tiles, and experts run on the CPU.
  std::vector<attn::LinearSpec> linearVariants(bool fewTokens = true) const {
    std::vector<attn::LinearSpec> variants;
    for (const attn::LinearSpec &spec : linear) {
      variants.push_back(spec);
      if (!fewTokens)
        continue;
      variants.push_back(spec);
      variants.back().functionName += "_gemv";
      variants.back().schedule.tileRows = 1;
      if (spec.experts > 0) {
        variants.push_back(variants.back());
        variants.back().functionName = spec.functionName + "_experts";
        variants.back().groupedExperts = true;
      }
    }
    return variants;
  }
  std::vector<attn::NormSpec> norm;
  std::vector<attn::EmbeddingSpec> embedding;
  /// The C name (without `_kernel`) of every kernel of the CPU set or,
  /// without the GPU suffix, of the GPU set; families in order.
  std::vector<std::string> functionNames(bool gpu = false) const {
    std::vector<std::string> names;
    for (const attn::SdpaSpec &spec : prefill)
      names.push_back(spec.functionName);
    for (const attn::DecodeSpec &spec : decode)
      names.push_back(spec.functionName);
    for (const attn::LinearSpec &spec : linearVariants(/*fewTokens=*/!gpu))
      names.push_back(spec.functionName);
    for (const attn::NormSpec &spec : norm)
      names.push_back(spec.functionName);
    for (const attn::EmbeddingSpec &spec : embedding)
      names.push_back(spec.functionName);
    return names;
  }
  /// Per layer, in execution order: its symbol and the C names of its
  /// kernels (decode empty when the layer never decodes).
  struct Layer {
    std::string symbol, prefill, decode;
  };
  std::vector<Layer> layers;
};

} // namespace attnc

#endif // ATTNC_MODELSPECS_H
