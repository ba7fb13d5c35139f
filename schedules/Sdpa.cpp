//===- Sdpa.cpp - scaled dot-product attention in Halide ------------------===//
//
// The walking-skeleton attention kernel: exact softmax per query row, one row
// of scores at a time (never the whole score matrix), fused into one pipeline.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/Sdpa.h"

using namespace Halide;

namespace attn {

namespace {
/// Pins a [batch][len][heads][headDim] buffer's inner dimensions so LLVM sees
/// constant strides and trip counts (dynamic strides cost 2x in prototypes).
void constrainActivation(OutputImageParam buffer, int heads, int headDim) {
  buffer.dim(0).set_min(0).set_extent(headDim).set_stride(1);
  buffer.dim(1).set_min(0).set_extent(heads).set_stride(headDim);
  buffer.dim(2).set_min(0).set_stride(heads * headDim);
  buffer.dim(3).set_min(0);
}
} // namespace

KernelPipeline buildSdpaPipeline(const SdpaSpec &spec, const Target &target) {
  const int headDim = spec.headDim;
  const int group = spec.queryHeadsPerKvHead();

  // ALGORITHM ---------------------------------------------------------------
  // Halide dimensions run innermost first: query(d, h, i, b) is the C array
  // query[b][i][h][d].
  ImageParam query(Float(32), 4, "query");
  ImageParam key(Float(32), 4, "key");
  ImageParam value(Float(32), 4, "value");
  Var d("d"), h("h"), i("i"), b("b"), j("j");

  Expr qLen = query.dim(2).extent();
  Expr kvLen = key.dim(2).extent();
  Expr kvHead = h / group;

  RDom rd(0, headDim, "rd");
  Func score("score"); // score(j, h, i, b) = scale · q_i · k_j
  score(j, h, i, b) = 0.0f;
  score(j, h, i, b) += query(rd, h, i, b) * key(rd, kvHead, j, b);

  // End-aligned causal mask. Masked logits get a finite floor, never -inf
  // (exp of it is an exact 0, without NaNs), and the mask enters as an added
  // bias and a 0/1 factor rather than as select(visible, score(...), ...):
  // Halide narrows a producer's bounds by the select condition, which gives
  // empty, negative-sized regions for rows that see no key.
  const float maskedLogit = -1e30f;
  Expr visible = spec.causal ? (j <= i + (kvLen - qLen)) : Expr(true);
  Func logit("logit");
  logit(j, h, i, b) =
      score(j, h, i, b) * spec.scale + select(visible, 0.0f, maskedLogit);

  RDom rj(0, kvLen, "rj");
  Func rowMax("rowMax");
  rowMax(h, i, b) = maximum(logit(rj, h, i, b));
  Func prob("prob"); // unnormalized
  prob(j, h, i, b) =
      exp(logit(j, h, i, b) - rowMax(h, i, b)) * select(visible, 1.0f, 0.0f);
  Func rowSum("rowSum");
  rowSum(h, i, b) = sum(prob(rj, h, i, b));
  Func weighted("weighted");
  weighted(d, h, i, b) = 0.0f;
  weighted(d, h, i, b) += prob(rj, h, i, b) * value(d, kvHead, rj, b);

  // A row that sees no key (causal with q_len > kv_len) is defined as 0.
  Func output("output");
  output(d, h, i, b) = select(rowSum(h, i, b) > 0.0f,
                              weighted(d, h, i, b) / rowSum(h, i, b), 0.0f);

  constrainActivation(query, spec.numQueryHeads, headDim);
  constrainActivation(key, spec.numKvHeads, headDim);
  constrainActivation(value, spec.numKvHeads, headDim);
  constrainActivation(output.output_buffer(), spec.numQueryHeads, headDim);

  // SCHEDULE ----------------------------------------------------------------
  // One task per block of query rows; per (row, head) one row of scores lives
  // in a scratch buffer of kv_len floats. Correct for every shape; speed is
  // the job of the tiled flash schedule. Measured: not yet benchmarked.
  const int vector = spec.schedule.vectorWidth > 0
                         ? spec.schedule.vectorWidth
                         : target.natural_vector_size<float>();
  Var rows("rows"), task("task");
  output.split(i, rows, i, spec.schedule.rowsPerTask, TailStrategy::GuardWithIf)
      .reorder(d, h, i, rows, b)
      .fuse(rows, b, task)
      .parallel(task)
      .vectorize(d, vector, TailStrategy::GuardWithIf);
  score.compute_at(output, h);
  score.update().reorder(rd, j);
  logit.compute_at(output, h);
  prob.compute_at(output, h);
  rowMax.compute_at(output, h);
  rowSum.compute_at(output, h);
  weighted.compute_at(output, h).vectorize(d, vector,
                                           TailStrategy::GuardWithIf);
  weighted.update().reorder(d, rj).vectorize(d, vector,
                                             TailStrategy::GuardWithIf);

  return {Pipeline(output), {query, key, value}};
}

} // namespace attn
