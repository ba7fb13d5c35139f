//===- Decode.cpp - split-KV decode attention over a paged cache ----------===//
//
// Flash-decoding: each sequence's cached keys are cut into splits of
// splitKeys keys; one parallel task per (sequence, split) computes, for every
// KV head and all query rows that share it (the GQA group x the new tokens),
// an exact softmax partial (m, l, o) over its keys, reading each K and V row
// once. The partials of a sequence are then combined with the online-softmax
// operator. Splits past a sequence's length do no work, so a batch of ragged
// lengths costs what its tokens cost.
//
//===----------------------------------------------------------------------===//

#include "AttentionParts.h"

using namespace Halide;

namespace attn {

namespace {
/// The CUDA schedule: one thread block per (new token, KV head, split,
/// sequence), so every block-level intermediate has constant extents (its
/// keys x the GQA group) and lives in shared memory; threads over the
/// split's keys for the dot products and exponentials (each thread one key,
/// its K row read once per block), threads over d for P·V and the partial;
/// the split's max and sum reduced by 32 threads (rfactor) and combined by
/// one. The combine runs one block per (query head, sequence), threads
/// over d. Unmeasured: no GPU was at hand when it was written (PTX checked
/// by ptxas for sm_80 and sm_90; see test/kernels/GpuPtxTest.cpp).
void scheduleDecodeForGpu(const DecodeSpec &spec, Func output, Func rowMax,
                          Func rowOut, Func partial, Func score, Func dotLanes,
                          Func prob, Func splitMax, Func splitSum,
                          Func splitOut) {
  Var d = output.args()[0], h = output.args()[1], b = output.args()[3];
  output.gpu_blocks(h, b).gpu_threads(d);
  // With sinks the output reads the row's maximum too: a copy of its own,
  // per thread.
  if (spec.sinks)
    rowMax.clone_in(output).compute_at(output, d);
  // Each thread finds its row's maximum over the splits itself (one per
  // block, in shared memory, read back wrong on PoCL once a sequence had
  // several splits: opencl-library-test).
  rowMax.compute_at(rowOut, rowOut.args()[0]);
  rowOut.compute_at(output, h).gpu_threads(rowOut.args()[0]);
  rowOut.update().gpu_threads(rowOut.args()[0]);

  // partial(d, g, t, hk, b, s)
  std::vector<Var> p = partial.args();
  Var pd = p[0], pg = p[1], pt = p[2], phk = p[3], pb = p[4], ps = p[5];
  Var row("row"), task("task");
  partial.compute_root()
      .reorder(pg, pd, pt, phk, ps, pb)
      .fuse(pt, phk, row)
      .fuse(ps, pb, task)
      .gpu_blocks(row, task)
      .gpu_threads(pd);
  Var j = score.args()[0];
  score.compute_at(partial, row).gpu_threads(j);
  score.update().gpu_threads(j);
  dotLanes.compute_at(score, j);
  prob.compute_at(partial, row).gpu_threads(prob.args()[0]);
  // The split's max and sum: 32 threads each reduce every 32nd key
  // (rfactor), then one thread combines their 32 partials, instead of one
  // thread walking all the split's keys.
  const int lanes = 32;
  for (Func f : {splitMax, splitSum}) {
    f.compute_at(partial, row);
    if (spec.schedule.splitKeys % lanes != 0)
      continue;
    RVar rk(f.update().get_schedule().rvars()[0].var), ro("ro"), ri("ri");
    Var lane("lane");
    Func byLane = f.update().split(rk, ro, ri, lanes).rfactor(ri, lane);
    byLane.compute_at(partial, row).gpu_threads(lane);
    byLane.update().gpu_threads(lane);
  }
  splitOut.compute_at(partial, row).gpu_threads(splitOut.args()[0]);
  splitOut.update().gpu_threads(splitOut.args()[0]);
}
} // namespace

KernelPipeline buildDecodePipeline(const DecodeSpec &spec,
                                   const Target &target) {
  const int headDim = spec.headDim, group = spec.queryHeadsPerKvHead();
  const int pageSize = spec.pageSize, splitKeys = spec.schedule.splitKeys;

  // ALGORITHM ---------------------------------------------------------------
  KernelBuffers buffers(kernelBuffers(
      spec, target.has_gpu_feature() ? KernelPlace::Gpu : KernelPlace::Cpu));
  ImageParam query = buffers.input("query"); // (d, h, t, b)
  const bool int8 = spec.cacheElement == DType::I8;
  // GPU targets read a bf16 pool as its uint16 bit patterns (the cache
  // append stores it so; KernelAbi.cpp): OpenCL C has no bfloat type, and
  // Halide 14's NVPTX cannot convert one.
  const bool bf16Bits =
      spec.cacheElement == DType::BF16 && target.has_gpu_feature();
  ImageParam keyPages = buffers.input("key_pages"); // (d, hk, slot, page)
  ImageParam valuePages = buffers.input("value_pages");
  // I8: the scale of each (hk, slot, page) row.
  ImageParam keyScales = int8 ? buffers.input("key_scales") : ImageParam();
  ImageParam valueScales = int8 ? buffers.input("value_scales") : ImageParam();
  ImageParam blockTable = buffers.input("block_table"); // (page slot, b)
  ImageParam seqLens = buffers.input("seq_lens");       // (b)
  Var d("d"), h("h"), t("t"), b("b"), j("j"), g("g"), hk("hk"), s("s");

  Expr qLen = query.dim(2).extent();
  Expr slots = blockTable.dim(0).extent();
  Expr numPages = keyPages.dim(3).extent();
  Expr length = clamp(seqLens(b), 0, slots * pageSize);
  Expr numSplits = (slots * pageSize + splitKeys - 1) / splitKeys;

  // Key `key` of sequence `seq` lives in page blockTable(key / pageSize, seq).
  auto pageOf = [&](Expr key, Expr seq) {
    return clamp(blockTable(clamp(key / pageSize, 0, slots - 1), seq), 0,
                 numPages - 1);
  };
  Expr page = pageOf(j, b);
  // bf16 -> f32 is a shift of the bits (GPU targets: the pool's uint16).
  auto toFloat = [&](Expr stored) {
    if (bf16Bits)
      return reinterpret<float>(cast<uint32_t>(stored) << 16);
    return cast<float>(stored);
  };
  Func keyAt("keyAt"), valueAt("valueAt");
  keyAt(d, hk, j, b) = toFloat(keyPages(d, hk, j % pageSize, page));
  valueAt(d, hk, j, b) = toFloat(valuePages(d, hk, j % pageSize, page));
  // I8: a row's scale multiplies its dot product and its softmax weight
  // once (q·(s k) = s (q·k)), not each of its elements.
  auto rowScale = [&](ImageParam scales, Expr key, Expr head, Expr seq) {
    return int8 ? scales(head, key % pageSize, pageOf(key, seq)) : Expr(1.0f);
  };

  // Query row (g, t) of KV head hk is query head hk·group + g, pre-scaled
  // into the log2 domain.
  Func queryS("queryS");
  queryS(d, g, t, hk, b) =
      query(d, hk * group + g, t, b) * (spec.scale * float(M_LOG2E));

  // Dot products in two steps: `lanes` partial sums along d (plain vector
  // FMAs), then one horizontal sum per (key, row) instead of one per vector.
  const int vecGuess = target.natural_vector_size<float>();
  int lanes = 1;
  for (int candidate : {vecGuess, 8, 4})
    if (lanes == 1 && headDim % candidate == 0)
      lanes = candidate;
  Var lane("lane");
  RDom ro(0, headDim / lanes, "ro");
  Func dotLanes("dotLanes");
  dotLanes(lane, j, g, t, hk, b) = 0.0f;
  dotLanes(lane, j, g, t, hk, b) += queryS(ro * lanes + lane, g, t, hk, b) *
                                    keyAt(ro * lanes + lane, hk, j, b);
  RDom rl(0, lanes, "rl");
  Func score("score");
  score(j, g, t, hk, b) = 0.0f;
  score(j, g, t, hk, b) += dotLanes(rl, j, g, t, hk, b);

  Expr visible = j < length;
  if (spec.causal || spec.window > 0)
    visible = visible && j <= length - qLen + t;
  if (spec.window > 0)
    visible = visible && j > length - qLen + t - spec.window;
  Func logit("logit");
  Expr slope;
  if (spec.alibi)
    slope = alibiSlopeTable(spec.numQueryHeads)(hk * group + g);
  logit(j, g, t, hk, b) =
      adjustScore(score(j, g, t, hk, b) * rowScale(keyScales, j, hk, b),
                  spec.softcap, slope, j - (length - qLen + t)) +
      select(visible, 0.0f, kMaskedLogit);

  // Per split: an exact softmax partial (m, l, o) over its keys. The
  // predicate confines the key loops to the sequence: Halide trims the loops
  // to it, so splits past the length cost nothing.
  RDom rk(0, splitKeys, "rk");
  Expr key = s * splitKeys + rk;
  rk.where(key < length);
  if (spec.window > 0) // keys before every new token's window: no work
    rk.where(key > length - qLen - spec.window);
  Func splitMax("splitMax");
  splitMax(g, t, hk, b, s) = kMaskedLogit;
  splitMax(g, t, hk, b, s) =
      max(splitMax(g, t, hk, b, s), logit(key, g, t, hk, b));
  Func prob("prob");
  prob(j, g, t, hk, b) = exp2Nonpositive(logit(j, g, t, hk, b) -
                                         splitMax(g, t, hk, b, j / splitKeys)) *
                         select(visible, 1.0f, 0.0f);
  Func splitSum("splitSum");
  splitSum(g, t, hk, b, s) = 0.0f;
  splitSum(g, t, hk, b, s) += prob(key, g, t, hk, b);
  Func splitOut("splitOut");
  splitOut(d, g, t, hk, b, s) = 0.0f;
  splitOut(d, g, t, hk, b, s) +=
      (prob(key, g, t, hk, b) * rowScale(valueScales, key, hk, b)) *
      valueAt(d, hk, key, b);
  // A split's partial for one row is headDim + 2 floats: o, then m and l
  // once (a Tuple would store m and l beside every channel: 3x the bytes,
  // and this buffer is freshly allocated, so page faults, on every call).
  Func partial("partial");
  partial(d, g, t, hk, b, s) =
      select(d < headDim, splitOut(min(d, headDim - 1), g, t, hk, b, s),
             d == headDim, splitMax(g, t, hk, b, s), splitSum(g, t, hk, b, s));

  RDom rs(0, numSplits, "rs");
  rs.where(rs * splitKeys < length);
  if (spec.window > 0)
    rs.where(rs * splitKeys + (splitKeys - 1) > length - qLen - spec.window);
  // The combine: each row's maximum over its splits, then one weight
  // 2^(m_s - max) per (row, split) scaling that split's sum and output (a
  // pairwise online-softmax update would rescale every channel by two
  // exponentials per split: 5% of a B1 x 128K call, on one thread, in
  // Halide's profile on Zen 4; now 2%, on both).
  Func rowMax("rowMax");
  rowMax(g, t, hk, b) = kMaskedLogit;
  rowMax(g, t, hk, b) =
      max(rowMax(g, t, hk, b), partial(headDim, g, t, hk, b, rs));
  Func splitWeight("splitWeight");
  splitWeight(g, t, hk, b, s) =
      exp2Nonpositive(partial(headDim, g, t, hk, b, s) - rowMax(g, t, hk, b));
  // Channels 0..headDim-1 the weighted outputs, headDim + 1 the weighted
  // sums (headDim, the weighted maxima, is not used).
  Func rowOut("rowOut");
  rowOut(d, g, t, hk, b) = 0.0f;
  rowOut(d, g, t, hk, b) +=
      splitWeight(g, t, hk, b, rs) * partial(d, g, t, hk, b, rs);

  Func output("output");
  Expr l = rowOut(headDim + 1, h % group, t, h / group, b);
  Expr o = rowOut(d, h % group, t, h / group, b);
  // With sinks, each head's logit joins the denominator.
  ImageParam sinks = spec.sinks ? buffers.input("sinks") : ImageParam();
  output(d, h, t, b) = normalizedRow(
      rowMax(h % group, t, h / group, b), l, o,
      spec.sinks ? sinks(h) * float(M_LOG2E) : Expr());
  if (spec.sinks)
    sinks.dim(0).set_min(0).set_extent(spec.numQueryHeads).set_stride(1);

  constrainActivation(query, spec.numQueryHeads, headDim);
  constrainActivation(output.output_buffer(), spec.numQueryHeads, headDim);
  for (ImageParam pages : {keyPages, valuePages}) {
    pages.dim(0).set_min(0).set_extent(headDim).set_stride(1);
    pages.dim(1).set_min(0).set_extent(spec.numKvHeads).set_stride(headDim);
    pages.dim(2).set_min(0).set_extent(pageSize).set_stride(spec.numKvHeads *
                                                            headDim);
    pages.dim(3).set_min(0).set_stride(pageSize * spec.numKvHeads * headDim);
  }
  for (ImageParam scales : {keyScales, valueScales}) {
    if (!int8)
      break;
    scales.dim(0).set_min(0).set_extent(spec.numKvHeads).set_stride(1);
    scales.dim(1).set_min(0).set_extent(pageSize).set_stride(spec.numKvHeads);
    scales.dim(2).set_min(0).set_extent(numPages).set_stride(pageSize *
                                                             spec.numKvHeads);
  }
  blockTable.dim(0).set_min(0).set_stride(1);
  blockTable.dim(1).set_min(0).set_extent(query.dim(3).extent());
  seqLens.dim(0).set_min(0).set_extent(query.dim(3).extent());

  // SCHEDULE ----------------------------------------------------------------
  if (target.has_gpu_feature()) {
    scheduleDecodeForGpu(spec, output, rowMax, rowOut, partial, score, dotLanes,
                         prob, splitMax, splitSum, splitOut);
    return buffers.finish({output});
  }
  // One parallel task per (split, sequence) computes its partials:
  // per key, the group's query rows dot the K row (vectorized along d with
  // horizontal sums), the split's max and exponentials, then P·V vectorized
  // along d; each K and V row is read once. A second parallel pass per
  // (query head, sequence) combines the partials. Measured (bench/README.md):
  // 20-24 GB/s of f32 K/V at GQA 32/8 D128 over pools on huge pages (was 10-13
  // before the grouped reduction tree, the key-blocked P·V and the compact
  // partials, 17-21 on 4 KiB pages), 58-68% of STREAM triad. Time follows
  // the bytes only partly (B1 x 128K, Zen 5: f32 39-52 ms, bf16 30-45, i8
  // 31-38 since its scales apply per row): the passes wait on loads (a
  // sampling profile piles up behind the K and V loads), and this VM reads
  // shuffled pages slower the smaller they are (a plain AVX-512 sum over
  // shuffled 64 / 32 / 16 KiB runs: 18-22 / 15 / 10-11 GB/s), so a 16-token
  // page of a narrow cache streams slower than one of f32.
  const int vec = spec.schedule.vectorWidth > 0
                      ? spec.schedule.vectorWidth
                      : target.natural_vector_size<float>();
  const TailStrategy guard = TailStrategy::GuardWithIf;
  Var task("task"), head("head");
  // The combine: one parallel task per (query head, sequence), so a single
  // sequence's combine runs on every thread.
  output.reorder(d, t, h, b)
      .fuse(h, b, head)
      .parallel(head)
      .vectorize(d, vec, guard);
  for (Func f : {rowMax, splitWeight})
    f.compute_at(output, head);
  rowOut.compute_at(output, head).vectorize(d, vec, guard);
  rowOut.update().vectorize(d, vec, guard);

  // A task covers every KV head of its keys: the cache stores a token's
  // heads side by side, so the task streams contiguous memory (per-head
  // tasks read 512 of every 4096 bytes and ran at a quarter of the speed).
  partial.compute_root()
      .reorder(d, g, t, hk, s, b)
      .fuse(s, b, task)
      .parallel(task)
      .vectorize(d, vec, guard);
  queryS.compute_root().vectorize(d, vec, guard);
  for (Func f : {logit, splitMax, prob, splitSum})
    f.compute_at(partial, task);
  // The softmax stages (logits, the split's max, weights, sum) run once per
  // key and query row: vectorized over the GQA group's rows, stored side by
  // side as the dot products leave them, so the key's mask and an int8
  // row's scale (a block-table lookup) are computed once per key and KV head
  // instead of once per row (int8 B1 x 128K, Zen 5: 0.91x the time).
  if (group > 1) {
    for (Func f : {logit, prob})
      f.bound(g, 0, group)
          .reorder_storage(g, j, t, hk, b)
          .reorder(g, j, t, hk)
          .vectorize(g);
    for (Func f : {splitMax, splitSum}) {
      f.bound(g, 0, group).vectorize(g);
      f.update().reorder(g, rk, t, hk).vectorize(g);
    }
  }
  splitOut.compute_at(partial, task).vectorize(d, vec, guard);
  // P·V over blocks of 8 keys (8 tokens of all KV heads, 32 KiB at D128
  // GQA 32/8, L1-resident once touched): per KV head, the group's rows x up
  // to 16 accumulator vectors of d stay in registers while the block's keys
  // go by, so accumulators are loaded and stored once per 8 keys instead of
  // once per key (measured 1.2x on the whole kernel).
  const int pvVectors =
      std::max(1, std::min((headDim + vec - 1) / vec, 16 / std::max(group, 1)));
  RVar rko("rko"), rki("rki");
  Var dO("dO"), di("di");
  splitOut.update()
      .split(rk, rko, rki, 8)
      .split(d, dO, di, pvVectors * vec, guard)
      .reorder(di, g, rki, dO, t, hk, rko)
      .vectorize(di, vec, guard)
      .unroll(di)
      .unroll(g);
  score.compute_at(partial, task);
  // Per (token, key): every row of every group reuses each loaded K vector;
  // the lane sums live in a fixed-size (stack) buffer, stored rows next to
  // lanes so that one reduction tree finishes the whole group's dot
  // products of a key (one horizontal sum per row took 1.4x as long).
  score.update().reorder(rl, g, hk, j, t).atomic().vectorize(rl);
  if (group > 1) {
    score.bound(g, 0, group).reorder_storage(g, j, t, hk, b);
    score.update().vectorize(g);
    dotLanes.reorder_storage(lane, g, j, t, hk, b);
  }
  dotLanes.compute_at(score, j).vectorize(lane);
  dotLanes.update().reorder(lane, g, ro, hk).vectorize(lane).unroll(g);

  return buffers.finish({output});
}

} // namespace attn
