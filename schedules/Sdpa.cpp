//===- Sdpa.cpp - fused scaled dot-product attention in Halide ------------===//
//
// Flash-style attention: per (batch, head, block of queryBlock query rows) a
// running online-softmax state (row max m, row sum l, unnormalized output o)
// is updated once per chunk of kvChunk keys; the score matrix never exists
// beyond one block x one chunk (128 x 256 floats by default, L2-resident).
// Chunks no row of a block sees (causal, sliding window) are skipped, not
// masked.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/Pipelines.h"

#include "AttentionParts.h"
#include "attn/schedules/Avx512Attention.h"
#include "attn/schedules/CpuFamily.h"

#include <algorithm>
#include <map>

#include <cmath>

using namespace Halide;

namespace attn {

namespace {
/// The CUDA schedule's tile: 32 query rows x 32 keys per chunk, so the
/// block's threads cover a 32 x 32 tile of scores (1024 threads) and 32
/// rows x 32 channels of P·V and of the state.
constexpr int kGpuTile = 32;

/// The CUDA schedule: one thread block per (query block, head, batch
/// entry); per chunk of keys, the chunk's K and V staged in shared memory by
/// all threads, scores with one thread per (row, key), row max and sum with
/// one thread per row, P·V and the online-softmax state with one thread per
/// (row, 32-channel slice) looping over the slices. Unmeasured: no GPU was
/// at hand when it was written (PTX checked by ptxas for sm_80 and sm_90;
/// see test/kernels/GpuPtxTest.cpp); FMA-bound, the tensor-core path is
/// docs/cuda-tensor-cores.md.
void scheduleSdpaForGpu(Func output, Func state, Func queryT, Func keyC,
                        Func valueC, Func score, Func logit, Func chunkMax,
                        Func prob, Func chunkSum, Func chunkOut, RDom rc,
                        RDom rk) {
  const TailStrategy guard = TailStrategy::GuardWithIf;
  std::vector<Var> o = output.args(); // (d, h, i, b)
  Var d = o[0], h = o[1], i = o[2], b = o[3], io("io"), ii("ii"), dO("dO"),
      di("di");
  output.split(i, io, ii, kGpuTile, guard)
      .split(d, dO, di, kGpuTile, guard)
      .reorder(dO, di, ii, io, h, b)
      .gpu_blocks(io, h, b)
      .gpu_threads(di, ii);
  std::vector<Var> s = state.args(); // (d, ii, qb, h, b)
  Var sd = s[0], sii = s[1], sdO("sdO"), sdi("sdi");
  state.compute_at(output, io)
      .split(sd, sdO, sdi, kGpuTile, guard)
      .reorder(sdO, sdi, sii)
      .gpu_threads(sdi, sii);
  state.update()
      .split(sd, sdO, sdi, kGpuTile, guard)
      .reorder(sdO, sdi, sii, rc)
      .gpu_threads(sdi, sii);
  // Per chunk, in shared memory: the block's Q rows, the chunk's K and V.
  // Q is staged again for every chunk: staged once per block, outside the
  // chunk loop, Halide 14 packs shared allocations as if nothing lived
  // across that loop's back edge, and the chunk's softmax weights overwrote
  // Q before the next chunk read it (found on PoCL's OpenCL device,
  // opencl-library-test: wrong rows from the second chunk on).
  std::vector<Var> q = queryT.args(); // (i, d, h, b)
  queryT.compute_at(state, rc).gpu_threads(q[0]);
  for (Func kv : {keyC, valueC}) { // (d, h, j, b)
    std::vector<Var> a = kv.args();
    Var kdO("kdO"), kdi("kdi");
    kv.compute_at(state, rc)
        .split(a[0], kdO, kdi, kGpuTile, guard)
        .reorder(kdO, kdi, a[2])
        .gpu_threads(kdi, a[2]);
  }
  std::vector<Var> l = logit.args(); // (i, j, h, b)
  logit.compute_at(state, rc).gpu_threads(l[0], l[1]);
  score.compute_at(logit, l[0]);
  prob.compute_at(state, rc).gpu_threads(prob.args()[0], prob.args()[1]);
  chunkMax.compute_at(state, rc).gpu_threads(chunkMax.args()[0]);
  chunkSum.compute_at(state, rc).gpu_threads(chunkSum.args()[0]);
  chunkSum.update().gpu_threads(chunkSum.args()[0]);
  std::vector<Var> c = chunkOut.args(); // (d, i, h, b, c)
  Var cdO("cdO"), cdi("cdi");
  chunkOut.compute_at(state, rc)
      .split(c[0], cdO, cdi, kGpuTile, guard)
      .reorder(cdO, cdi, c[1])
      .gpu_threads(cdi, c[1]);
  chunkOut.update()
      .split(c[0], cdO, cdi, kGpuTile, guard)
      .reorder(rk, cdO, cdi, c[1])
      .gpu_threads(cdi, c[1]);
}
} // namespace

KernelPipeline buildSdpaPipeline(const SdpaSpec &requested,
                                 const Target &target) {
  const bool gpu = target.has_gpu_feature();
  // bf16 products are the CPU's AVX512-BF16 path; on a GPU the kernel stays
  // fp32 (tensor cores are docs/cuda-tensor-cores.md).
  if (requested.compute == SdpaCompute::BF16 && !gpu)
    return buildSdpaBf16Pipeline(requested, target);
  SdpaSpec spec = requested;
  if (gpu)
    spec.schedule.queryBlock = spec.schedule.kvChunk = kGpuTile;
  const SdpaSchedule &sched = spec.schedule;
  const int headDim = spec.headDim;
  const int group = spec.queryHeadsPerKvHead();
  const int queryBlock = sched.queryBlock;
  const int kvChunk = sched.kvChunk;

  // ALGORITHM ---------------------------------------------------------------
  // Halide dimensions run innermost first: query(d, h, i, b) is the C array
  // query[b][i][h][d]. Query rows are split into blocks qb of queryBlock rows
  // (ii within), keys into chunks c of kvChunk keys.
  Var d("d"), h("h"), i("i"), b("b"), j("j"), c("c");
  PrefillInputs inputs(spec, b);
  ImageParam query = inputs.query, key = inputs.key, value = inputs.value;
  Expr qLen = inputs.qLen, kvLen = inputs.kvLen;
  const PrefillMask &mask = inputs.mask;
  Expr numChunks = (kvLen + kvChunk - 1) / kvChunk;

  // Tail blocks and chunks read clamped rows/keys; the mask removes them.
  // Q is transposed (rows innermost, so Q·Kᵀ vectorizes over rows) and
  // pre-scaled into the log2 domain, so the softmax needs exp2 only.
  Func queryT("queryT");
  queryT(i, d, h, b) =
      query(d, h, min(i, qLen - 1), b) * (spec.scale * float(M_LOG2E));
  // K and V per KV head (keyH, valueH: packed head by head on CPUs), as
  // query head h reads them (keyC, valueC).
  Var hk("hk");
  Func keyH("keyH"), valueH("valueH"), keyC("keyC"), valueC("valueC");
  keyH(d, hk, j, b) = key(d, hk, min(j, kvLen - 1), b);
  valueH(d, hk, j, b) = value(d, hk, min(j, kvLen - 1), b);
  keyC(d, h, j, b) = keyH(d, h / group, j, b);
  valueC(d, h, j, b) = valueH(d, h / group, j, b);

  RDom rd(0, headDim, "rd");
  Func score("score");
  score(i, j, h, b) = 0.0f;
  score(i, j, h, b) += queryT(i, rd, h, b) * keyC(rd, h, j, b);

  Expr visible = mask.visible(i, j);
  Func logit("logit");
  logit(i, j, h, b) = prefillLogit(spec, mask, score(i, j, h, b), i, j, h);

  // Per chunk: row max, exponentials, row sum, and P·V.
  RDom rk(0, kvChunk, "rk");
  Expr chunkKey = c * kvChunk + rk;
  Func chunkMax("chunkMax");
  chunkMax(i, h, b, c) = maximum(logit(i, chunkKey, h, b));
  Func prob("prob");
  prob(i, j, h, b) =
      exp2Nonpositive(logit(i, j, h, b) - chunkMax(i, h, b, j / kvChunk)) *
      select(visible, 1.0f, 0.0f);
  Func chunkSum("chunkSum");
  chunkSum(i, h, b, c) = 0.0f;
  chunkSum(i, h, b, c) += prob(i, chunkKey, h, b);
  Func chunkOut("chunkOut");
  chunkOut(d, i, h, b, c) = 0.0f;
  chunkOut(d, i, h, b, c) +=
      prob(i, chunkKey, h, b) * valueC(d, h, chunkKey, b);

  // Where the CPU family's row says so (CpuFamily.h, asked when the kernel
  // runs) and the CPU has AVX-512, full
  // attention of a task's rows is the AVX-512 micro-kernels'
  // (Avx512Attention.h) as an extern stage, from Q as given, K in panels of
  // 32 keys and the packed V.
  const bool avx512 = sdpaUsesAvx512Kernel(spec, target);
  Expr avx512Ready;
  Func keyEnd("key_end"), keyPanels("key_panels"),
      avx512Output("avx512_attention");
  if (avx512) {
    avx512Ready =
        Internal::Call::make(Int(32), "attn_avx512_attention_ready", {},
                             Internal::Call::PureExtern) != 0;
    keyEnd(b) = mask.keyEnd;
    Var lane("lane"), jb("jb");
    keyPanels.define_extern("attn_avx512_pack_key_panels", {key, kvLen},
                            Float(32), {lane, d, jb, hk, b});
    avx512Output.define_extern("attn_avx512_attention_f32",
                               {query, keyPanels, valueH, keyEnd, group, kvLen,
                                spec.scale, sched.kvChunk},
                               Float(32), {d, h, i, b});
  }

  // Online softmax over the chunks each query block sees: (m, l, o) ⊕
  // (m', l', o') rescales both sides to max(m, m'), associative, so a Tuple
  // update over the chunk RDom; then O / l.
  const int vec = sched.vectorWidth > 0 ? sched.vectorWidth
                                        : target.natural_vector_size<float>();
  PrefillOutput result =
      buildPrefillOutput(spec, mask, inputs.sinks, chunkMax, chunkSum, chunkOut, numChunks,
                         kvChunk, vec, gpu, avx512Ready, avx512Output);
  Func state = result.state, output = result.output;
  RDom rc = result.chunks;
  Var task = result.task;
  if (gpu) {
    scheduleSdpaForGpu(output, state, queryT, keyC, valueC, score, logit,
                       chunkMax, prob, chunkSum, chunkOut, rc, rk);
    return inputs.finish(output);
  }

  // SCHEDULE ----------------------------------------------------------------
  // Tasks and the online-softmax state as buildPrefillOutput schedules them
  // (one per batch, head and query block). Inside, for each key chunk:
  // S = Q·Kᵀ in (2 vectors of rows) x qkTileKeys register tiles, row max /
  // exp2 / row sum vectorized over rows, O_c = P·V in pvTileRows x (4
  // vectors of d) register tiles, then the online-softmax update.
  // Measured (bench/README.md, 2 Zen 4 cores), default 128/256/4/4 tiles:
  // 64-77% of the fp32 FMA peak for full attention at S >= 512 (D128
  // S=2048: MHA 72%, GQA 32/8 77%), 37-62% causal (S=512 to 2048). On 2
  // Sapphire Rapids vCPUs: D128 S2048 full MHA 59% (ONNX Runtime's MLAS
  // kernels: 70%), causal 50-53%; D64 S512 full 51% (Intel's 4 x 4 tiles).
  // Full attention on Intel cores is the AVX-512 extern stage's instead:
  // D128 S2048 68-69%, D64 S512 57-58%, 1.01x ONNX Runtime on both
  // (bench/README.md, session 24).
  Var si("si"), sj("sj"), so("so"), sjo("sjo");
  Var di("di"), dO("dO"), ri("ri"), ro("ro"), kvTask("kvTask");
  queryT.compute_at(output, task).vectorize(i, vec, TailStrategy::GuardWithIf);

  // K and V copied once per call into one contiguous block per KV head:
  // read in place, a head's consecutive keys lie heads x head_dim x 4 bytes
  // apart (16 KiB at 32 x 128), so the rows a chunk streams share a few L1
  // sets and pages. On 2 Sapphire Rapids vCPUs the copy took 10-14% off
  // every S2048 shape and 11% off D64 S512 full (bench/README.md).
  for (Func packed : {keyH, valueH})
    packed.compute_root()
        .reorder_storage(d, j, hk, b)
        .reorder(d, j, hk, b)
        .fuse(hk, b, kvTask)
        .parallel(kvTask)
        .vectorize(d, vec, TailStrategy::GuardWithIf);
  if (avx512) {
    // Where the CPU qualifies the extern stage computes each task's block
    // of rows; elsewhere the select takes the products scheduled below.
    output.specialize(avx512Ready);
    avx512Output.compute_at(output, task);
    keyEnd.compute_root();
    keyPanels.compute_root().fuse(hk, b, kvTask).parallel(kvTask);
  }

  // Q·Kᵀ: register tile of 2·vec rows x qkTileKeys keys, accumulated over d
  // (Intel cores: the schedule's intelQkTile, where the library carries the
  // vendor probe; both loop nests are compiled, the branch taken per
  // chunk). RoundUp: tail tiles compute a few clamped rows/keys beyond the
  // block rather than guarding every lane; a tile's rows are capped at the
  // block's (short-sequence schedules have 16-row blocks).
  logit.compute_at(state, rc);
  auto tileScores = [&](Stage logitTiles, int rowVectors, int keys) {
    rowVectors =
        std::min(rowVectors, std::max(2, (queryBlock + vec - 1) / vec));
    logitTiles.split(i, so, si, rowVectors * vec, TailStrategy::RoundUp)
        .split(j, sjo, sj, keys, TailStrategy::RoundUp)
        .reorder(si, sj, so, sjo)
        .vectorize(si, vec)
        .unroll(si)
        .unroll(sj);
  };
  const SdpaSchedule::QkTile intel = sched.intelQkTile;
  const bool perVendor =
      spec.x86Object && target.arch == Target::X86 && target.bits == 64 &&
      intel.keys > 0 &&
      (intel.keys != sched.qkTileKeys || intel.rowVectors != 2);
  if (perVendor)
    tileScores(
        logit.specialize(Internal::Call::make(Int(32), "attn_cpu_intel_qk_tile", {},
                                              Internal::Call::PureExtern) != 0),
        intel.rowVectors, intel.keys);
  tileScores(logit, 2, sched.qkTileKeys);
  score.compute_at(logit, so).vectorize(i, vec).unroll(i).unroll(j);
  score.update().reorder(i, j, rd).vectorize(i, vec).unroll(i).unroll(j);

  chunkMax.compute_at(state, rc).vectorize(i, vec, TailStrategy::GuardWithIf);
  prob.compute_at(state, rc).vectorize(i, vec, TailStrategy::GuardWithIf);
  chunkSum.compute_at(state, rc).vectorize(i, vec, TailStrategy::GuardWithIf);
  chunkSum.update().reorder(i, rk).vectorize(i, vec, TailStrategy::GuardWithIf);

  // P·V: register tile of pvTileRows rows x pvTileChannels, over the chunk.
  const int pvCols = pvTileChannels(headDim, vec);
  const int pvRows = sched.pvTileRows;
  chunkOut.compute_at(state, rc).vectorize(d, vec, TailStrategy::GuardWithIf);
  chunkOut.update()
      .split(d, dO, di, pvCols, TailStrategy::GuardWithIf)
      .split(i, ro, ri, pvRows, TailStrategy::GuardWithIf)
      .reorder(di, ri, rk, dO, ro)
      .vectorize(di, vec, TailStrategy::GuardWithIf)
      .unroll(ri);

  KernelPipeline kernel = inputs.finish(output);
  // JIT users (tests, attn-bench) ask this process's probe and call the
  // AVX-512 kernels in-process.
  std::map<std::string, JITExtern> externs;
  if (perVendor)
    externs.emplace("attn_cpu_intel_qk_tile", JITExtern(attn_cpu_intel_qk_tile));
  if (avx512) {
    externs.emplace("attn_avx512_attention_ready",
                    JITExtern(attn_avx512_attention_ready));
    externs.emplace("attn_avx512_pack_key_panels",
                    JITExtern(attn_avx512_pack_key_panels));
    externs.emplace("attn_avx512_attention_f32",
                    JITExtern(attn_avx512_attention_f32));
  }
  if (!externs.empty())
    kernel.pipeline.set_jit_externs(externs);
  return kernel;
}

bool sdpaUsesAvx512Kernel(const SdpaSpec &spec, const Target &target) {
  return spec.x86Object && spec.compute == SdpaCompute::F32 && !spec.causal &&
         spec.window == 0 && spec.softcap == 0.0f && !spec.alibi &&
         !spec.sinks && spec.headDim % avx512::kOutputChannels == 0 &&
         spec.headDim <= avx512::kMaxHeadDim &&
         target.arch == Target::X86 && target.bits == 64 &&
         !target.has_gpu_feature() && target.has_feature(Target::AVX512);
}

} // namespace attn
