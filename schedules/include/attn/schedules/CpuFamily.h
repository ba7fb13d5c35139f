//===- CpuFamily.h - which family of x86 cores runs the kernels -*- C++ -*-===//
//
// The same AVX-512 instructions run on Zen 4 (in 256-bit halves), Zen 5 and
// Intel cores (full 512-bit, other ports and caches), and a schedule right
// on one can be 13% off on another (AttentionSchedules.h). Kernels whose
// schedule has a choice per family ask these when they run; the answers come
// from one table (CpuFamily.cpp: a row per family, each choice the
// measurement in bench/README.md that made it). They live in attnc's x86-64
// object (beside the AMX kernels), which every x86-64 model library
// carries. The names are the ABI between the pipelines and the object.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_CPUFAMILY_H
#define ATTN_SCHEDULES_CPUFAMILY_H

extern "C" {
/// What cpuid says: the vendor and, for AMD, the family (0x19 Zen 3/4,
/// counted as Zen 4 where AVX-512F is present; 0x1a Zen 5). Other
/// architectures: ATTN_CPU_OTHER.
enum AttnCpuFamily {
  ATTN_CPU_OTHER = 0,
  ATTN_CPU_INTEL = 1,
  ATTN_CPU_ZEN4 = 2,
  ATTN_CPU_ZEN5 = 3,
};
int attn_cpu_family(void);
/// 1 where the family's row takes the fp32 prefill kernels' Intel Q·Kᵀ
/// tile (SdpaSchedule::intelQkTile), else 0.
int attn_cpu_intel_qk_tile(void);
/// 1 where the family's row runs full fp32 prefill attention on the AVX-512
/// micro-kernels (Avx512Attention.h), else 0. The environment variable
/// ATTN_AVX512_ATTENTION=0 or 1, read once, overrides the row (any other
/// value leaves it): for an A/B on a new CPU without a rebuild.
int attn_cpu_avx512_attention(void);
}

#endif // ATTN_SCHEDULES_CPUFAMILY_H
