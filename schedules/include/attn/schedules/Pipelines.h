//===- Pipelines.h - the Halide pipelines of every kernel family -*- C++
//-*-===//

#ifndef ATTN_SCHEDULES_PIPELINES_H
#define ATTN_SCHEDULES_PIPELINES_H

#include "attn/schedules/KernelSpec.h"

#include "Halide.h"

#include <vector>

namespace attn {

/// A Halide pipeline with the inputs of its generated function, in order
/// (the outputs come after them). `inputs` binds buffers for JIT runs.
struct KernelPipeline {
  Halide::Pipeline pipeline;
  std::vector<Halide::ImageParam> inputs;

  std::vector<Halide::Argument> arguments() const {
    return {inputs.begin(), inputs.end()};
  }
};

// Each pipeline's arguments are its family's kernelBuffers(spec)
// (KernelAbi.h), inputs then outputs.

/// Builds the fused attention pipeline for `spec` with its schedule for
/// `target`.
KernelPipeline buildSdpaPipeline(const SdpaSpec &spec,
                                 const Halide::Target &target);

/// The bf16-compute variant buildSdpaPipeline dispatches to (same
/// arguments; Sdpa.cpp documents the algorithm, SdpaBf16.cpp its schedule).
KernelPipeline buildSdpaBf16Pipeline(const SdpaSpec &spec,
                                     const Halide::Target &target);

/// Whether buildSdpaPipeline(spec, target) runs on AMX tiles where the CPU
/// running it has them (AmxAttention.h): bf16 products, spec.x86Object, an
/// x86-64 target with Sapphire Rapids' features, head_dim a multiple of 32
/// up to 256, no softcap or ALiBi; elsewhere, and on CPUs without AMX, the
/// products are the pipeline's own.
bool sdpaUsesAmx(const SdpaSpec &spec, const Halide::Target &target);

/// Whether buildSdpaPipeline(spec, target) runs the AVX-512 micro-kernels
/// (Avx512Attention.h) where the CPU running it is an Intel one with
/// AVX-512F: fp32 products, full attention (no causal mask, window,
/// softcap or ALiBi), head_dim a multiple of 64 up to 256,
/// spec.x86Object, an x86-64 target with AVX-512; elsewhere, and on other
/// CPUs, the products are the pipeline's own.
bool sdpaUsesAvx512Kernel(const SdpaSpec &spec, const Halide::Target &target);

/// Builds the split-KV decode pipeline for `spec`.
KernelPipeline buildDecodePipeline(const DecodeSpec &spec,
                                   const Halide::Target &target);

/// Builds the linear pipeline for `spec`.
KernelPipeline buildLinearPipeline(const LinearSpec &spec,
                                   const Halide::Target &target);

/// Whether buildLinearPipeline(spec, target) rounds its inputs to int8 per
/// group of the weights' scales (absmax / 127; elsewhere int16, absmax /
/// 32767) for AVX512-VNNI's vpdpbusd: int4 weights, the prompt-sized
/// variant, an x86-64 target with Sapphire Rapids' features (Zen 4/5 and
/// Intel with AMX, where a CPU without AMX tiles runs it).
bool linearUsesInt8Inputs(const LinearSpec &spec, const Halide::Target &target);

/// Whether buildLinearPipeline(spec, target) multiplies on AMX tiles where
/// the CPU running it has them (bf16 or int4 weights, the prompt-sized
/// variant, an x86-64 target with Sapphire Rapids' features): X is then
/// rounded to bf16, and int4 W's dequantized values too (AmxLinear.h);
/// elsewhere, and on CPUs without AMX, the product is the kernel's own
/// (fp32, or int4's integer dot products).
bool linearUsesAmx(const LinearSpec &spec, const Halide::Target &target);

/// W `weight` [in][out] (row k, column n) as the linear kernels take it:
/// panels (KernelSpec.h), in `element` (F32, F16 or BF16 pairs, rounded to
/// nearest even; I8 quantized per output feature, its scales [out] in
/// `*scales`, or per `group` inputs, its scales [panels][groups][16]; I4 symmetric per `group` inputs (quantizeInt4Group), its
/// scales [panels][groups][16] in `*scales`; MXFP4 per 32 inputs
/// (quantizeMxfp4Block), its E8M0 bytes [panels][groups][16] in
/// `*exponents`; I4 with `mins`: W = u · s + m per group, m the group's
/// least value and s its range / 15, the minimums as the scales), for tests
/// and benchmarks (the runtime packs its own, by the same Int4Layout).
Halide::Buffer<> packLinearWeights(const float *weight, int in, int out,
                                   DType element = DType::F32,
                                   Halide::Buffer<float> *scales = nullptr,
                                   int group = 0,
                                   Halide::Buffer<uint8_t> *exponents = nullptr,
                                   Halide::Buffer<float> *mins = nullptr);

/// Builds the layer / RMS norm pipeline.
KernelPipeline buildNormPipeline(const NormSpec &spec,
                                 const Halide::Target &target);

/// Builds the embedding pipeline.
KernelPipeline buildEmbeddingPipeline(const EmbeddingSpec &spec,
                                      const Halide::Target &target);

} // namespace attn

#endif // ATTN_SCHEDULES_PIPELINES_H
