//===- CpuFamily.cpp - the CPU family and its schedule choices ------------===//
//
// Part of the x86-64 object every x86-64 model library carries: the C
// library only, no C++ runtime, every symbol weak (applications link
// several model libraries).
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/CpuFamily.h"

#include <cstdlib>
#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace {
/// The choices per family, stated once; each from bench/README.md.
struct FamilyChoices {
  int intelQkTile;
  int avx512Attention;
};
constexpr FamilyChoices kChoices[] = {
    // ATTN_CPU_OTHER: the Halide schedules as compiled.
    {0, 0},
    // ATTN_CPU_INTEL (Xeon with AMX, family 6 model 143/167): 4-key Q·Kᵀ
    // tiles 13% faster ("Intel Xeon with AMX: cached temporaries ...");
    // the micro-kernels 1.14-1.19x the Halide products ("fp32 full
    // attention as AVX-512 micro-kernels").
    {1, 1},
    // ATTN_CPU_ZEN4 (family 25 model 17): 8-key tiles; the micro-kernels
    // 1.10-1.14x the Halide products at D128 S2048, 1.0-1.07x at D64 S512
    // (issue #52's A/B, with a low-priority process beside it).
    {0, 1},
    // ATTN_CPU_ZEN5 (family 26 model 2): 8-key tiles; the micro-kernels
    // 1.17-1.43x the Halide products on every full fp32 shape of attn-bench
    // ("The AVX-512 micro-kernels on Zen 5").
    {0, 1},
};

int askFamily() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d))
    return ATTN_CPU_OTHER;
  char vendor[13];
  std::memcpy(vendor, &b, 4); // "Genu" "ineI" "ntel": ebx, edx, ecx
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  vendor[12] = '\0';
  if (std::strcmp(vendor, "GenuineIntel") == 0)
    return ATTN_CPU_INTEL;
  if (std::strcmp(vendor, "AuthenticAMD") != 0 || !__get_cpuid(1, &a, &b, &c, &d))
    return ATTN_CPU_OTHER;
  // The family: base 0xf plus the extended family (bits 20-27).
  const unsigned family = ((a >> 8) & 0xf) + ((a >> 20) & 0xff);
  if (family == 0x1a)
    return ATTN_CPU_ZEN5;
  if (family == 0x19 && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
      (b & (1u << 16))) // AVX-512F: Zen 4, not Zen 3
    return ATTN_CPU_ZEN4;
#endif
  return ATTN_CPU_OTHER;
}

/// Asked once (cpuid traps to a hypervisor); racing first callers store the
/// same answer. No function-local static guard: that is C++ runtime.
int cachedFamily() {
  static int answer = -1;
  int family = __atomic_load_n(&answer, __ATOMIC_RELAXED);
  if (family < 0) {
    family = askFamily();
    __atomic_store_n(&answer, family, __ATOMIC_RELAXED);
  }
  return family;
}
} // namespace

extern "C" __attribute__((weak)) int attn_cpu_family(void) {
  return cachedFamily();
}

extern "C" __attribute__((weak)) int attn_cpu_intel_qk_tile(void) {
  return kChoices[cachedFamily()].intelQkTile;
}

extern "C" __attribute__((weak)) int attn_cpu_avx512_attention(void) {
  static int answer = -1;
  int use = __atomic_load_n(&answer, __ATOMIC_RELAXED);
  if (use < 0) {
    const char *forced = std::getenv("ATTN_AVX512_ATTENTION");
    use = forced && (!std::strcmp(forced, "0") || !std::strcmp(forced, "1"))
              ? forced[0] - '0'
              : kChoices[cachedFamily()].avx512Attention;
    __atomic_store_n(&answer, use, __ATOMIC_RELAXED);
  }
  return use;
}
