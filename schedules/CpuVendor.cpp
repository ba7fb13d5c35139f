//===- CpuVendor.cpp - the cpuid vendor, for per-vendor schedules ---------===//
//
// Part of the x86-64 object every x86-64 model library carries: the C
// library only, no C++ runtime, every symbol weak (applications link
// several model libraries).
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/CpuVendor.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <cstring>
#endif

namespace {
int askVendor() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d))
    return 0;
  char vendor[13];
  std::memcpy(vendor, &b, 4); // "Genu" "ineI" "ntel": ebx, edx, ecx
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  vendor[12] = '\0';
  return std::strcmp(vendor, "GenuineIntel") == 0 ? 1 : 0;
#else
  return 0;
#endif
}
} // namespace

extern "C" __attribute__((weak)) int attn_cpu_is_intel(void) {
  // Asked once (cpuid traps to a hypervisor); racing first callers store
  // the same answer. No function-local static: its guard is C++ runtime.
  static int answer = -1;
  int intel = __atomic_load_n(&answer, __ATOMIC_RELAXED);
  if (intel < 0) {
    intel = askVendor();
    __atomic_store_n(&answer, intel, __ATOMIC_RELAXED);
  }
  return intel;
}
