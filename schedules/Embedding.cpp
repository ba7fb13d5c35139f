//===- Embedding.cpp - token embedding plus positions in Halide -----------===//
//
// A gather of table rows, plus the position encoding. Memory-bound: one row
// of the table (and of the position table) read per token.
//
//===----------------------------------------------------------------------===//

#include "KernelBuffers.h"

#include <cmath>

using namespace Halide;

namespace attn {

KernelPipeline buildEmbeddingPipeline(const EmbeddingSpec &spec,
                                      const Target &target) {
  const int dim = spec.dim;

  // ALGORITHM ---------------------------------------------------------------
  KernelBuffers buffers(kernelBuffers(spec));
  ImageParam tokens = buffers.input("tokens");       // (t)
  ImageParam positions = buffers.input("positions"); // (t)
  ImageParam table = buffers.input("table");         // (c, id)
  Var c("c"), t("t");
  Expr token = clamp(tokens(t), 0, spec.vocabSize - 1);
  Expr position = positions(t);
  Expr positionTerm = 0.0f;
  if (spec.positions == PositionKind::Learned) {
    ImageParam positionTable = buffers.input("position_table"); // (c, pos)
    positionTerm = positionTable(c, clamp(position, 0, spec.maxPositions - 1) +
                                        spec.positionOffset);
    positionTable.dim(0).set_min(0).set_extent(dim).set_stride(1);
    positionTable.dim(1)
        .set_min(0)
        .set_extent(spec.maxPositions + spec.positionOffset)
        .set_stride(dim);
  } else if (spec.positions == PositionKind::Sinusoidal) {
    // The reference computes pos / 10000^(2i/dim) in fp32 with a rounded
    // fp32 denominator; so does the kernel, from an embedded table.
    Buffer<float> denominator(std::max(1, (dim + 1) / 2), "sinusoid_period");
    for (int i = 0; i < denominator.width(); i++)
      denominator(i) = float(std::pow(10000.0, 2.0 * i / dim));
    Expr angle = cast<float>(position) / denominator(c / 2);
    positionTerm = select(c % 2 == 0, sin(angle), cos(angle));
  } else if (spec.positions == PositionKind::SinusoidalHalves) {
    // Marian's frozen table, which transformers fills in float64 and
    // rounds: sines in the first ceil(dim/2) channels, cosines after.
    const int sines = (dim + 1) / 2;
    Expr k = select(c < sines, c, c - sines);
    Expr angle = cast<double>(position) /
                 pow(Expr(10000.0), cast<double>(2 * k) / Expr(double(dim)));
    positionTerm = cast<float>(select(c < sines, sin(angle), cos(angle)));
  }
  Func output("output");
  Expr row = table(c, token);
  if (spec.scale != 1.0f)
    row *= spec.scale;
  output(c, t) = row + positionTerm;

  tokens.dim(0).set_min(0).set_stride(1);
  positions.dim(0).set_min(0).set_stride(1);
  tokens.dim(0).set_extent(output.output_buffer().dim(1).extent());
  positions.dim(0).set_extent(output.output_buffer().dim(1).extent());
  table.dim(0).set_min(0).set_extent(dim).set_stride(1);
  table.dim(1).set_min(0).set_extent(spec.vocabSize).set_stride(dim);
  output.output_buffer().dim(0).set_min(0).set_extent(dim).set_stride(1);
  output.output_buffer().dim(1).set_min(0).set_stride(dim);

  // SCHEDULE ----------------------------------------------------------------
  // Tasks of 16 tokens, rows vectorized. Measured: memory-bound like a copy.
  // CUDA: a block per token, a thread per feature of a 256-wide slice.
  Var to("to"), ti("ti");
  if (target.has_gpu_feature()) {
    output.split(c, to, ti, 256, TailStrategy::GuardWithIf)
        .reorder(ti, to, t)
        .gpu_blocks(t)
        .gpu_threads(ti);
  } else {
    const int vec = target.natural_vector_size<float>();
    output.split(t, to, ti, 16, TailStrategy::GuardWithIf)
        .parallel(to)
        .vectorize(c, vec, TailStrategy::GuardWithIf);
  }

  return buffers.finish({output});
}

} // namespace attn
