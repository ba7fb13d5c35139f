//===- SdpaBf16.cpp - fused attention with bf16 matrix products
//------------===//
//
// The algorithm of Sdpa.cpp (flash-style online softmax over key chunks, the
// same masks and chunk skipping) with both matrix products on bf16 operands
// and fp32 accumulators, so that AVX512-BF16's vdpbf16ps (16 lanes x a pair
// of products each: twice the fp32 FMA's work per instruction) does them.
// Halide 14 emits vdpbf16ps for a 2-way VectorReduce of
// f32(bf16 a) * f32(bf16 b) into an fp32 accumulator on targets with
// avx512_sapphirerapids; elsewhere the same pipeline is correct, just not
// faster than fp32.
//
// vdpbf16ps multiplies pairs: lane l of the accumulator gets
// a[2l]·b[2l] + a[2l+1]·b[2l+1]. So each product's vectorized operand is
// packed with its reduction dimension in pairs innermost:
//   Q·Kᵀ vectorizes over keys: K packed as [pair of d][key][2], Q's pair
//        (d, d+1) of one row broadcast (Q rows are d-contiguous already);
//   P·V  vectorizes over d: V packed as [pair of keys][d][2], P's pair
//        (j, j+1) of one row broadcast (P is stored key-innermost).
// K and V are packed once per call (O(S·D) against O(S²·D) of work); Q per
// task. Scores are key-innermost, so the row max and row sum of a chunk are
// vector reductions (rfactor) finished by one horizontal step per row.
//
// Inputs and outputs are fp32, as for the fp32 kernel: callers choose the
// precision, not the data layout.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/Pipelines.h"

#include "AttentionParts.h"
#include "attn/schedules/AmxAttention.h"
#include "attn/schedules/AmxLinear.h"

#include <cmath>
#include <stdexcept>

using namespace Halide;

