//===- HalideBackend.cpp - kernel specs to a static library ---------------===//
//
// The one place where attnc meets Halide: kernel specs become pipelines from
// schedules/, compiled ahead of time. With several targets (comma-separated,
// most specific first, the last one the baseline every machine of that
// architecture runs), each kernel is compiled once per target behind a
// wrapper that picks the best one the CPU supports at run time. A GPU
// target compiles every kernel once more, as `<name>_cuda_kernel` or
// `<name>_opencl_kernel`. All
// kernels share one standalone copy of the Halide runtime.
//
//===----------------------------------------------------------------------===//

#include "HalideBackend.h"

#include "attn/schedules/Pipelines.h"

#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <functional>
#include <optional>

// The AMX micro-kernels' object (schedules/: attn_amx.o), embedded at
// build time (compiler/CMakeLists.txt).
extern const unsigned char kAmxObject[];
extern const unsigned long kAmxObject_size;

namespace attnc {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Whether attnc itself is an x86-64 program, so that its embedded AMX
/// object is one too.
constexpr bool kAmxObjectIsX86_64 =
#if defined(__x86_64__)
    true;
#else
    false;
#endif

} // namespace

std::string resolvedCpuTargets(const LibraryTargets &targets) {
  std::string list;
  for (const std::string &name : targets.cpu)
    if (Halide::Target::validate_target_string(name))
      list += (list.empty() ? "" : ",") + Halide::Target(name).to_string();
  return list;
}

