//===- Norm.cpp - layer norm and RMS norm in Halide -----------------------===//
//
// One token's features in, the same features normalized out. Memory-bound:
// each row is read twice from L1 (mean, then centred variance) and written
// once.
//
//===----------------------------------------------------------------------===//

#include "KernelBuffers.h"

using namespace Halide;

namespace attn {

KernelPipeline buildNormPipeline(const NormSpec &spec, const Target &target) {
  const int dim = spec.dim;
  const bool layerNorm = spec.kind == NormKind::LayerNorm;

  // ALGORITHM ---------------------------------------------------------------
  KernelBuffers buffers(kernelBuffers(spec));
  ImageParam input = buffers.input("input"); // (c, t): token t, feature c
  ImageParam weight = buffers.input("weight");
  ImageParam bias = layerNorm ? buffers.input("bias") : ImageParam();
  Var c("c"), t("t"), lane("lane");
  RDom r(0, dim, "r");
  Func mean("mean"), meanSquare("mean_square"),
      output(spec.residual ? "normalized" : "output");
  if (layerNorm) {
    mean(t) = 0.0f;
    mean(t) += input(r, t);
    Expr centred = input(r, t) - mean(t) / dim;
    meanSquare(t) = 0.0f;
    meanSquare(t) += centred * centred;
    Expr inverseDeviation = 1.0f / sqrt(meanSquare(t) / dim + spec.eps);
    output(c, t) =
        (input(c, t) - mean(t) / dim) * inverseDeviation * weight(c) + bias(c);
  } else {
    meanSquare(t) = 0.0f;
    meanSquare(t) += input(r, t) * input(r, t);
    output(c, t) =
        input(c, t) / sqrt(meanSquare(t) / dim + spec.eps) * weight(c);
  }
  // A residual_add norm: the normalized sublayer output joins the stream.
  ImageParam residual =
      spec.residual ? buffers.input("residual") : ImageParam(); // (c, t)
  if (spec.residual) {
    Func withResidual("output");
    withResidual(c, t) = output(c, t) + residual(c, t);
    output = withResidual;
    residual.dim(0).set_min(0).set_extent(dim).set_stride(1);
    residual.dim(1).set_min(0).set_stride(dim);
  }

  input.dim(0).set_min(0).set_extent(dim).set_stride(1);
  input.dim(1).set_min(0).set_stride(dim);
  weight.dim(0).set_min(0).set_extent(dim).set_stride(1);
  if (layerNorm)
    bias.dim(0).set_min(0).set_extent(dim).set_stride(1);
  output.output_buffer().dim(0).set_min(0).set_extent(dim).set_stride(1);
  output.output_buffer().dim(1).set_min(0).set_stride(dim);

  // SCHEDULE ----------------------------------------------------------------
  if (target.has_gpu_feature()) {
    // CUDA: one block per token; its statistics summed by 32 threads over
    // strided slices (rfactor) then combined, the output with a thread per
    // feature of a 256-wide slice. Unmeasured (no GPU at hand; PTX checked
    // by ptxas, test/kernels/GpuPtxTest.cpp).
    Var co("co"), ci("ci");
    output.split(c, co, ci, 256, TailStrategy::GuardWithIf)
        .reorder(ci, co, t)
        .gpu_blocks(t)
        .gpu_threads(ci);
    std::vector<Func> reductions = {meanSquare};
    if (layerNorm)
      reductions.insert(reductions.begin(), mean);
    for (Func reduction : reductions) {
      reduction.compute_at(output, t);
      if (dim % 32 == 0) {
        RVar ro("ro"), ri("ri");
        Func lanes = reduction.update().split(r, ro, ri, 32).rfactor(ri, lane);
        lanes.compute_at(output, t).gpu_threads(lane);
        lanes.update().gpu_threads(lane);
      }
    }
    return buffers.finish({output});
  }
  // Tasks of 8 tokens; per token, the reductions run as `vec` independent
  // lanes (rfactor) summed at the end, and the output is vectorized.
  // Measured (bench/README.md, norm rows): memory-bound like a copy.
  const int vec = target.natural_vector_size<float>();
  Var to("to"), ti("ti");
  output.split(t, to, ti, 8, TailStrategy::GuardWithIf)
      .parallel(to)
      .vectorize(c, vec, TailStrategy::GuardWithIf);
  std::vector<Func> reductions = {meanSquare};
  if (layerNorm)
    reductions.insert(reductions.begin(), mean);
  for (Func reduction : reductions) {
    reduction.compute_at(output, ti);
    if (dim % vec == 0 && dim >= 2 * vec) {
      RVar ro("ro"), ri("ri");
      Func lanes = reduction.update().split(r, ro, ri, vec).rfactor(ri, lane);
      lanes.compute_at(output, ti).vectorize(lane);
      lanes.update().vectorize(lane);
    }
  }

  return buffers.finish({output});
}

} // namespace attn