namespace attn {

KernelPipeline buildSdpaBf16Pipeline(const SdpaSpec &spec,
                                     const Target &target) {
  if (spec.headDim % 2 != 0)
    throw std::invalid_argument("bf16 attention needs an even head_dim, not " +
                                std::to_string(spec.headDim));
  const SdpaSchedule &sched = spec.schedule;
  const int headDim = spec.headDim;
  const int group = spec.queryHeadsPerKvHead();
  const int queryBlock = sched.queryBlock;
  const int vec = sched.vectorWidth > 0 ? sched.vectorWidth
                                        : target.natural_vector_size<float>();
  // Chunks are whole vectors of keys (and so whole pairs).
  const int kvChunk = (std::max(sched.kvChunk, 1) + vec - 1) / vec * vec;

  // ALGORITHM ---------------------------------------------------------------
  // As in Sdpa.cpp: query(d, h, i, b) is query[b][i][h][d]; rows in blocks
  // qb of queryBlock (ii within), keys in chunks c of kvChunk.
  Var d("d"), h("h"), i("i"), b("b"), j("j"), c("c");
  Var pair("pair"), lane("lane"), hk("hk");
  PrefillInputs inputs(spec, b);
  ImageParam query = inputs.query, key = inputs.key, value = inputs.value;
  Expr qLen = inputs.qLen, kvLen = inputs.kvLen;
  const PrefillMask &mask = inputs.mask;
  Expr numChunks = (kvLen + kvChunk - 1) / kvChunk;
  const Type bf16 = BFloat(16);

  // Operands, rounded to bf16 (round to nearest even). Q pre-scaled into the
  // log2 domain as in the fp32 kernel; tail rows and keys clamped, then
  // masked.
  Func queryB("queryB"); // [b][h][i][d]
  queryB(d, i, h, b) = cast(bf16, query(d, h, min(i, qLen - 1), b) *
                                      (spec.scale * float(M_LOG2E)));
  Func keyB("keyB"); // [b][kv head][pair of d][key][2]
  keyB(lane, j, pair, hk, b) =
      cast(bf16, key(2 * pair + lane, hk, min(j, kvLen - 1), b));
  Func valueB("valueB"); // [b][kv head][pair of keys][d][2]
  valueB(lane, d, pair, hk, b) =
      cast(bf16, value(d, hk, min(2 * pair + lane, kvLen - 1), b));

  RDom rd(0, 2, 0, headDim / 2, "rd"); // (lane, pair of d)
  Func score("score");                 // key-innermost: [b][h][i][j]
  score(j, i, h, b) = 0.0f;
  score(j, i, h, b) += cast<float>(keyB(rd.x, j, rd.y, h / group, b)) *
                       cast<float>(queryB(2 * rd.y + rd.x, i, h, b));

  Expr visible = mask.visible(i, j);
  Func logit("logit");
  logit(j, i, h, b) = prefillLogit(spec, mask, score(j, i, h, b), i, j, h);

  // Per chunk: row max, probabilities (stored bf16: they are P·V's
  // broadcast operand), their row sum (of the rounded values P·V uses, so
  // the normalization matches), and P·V.
  RDom rk(0, kvChunk, "rk");
  Expr chunkKey = c * kvChunk + rk;
  Func chunkMax("chunkMax");
  chunkMax(i, h, b, c) = kMaskedLogit;
  chunkMax(i, h, b, c) = max(chunkMax(i, h, b, c), logit(chunkKey, i, h, b));
  Func prob("prob");
  prob(j, i, h, b) =
      cast(bf16,
           exp2Nonpositive(logit(j, i, h, b) - chunkMax(i, h, b, j / kvChunk)) *
               select(visible, 1.0f, 0.0f));
  Func chunkSum("chunkSum");
  chunkSum(i, h, b, c) = 0.0f;
  chunkSum(i, h, b, c) += cast<float>(prob(chunkKey, i, h, b));
  RDom rp(0, 2, 0, kvChunk / 2, "rp"); // (lane, pair of keys in the chunk)
  Func chunkOut("chunkOut");
  chunkOut(d, i, h, b, c) = 0.0f;
  chunkOut(d, i, h, b, c) +=
      cast<float>(valueB(rp.x, d, c * (kvChunk / 2) + rp.y, h / group, b)) *
      cast<float>(prob(c * kvChunk + 2 * rp.y + rp.x, i, h, b));

  // On a CPU with AMX (checked when the kernel runs), the whole attention of
  // a task's rows is the AMX kernel's (AmxAttention.h), from the same bf16
  // operands, as an extern stage.
  const bool amx = sdpaUsesAmx(spec, target);
  Expr amxReady;
  Func keyEnd("key_end"), keyTiles("amx_key_tiles"),
      valuePairs("amx_value_pairs"), amxOutput("amx_attention");
  if (amx) {
    amxReady = Internal::Call::make(Int(32), "attn_amx_ready", {},
                                    Internal::Call::PureExtern) != 0;
    keyEnd(b) = mask.keyEnd;
    // K in 1 KiB operand tiles, V in pairs of keys (AmxAttention.h),
    // packed by the AMX object: keyB's rows of keys, one pair of channels
    // apart, put a tile's 16 rows kv_len·4 bytes apart, and Halide packs K
    // with a gather per vector (H32 D128 S2048 full: 153 ms on keyB, 109
    // ms on the tiles).
    Var jj("jj"), jb("jb");
    keyTiles.define_extern("attn_amx_pack_keys", {key, kvLen}, UInt(16),
                           {lane, jj, pair, jb, hk, b});
    valuePairs.define_extern("attn_amx_pack_values", {value, kvLen},
                             UInt(16), {lane, d, pair, hk, b});
    amxOutput.define_extern(
        "attn_amx_attention_bf16",
        {queryB, keyTiles, valuePairs, keyEnd, group, kvLen, mask.diagonal,
         int(spec.causal || spec.window > 0), spec.window,
         sched.kvChunk},
        Float(32), {d, h, i, b});
  }

  // Online softmax over the chunks each query block sees, then O / l.
  PrefillOutput result =
      buildPrefillOutput(spec, mask, inputs.sinks, chunkMax, chunkSum, chunkOut, numChunks,
                         kvChunk, vec, false, amxReady, amxOutput);
  Func state = result.state, output = result.output;
  RDom rc = result.chunks;
  Var task = result.task;

  // SCHEDULE ----------------------------------------------------------------
  // K and V packed up front, one parallel task per (batch, KV head). Then,
  // as in Sdpa.cpp, one parallel task per (batch, head, query block) that
  // walks the key chunks. Q·Kᵀ: register tiles of qkRows rows x qkVectors
  // vectors of keys (a vdpbf16ps per accumulator per pair of d); P·V:
  // pvTileRows rows x up to 4 vectors of d.
  // Measured (bench/README.md, 2 Zen 4 cores with AVX512-BF16, default
  // 128/256/4/4): S=2048 full attention at 110-145% of the fp32 FMA peak
  // (GQA 32/8 D128: 137%, MHA D128: 123%), causal 87-121%, S=512 93-135%
  // full; 1.4-2.2x the fp32 kernel on every shape. The Q·Kᵀ tile alone
  // reaches 205-228 GFLOP/s on one core against the fp32 FMA peak of 117.
  Var kvTask("kvTask"), si("si"), sj("sj"), so("so"), sjo("sjo"), di("di"),
      dO("dO"), ri("ri"), ro("ro"), u("u");

  for (Func packed : {keyB, valueB})
    packed.compute_root()
        .bound(lane, 0, 2)
        .fuse(hk, b, kvTask)
        .parallel(kvTask);
  keyB.unroll(lane).vectorize(j, vec, TailStrategy::GuardWithIf);
  valueB.vectorize(lane).vectorize(d, vec, TailStrategy::GuardWithIf);
  queryB.compute_at(output, task).vectorize(d, vec, TailStrategy::GuardWithIf);
  if (amx) {
    // Where the CPU has AMX: the extern stage computes each task's block of
    // rows; elsewhere the select takes the products scheduled below.
    // Measured (bench/README.md, 2 Sapphire Rapids vCPUs, S=2048 D128):
    // full MHA 707-770 GFLOP/s (182-183% of the fp32 FMA peak), causal MHA
    // 498-534, GQA 32/8 causal 745-879; 3.1-6.0x ONNX Runtime's fp32. The
    // block loop alone runs at 711 GFLOP/s on one core; packing K and V
    // and the page faults of their per-call buffers take the rest.
    output.specialize(amxReady);
    amxOutput.compute_at(output, task);
    keyEnd.compute_root();
    for (Func packed : {keyTiles, valuePairs})
      packed.compute_root().fuse(hk, b, kvTask).parallel(kvTask);
  }

  const int qkRows = std::max(1, sched.qkTileKeys);
  const int qkVectors = std::max(1, std::min(4, 24 / qkRows));
  logit.compute_at(state, rc)
      .split(j, sjo, sj, qkVectors * vec, TailStrategy::RoundUp)
      .split(i, so, si, qkRows, TailStrategy::RoundUp)
      .reorder(sj, si, so, sjo)
      .vectorize(sj, vec)
      .unroll(sj)
      .unroll(si);
  score.compute_at(logit, so).vectorize(j, vec).unroll(j).unroll(i);
  score.update()
      .reorder(rd.x, j, i, rd.y)
      .atomic()
      .vectorize(rd.x)
      .vectorize(j, vec)
      .unroll(j)
      .unroll(i);

  // Row max and row sum: vec partial results per row over the chunk's
  // vectors of keys, then one horizontal step.
  for (Func f : {chunkMax, chunkSum}) {
    RVar rko("rko"), rki("rki");
    Func partial = f.update().split(rk, rko, rki, vec).rfactor(rki, u);
    // rfactor appends u as the outermost dimension; store it innermost so
    // the partial vectors are dense, not strided by the block's rows.
    partial.compute_at(state, rc).reorder_storage(u, i).vectorize(u);
    partial.update().vectorize(u);
    f.compute_at(state, rc);
    f.update().atomic().vectorize(rki);
  }
  prob.compute_at(state, rc).vectorize(j, vec, TailStrategy::GuardWithIf);

  const int pvCols = pvTileChannels(headDim, vec);
  const int pvRows = sched.pvTileRows;
  chunkOut.compute_at(state, rc).vectorize(d, vec, TailStrategy::GuardWithIf);
  chunkOut.update()
      .split(d, dO, di, pvCols, TailStrategy::GuardWithIf)
      .split(i, ro, ri, pvRows, TailStrategy::GuardWithIf)
      .reorder(rp.x, di, ri, rp.y, dO, ro)
      .atomic()
      .vectorize(rp.x)
      .vectorize(di, vec, TailStrategy::GuardWithIf)
      .unroll(ri);

  KernelPipeline kernel = inputs.finish(output);
  if (amx) // JIT users (tests, attn-bench) call the AMX kernel in-process
    kernel.pipeline.set_jit_externs(
        {{"attn_amx_ready", JITExtern(attn_amx_ready)},
         {"attn_amx_pack_keys", JITExtern(attn_amx_pack_keys)},
         {"attn_amx_pack_values", JITExtern(attn_amx_pack_values)},
         {"attn_amx_attention_bf16", JITExtern(attn_amx_attention_bf16)}});
  return kernel;
}

bool sdpaUsesAmx(const SdpaSpec &spec, const Target &target) {
  return spec.x86Object && spec.compute == SdpaCompute::BF16 &&
         spec.headDim % 32 == 0 &&
         spec.headDim <= 256 && spec.softcap == 0.0f && !spec.alibi &&
         !spec.sinks && target.arch == Target::X86 && target.bits == 64 &&
         !target.has_gpu_feature() &&
         target.has_feature(Target::AVX512_SapphireRapids);
}

} // namespace attn
