//===- Targets.cpp - attnc's target names ---------------------------------===//

#include "Targets.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace attnc {
namespace {
struct TargetName {
  llvm::StringRef name;
  llvm::StringRef halide; // comma-separated: one variant each
  llvm::StringRef what;
};

#define X86_BASE "x86-64-linux-sse41"
#define X86_AVX2 X86_BASE "-avx-avx2-fma-f16c"
#define X86_AVX512 X86_AVX2 "-avx512-avx512_skylake"
#define X86_SPR X86_AVX512 "-avx512_cannonlake-avx512_sapphirerapids"

const TargetName kTargetNames[] = {
    {"host", "host", "this machine's CPU"},
    {"x86-64", X86_BASE, "any x86-64 Linux CPU (SSE4.1)"},
    {"x86-64-avx2", X86_AVX2, "Haswell and later, Zen"},
    {"x86-64-avx512", X86_AVX512, "Skylake-SP and later, Zen 4"},
    {"sapphirerapids", X86_SPR, "AVX-512 with BF16 and VNNI"},
    {"x86-64-dispatch", X86_SPR "," X86_AVX512 "," X86_AVX2 "," X86_BASE,
     "all four x86-64 variants, the best chosen at run time"},
    {"arm64-linux", "arm-64-linux", "AArch64 Linux (cross-compiled)"},
    // The host side of a CUDA pipeline (launches, the odd scalar loop) runs
    // on any x86-64; the device code is PTX for compute capability 8.0,
    // which the driver JIT-compiles for Ampere and later (sm_90 included).
    {"cuda", "x86-64-linux-sse41-cuda-cuda_capability_80",
     "NVIDIA GPUs, Ampere and later (kernels <name>_cuda_kernel, beside "
     "any CPU ones)"},
    // OpenCL 1.2 devices, through Halide's OpenCL C backend. No GPU needed
    // to run them: PoCL's CPU device runs them in CI, which is how the
    // runtime's device path is tested where no GPU is at hand.
    {"opencl", "x86-64-linux-sse41-opencl",
     "OpenCL 1.2 devices, PoCL's CPU device included (kernels "
     "<name>_opencl_kernel)"},
};
} // namespace

llvm::Expected<std::string> expandTargetNames(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef, 4> items;
  list.split(items, ',', -1, /*KeepEmpty=*/false);
  if (items.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--target needs at least one target");
  std::string expanded;
  for (llvm::StringRef item : items) {
    item = item.trim();
    const TargetName *known = llvm::find_if(
        kTargetNames, [&](const TargetName &t) { return t.name == item; });
    llvm::StringRef halide = item;
    if (known != std::end(kTargetNames))
      halide = known->halide;
    expanded += (expanded.empty() ? "" : ",") + halide.str();
  }
  return expanded;
}

llvm::Expected<LibraryTargets> splitLibraryTargets(llvm::StringRef expanded) {
  llvm::SmallVector<llvm::StringRef, 4> items;
  expanded.split(items, ',', -1, /*KeepEmpty=*/false);
  LibraryTargets targets;
  for (llvm::StringRef item : items) {
    llvm::SmallVector<llvm::StringRef, 8> features;
    item.split(features, '-');
    llvm::StringRef api = llvm::is_contained(features, "cuda")     ? "cuda"
                          : llvm::is_contained(features, "opencl") ? "opencl"
                                                                   : "";
    if (api.empty()) {
      targets.cpu.push_back(item.str());
      continue;
    }
    if (!targets.gpu.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "one library holds one GPU target; '" +
                                         expanded + "' has two");
    targets.gpu = item.str();
    targets.gpuApi = api.str();
  }
  return targets;
}

namespace {
bool isGpuItem(llvm::StringRef item) {
  llvm::SmallVector<llvm::StringRef, 8> features;
  item.split(features, '-');
  return llvm::is_contained(features, "cuda") ||
         llvm::is_contained(features, "opencl");
}
} // namespace

std::string withoutGpuTargets(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef, 4> items;
  list.split(items, ',', -1, /*KeepEmpty=*/false);
  std::string cpu;
  for (llvm::StringRef item : items)
    if (!isGpuItem(item.trim()))
      cpu += (cpu.empty() ? "" : ",") + item.trim().str();
  return cpu;
}

std::string describeTargetNames() {
  std::string text;
  for (const TargetName &t : kTargetNames)
    text += llvm::formatv("  {0,-16} {1}\n", t.name, t.what).str();
  return text;
}

} // namespace attnc