llvm::Error emitKernelLibrary(const ModelSpecs &specs,
                              const LibraryTargets &targetNames,
                              llvm::StringRef outDir,
                              llvm::raw_ostream *progress) {
  auto parse = [](const std::string &name) -> llvm::Expected<Halide::Target> {
    if (!Halide::Target::validate_target_string(name))
      return error("unknown Halide target '" + name +
                   "' (examples: host, x86-64-linux-avx2-fma, arm-64-linux)");
    // Kernels keep their asserts: they are what turns a bad buffer into an
    // error code instead of an out-of-bounds access.
    return Halide::Target(name).with_feature(Halide::Target::NoRuntime);
  };
  std::vector<Halide::Target> cpuTargets;
  for (const std::string &name : targetNames.cpu) {
    llvm::Expected<Halide::Target> target = parse(name);
    if (!target)
      return target.takeError();
    cpuTargets.push_back(*target);
  }
  std::optional<Halide::Target> gpuTarget;
  if (!targetNames.gpu.empty()) {
    llvm::Expected<Halide::Target> target = parse(targetNames.gpu);
    if (!target)
      return target.takeError();
    gpuTarget = *target;
  }
  if (cpuTargets.empty() && !gpuTarget)
    return error("no Halide target given");
  // The CPU baseline, or the GPU target's host side: what the runtime and
  // every variant's host code must agree with.
  const Halide::Target host =
      cpuTargets.empty() ? *gpuTarget : cpuTargets.back();
  std::vector<Halide::Target> all = cpuTargets;
  if (gpuTarget)
    all.push_back(*gpuTarget);
  for (const Halide::Target &target : all)
    if (target.os != host.os || target.arch != host.arch ||
        target.bits != host.bits)
      return error("all targets of one library must share OS and "
                   "architecture (a GPU target's host side included); '" +
                   llvm::join(targetNames.cpu, ",") +
                   (gpuTarget ? "," + targetNames.gpu : "") + "' mixes them");
  // OpenCL C has half only with cl_khr_fp16 (Halide's cl_half feature);
  // without it, say so rather than let Halide fail inside a kernel.
  if (gpuTarget && gpuTarget->has_feature(Halide::Target::OpenCL) &&
      !gpuTarget->has_feature(Halide::Target::CLHalf)) {
    bool f16 = false;
    for (const attn::DecodeSpec &spec : specs.decode)
      f16 |= spec.cacheElement == attn::DType::F16;
    for (const attn::LinearSpec &spec : specs.linear)
      f16 |= spec.cacheAppend.kvHeads > 0 &&
             spec.cacheAppend.element == attn::DType::F16;
    if (f16)
      return error("an f16 KV cache on OpenCL needs a device with "
                   "cl_khr_fp16 and the target feature cl_half (e.g. "
                   "--target=host,x86-64-linux-sse41-opencl-cl_half), or "
                   "another cache dtype");
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return error("cannot create '" + outDir + "': " + ec.message());

  // Objects go to a scratch directory, then into one archive.
  llvm::SmallString<128> scratch(outDir);
  llvm::sys::path::append(scratch, specs.name + ".objects");
  llvm::sys::fs::remove_directories(scratch);
  if (std::error_code ec = llvm::sys::fs::create_directories(scratch))
    return error("cannot create '" + scratch + "': " + ec.message());
  llvm::SmallString<128> archive(outDir);
  llvm::sys::path::append(archive, specs.name + ".a");

  // Every kernel of a kernel set: its C name and how to build its pipeline
  // for a target.
  using Builder = std::function<attn::KernelPipeline(const Halide::Target &)>;
  auto kernelSet = [&](bool gpu) {
    std::vector<std::pair<std::string, Builder>> kernels;
    auto add = [&](const auto &family, auto build) {
      for (const auto &spec : family)
        kernels.push_back(
            {spec.functionName, [spec, build](const Halide::Target &t) {
               return build(spec, t);
             }});
    };
    // bf16 products where the target has bf16 dot products (vdpbf16ps,
    // and AMX where the CPU running it has tiles); elsewhere they would
    // only round the operands, so those variants keep fp32. Without an
    // x86-64 AMX object to put in the library, no kernel calls it.
    add(specs.prefill, [](attn::SdpaSpec spec, const Halide::Target &t) {
      if (!t.has_feature(Halide::Target::AVX512_SapphireRapids))
        spec.compute = attn::SdpaCompute::F32;
      spec.x86Object = kAmxObjectIsX86_64;
      return attn::buildSdpaPipeline(spec, t);
    });
    add(specs.decode, attn::buildDecodePipeline);
    // bf16 linear kernels call the AMX object on CPUs with tiles; without
    // an x86-64 copy of it to put in the library, they keep fp32 products.
    std::vector<attn::LinearSpec> linear = specs.linearVariants(!gpu);
    for (attn::LinearSpec &spec : linear)
      spec.bf16Products = spec.bf16Products && kAmxObjectIsX86_64;
    add(linear, attn::buildLinearPipeline);
    add(specs.norm, attn::buildNormPipeline);
    add(specs.embedding, attn::buildEmbeddingPipeline);
    return kernels;
  };

  std::vector<std::string> objects;
  try {
    // `function`_kernel for `targets`: with several, a variant each behind a
    // wrapper that picks the best the CPU supports.
    auto compile = [&](const std::string &function, const Builder &build,
                       const std::vector<Halide::Target> &targets) {
      std::vector<std::string> suffixes;
      for (size_t i = 0; i < targets.size(); i++)
        suffixes.push_back(targets.size() == 1 ? "" : "_" + std::to_string(i));
      llvm::SmallString<128> prefix(scratch);
      llvm::sys::path::append(prefix, function);
      Halide::compile_multitarget(
          function + "_kernel",
          {{Halide::OutputFileType::object, prefix.str().str() + ".o"}},
          targets, suffixes,
          [&](const std::string &name, const Halide::Target &target) {
            attn::KernelPipeline kernel = build(target);
            return kernel.pipeline.compile_to_module(kernel.arguments(), name,
                                                     target);
          });
    };
    // Compiling a big model takes minutes: --progress says how far it is.
    size_t total = (cpuTargets.empty() ? 0 : kernelSet(false).size()) +
                   (gpuTarget ? kernelSet(true).size() : 0),
           done = 0;
    auto report = [&](const std::string &function) {
      if (progress)
        *progress << llvm::format("attnc: [%zu/%zu] %s\n", ++done, total,
                                  function.c_str());
    };
    if (!cpuTargets.empty())
      for (const auto &[function, build] : kernelSet(/*gpu=*/false)) {
        report(function);
        compile(function, build, cpuTargets);
      }
    if (gpuTarget)
      for (const auto &[function, build] : kernelSet(/*gpu=*/true)) {
        report(function + specs.gpuSuffix());
        compile(function + specs.gpuSuffix(), build, {*gpuTarget});
      }
    // One runtime for all: the GPU API's module is in it when a kernel
    // needs it.
    Halide::Target runtimeTarget =
        host.without_feature(Halide::Target::NoRuntime);
    if (gpuTarget)
      runtimeTarget = runtimeTarget.with_feature(targetNames.gpuApi == "cuda"
                                                     ? Halide::Target::CUDA
                                                     : Halide::Target::OpenCL);
    llvm::SmallString<128> runtime(scratch);
    llvm::sys::path::append(runtime, "halide_runtime.o");
    Halide::compile_standalone_runtime(runtime.str().str(), runtimeTarget);
    // The AMX micro-kernel beside them wherever an x86-64 kernel may call it
    // (its symbols are weak: applications link several model libraries).
    const bool x86_64 =
        std::any_of(cpuTargets.begin(), cpuTargets.end(), [](const auto &t) {
          return t.arch == Halide::Target::X86 && t.bits == 64;
        });
    if (x86_64 && kAmxObjectIsX86_64) {
      llvm::SmallString<128> amx(scratch);
      llvm::sys::path::append(amx, "attn_amx.o");
      std::error_code ec;
      llvm::raw_fd_ostream os(amx, ec);
      if (ec)
        return error("cannot write '" + amx + "': " + ec.message());
      os.write(reinterpret_cast<const char *>(kAmxObject), kAmxObject_size);
    }

    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(scratch, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(".o"))
        objects.push_back(it->path());
    if (ec)
      return error("cannot list '" + scratch + "': " + ec.message());
    std::sort(objects.begin(), objects.end()); // a deterministic archive
    llvm::sys::fs::remove(archive);
    Halide::create_static_library(objects, host, archive.str().str());
  } catch (const Halide::Error &halideError) {
    llvm::sys::fs::remove(archive);
    return error(llvm::Twine("Halide failed: ") + halideError.what());
  }
  llvm::sys::fs::remove_directories(scratch);
  return llvm::Error::success();
}

} // namespace attnc
