//===- CpuVendor.h - which x86 vendor's cores run the kernels ---*- C++ -*-===//
//
// The same AVX-512 instructions run on Zen 4 (in 256-bit halves), Zen 5 and
// Intel cores (full 512-bit, other ports and caches), and a register tile
// right on one can be 13% off on another (AttentionSchedules.h). Kernels
// whose schedule has a tile per vendor ask this when they run; it lives in
// attnc's x86-64 object (beside the AMX kernels), which every x86-64 model
// library carries.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_CPUVENDOR_H
#define ATTN_SCHEDULES_CPUVENDOR_H

extern "C" {
/// 1 on a CPU whose cpuid vendor is GenuineIntel, else 0 (also on other
/// architectures). The name is the ABI between the pipelines and the object.
int attn_cpu_is_intel(void);
}

#endif // ATTN_SCHEDULES_CPUVENDOR_H
