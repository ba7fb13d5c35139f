//===- Pipelines.h - the Halide pipelines of every kernel family -*- C++
//-*-===//

#ifndef ATTN_SCHEDULES_PIPELINES_H
#define ATTN_SCHEDULES_PIPELINES_H

#include "attn/schedules/KernelSpec.h"

#include "Halide.h"

#include <vector>

namespace attn {

/// A Halide pipeline with the inputs of its generated function, in order
/// (the output buffer comes last). `inputs` binds buffers for JIT runs.
struct KernelPipeline {
  Halide::Pipeline pipeline;
  std::vector<Halide::ImageParam> inputs;

  std::vector<Halide::Argument> arguments() const {
    return {inputs.begin(), inputs.end()};
  }
};

/// Builds the fused attention pipeline for `spec` with its schedule for
/// `target`. Arguments: query, key, value, key_lengths (with key padding)
/// as inputs, then the output.
KernelPipeline buildSdpaPipeline(const SdpaSpec &spec,
                                 const Halide::Target &target);

/// The bf16-compute variant buildSdpaPipeline dispatches to (same
/// arguments; Sdpa.cpp documents the algorithm, SdpaBf16.cpp its schedule).
KernelPipeline buildSdpaBf16Pipeline(const SdpaSpec &spec,
                                     const Halide::Target &target);

/// Builds the split-KV decode pipeline for `spec`. Inputs: query,
/// key_pages, value_pages, (I8: key_scales, value_scales,) block_table,
/// seq_lens; then the output.
KernelPipeline buildDecodePipeline(const DecodeSpec &spec,
                                   const Halide::Target &target);

/// Builds the linear pipeline for `spec`. Inputs: input, weight, then
/// weight_scales (int8 weights), bias, positions, residual and cache_slots
/// when the spec has them; then the outputs (KernelSpec.h).
KernelPipeline buildLinearPipeline(const LinearSpec &spec,
                                   const Halide::Target &target);

/// W `weight` [in][out] (row k, column n) as the linear kernels take it:
/// panels (KernelSpec.h), in `element` (F32, F16 or BF16 pairs, rounded to
/// nearest even; I8 quantized per output feature, its scales [out] in
/// `*scales`), for tests and benchmarks (the runtime packs its own).
Halide::Buffer<> packLinearWeights(const float *weight, int in, int out,
                                   CacheElement element = CacheElement::F32,
                                   Halide::Buffer<float> *scales = nullptr);

/// Builds the layer / RMS norm pipeline. Inputs: input, weight, then bias
/// for layer norm; then the output.
KernelPipeline buildNormPipeline(const NormSpec &spec,
                                 const Halide::Target &target);

/// Builds the embedding pipeline. Inputs: tokens, positions, table, then
/// position_table for learned positions; then the output.
KernelPipeline buildEmbeddingPipeline(const EmbeddingSpec &spec,
                                      const Halide::Target &target);

} // namespace attn

#endif // ATTN_SCHEDULES_PIPELINES_H
