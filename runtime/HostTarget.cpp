//===- HostTarget.cpp - can this CPU run code built for a Halide target ---===//
//
// A model library's kernels were compiled for the CPU that built them (or
// for the targets its build asked for); on a machine without one of their
// instruction-set extensions they would die of SIGILL in the first kernel.
// The runtime checks first and refuses by name.
//
//===----------------------------------------------------------------------===//

#include "HostTarget.h"

#include <algorithm>
#include <utility>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <sstream>
#include <vector>

namespace attn::runtime {

namespace {

/// Halide's x86 feature names and the CPU flags (Linux's /proc/cpuinfo
/// spelling) each implies.
struct FeatureNeed {
  const char *halide;
  std::vector<const char *> flags;
};

#if defined(__x86_64__) || defined(__i386__)
/// CPUID's answer for a flag, and whether the OS saves the registers it
/// needs (XGETBV): what Halide's runtime asks too.
bool hostHas(const std::string &flag) {
  unsigned a, b, c, d;
  auto cpuid = [&](unsigned leaf, unsigned subleaf) {
    return __get_cpuid_count(leaf, subleaf, &a, &b, &c, &d) != 0;
  };
  if (!cpuid(1, 0))
    return false;
  bool osAvx = false, osAvx512 = false;
  if (c & (1u << 27)) { // OSXSAVE
    unsigned low, high;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    osAvx = (low & 0x6) == 0x6;
    osAvx512 = osAvx && (low & 0xE0) == 0xE0;
  }
  unsigned c1 = c;
  if (flag == "sse4.1")
    return c1 & (1u << 19);
  if (flag == "avx")
    return osAvx && (c1 & (1u << 28));
  if (flag == "fma")
    return osAvx && (c1 & (1u << 12));
  if (flag == "f16c")
    return osAvx && (c1 & (1u << 29));
  if (!cpuid(7, 0))
    return false;
  unsigned b7 = b, c7 = c;
  if (flag == "avx2")
    return osAvx && (b7 & (1u << 5));
  static const std::pair<const char *, int> kEbx[] = {
      {"avx512f", 16},  {"avx512dq", 17}, {"avx512ifma", 21},
      {"avx512cd", 28}, {"avx512bw", 30}, {"avx512vl", 31}};
  for (auto [name, bit] : kEbx)
    if (flag == name)
      return osAvx512 && (b7 & (1u << bit));
  if (flag == "avx512vbmi")
    return osAvx512 && (c7 & (1u << 1));
  if (flag == "avx512vnni")
    return osAvx512 && (c7 & (1u << 11));
  if (flag == "avx512bf16")
    return osAvx512 && cpuid(7, 1) && (a & (1u << 5));
  return false;
}
#endif

} // namespace

std::string whyHostCannotRun(const std::string &halideTarget) {
  std::vector<std::string> parts;
  std::stringstream stream(halideTarget);
  for (std::string part; std::getline(stream, part, '-');)
    parts.push_back(part);
  if (parts.empty())
    return "no target given";
#if defined(__x86_64__) || defined(__i386__)
  if (parts[0] != "x86")
    return "its kernels are for " + parts[0] + ", this machine is x86";
  static const FeatureNeed kNeeds[] = {
      {"sse41", {"sse4.1"}},
      {"avx", {"avx"}},
      {"avx2", {"avx2"}},
      {"fma", {"fma"}},
      {"f16c", {"f16c"}},
      {"avx512", {"avx512f", "avx512cd"}},
      {"avx512_knl", {"avx512f", "avx512cd"}},
      {"avx512_skylake", {"avx512f", "avx512cd", "avx512vl", "avx512bw",
                          "avx512dq"}},
      {"avx512_cannonlake",
       {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq",
        "avx512ifma", "avx512vbmi"}},
      {"avx512_sapphirerapids",
       {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq",
        "avx512ifma", "avx512vbmi", "avx512vnni", "avx512bf16"}},
  };
  std::vector<std::string> missing;
  for (const std::string &feature : parts)
    for (const FeatureNeed &need : kNeeds)
      if (feature == need.halide)
        for (const char *flag : need.flags)
          if (!hostHas(flag) &&
              std::find(missing.begin(), missing.end(), flag) == missing.end())
            missing.push_back(flag);
  if (!missing.empty()) {
    std::string list;
    for (const std::string &flag : missing)
      list += (list.empty() ? "" : " ") + flag;
    return "its kernels need CPU features this machine lacks (" + list + ")";
  }
  return "";
#elif defined(__aarch64__)
  return parts[0] == "arm" ? "" : "its kernels are for " + parts[0] +
                                      ", this machine is arm";
#else
  (void)parts;
  return "";
#endif
}

} // namespace attn::runtime
