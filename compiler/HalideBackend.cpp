//===- HalideBackend.cpp - kernel specs to a static library ---------------===//
//
// The one place where attnc meets Halide: kernel specs become pipelines from
// schedules/, compiled ahead of time. With several targets (comma-separated,
// most specific first, the last one the baseline every machine of that
// architecture runs), each kernel is compiled once per target behind a
// wrapper that picks the best one the CPU supports at run time. All kernels
// share one standalone copy of the Halide runtime.
//
//===----------------------------------------------------------------------===//

#include "HalideBackend.h"

#include "attn/schedules/Pipelines.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace attnc {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Error emitKernelLibrary(const ModelSpecs &specs,
                              llvm::StringRef targetString,
                              llvm::StringRef outDir) {
  llvm::SmallVector<llvm::StringRef, 4> targetNames;
  targetString.split(targetNames, ',', -1, /*KeepEmpty=*/false);
  if (targetNames.empty())
    return error("no Halide target given");
  std::vector<Halide::Target> targets;
  for (llvm::StringRef name : targetNames) {
    if (!Halide::Target::validate_target_string(name.str()))
      return error("unknown Halide target '" + name +
                   "' (examples: host, x86-64-linux-avx2-fma, arm-64-linux)");
    // Kernels keep their asserts: they are what turns a bad buffer into an
    // error code instead of an out-of-bounds access.
    targets.push_back(
        Halide::Target(name.str()).with_feature(Halide::Target::NoRuntime));
  }
  for (const Halide::Target &target : targets)
    if (target.os != targets.back().os || target.arch != targets.back().arch ||
        target.bits != targets.back().bits)
      return error("all targets of one library must share OS and "
                   "architecture; '" +
                   targetString + "' mixes them");
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

  std::vector<std::string> objects;
  try {
    std::vector<std::string> suffixes;
    for (size_t i = 0; i < targets.size(); i++)
      suffixes.push_back(targets.size() == 1 ? "" : "_" + std::to_string(i));
    auto compile = [&](const std::string &function, auto buildPipeline) {
      llvm::SmallString<128> prefix(scratch);
      llvm::sys::path::append(prefix, function);
      Halide::compile_multitarget(
          function + "_kernel",
          {{Halide::OutputFileType::object, prefix.str().str() + ".o"}},
          targets, suffixes,
          [&](const std::string &name, const Halide::Target &target) {
            attn::KernelPipeline kernel = buildPipeline(target);
            return kernel.pipeline.compile_to_module(kernel.arguments(), name,
                                                     target);
          });
    };
    for (const attn::SdpaSpec &spec : specs.prefill)
      compile(spec.functionName, [&](const Halide::Target &target) {
        return attn::buildSdpaPipeline(spec, target);
      });
    for (const attn::DecodeSpec &spec : specs.decode)
      compile(spec.functionName, [&](const Halide::Target &target) {
        return attn::buildDecodePipeline(spec, target);
      });
    for (const attn::LinearSpec &spec : specs.linearVariants())
      compile(spec.functionName, [&](const Halide::Target &target) {
        return attn::buildLinearPipeline(spec, target);
      });
    for (const attn::NormSpec &spec : specs.norm)
      compile(spec.functionName, [&](const Halide::Target &target) {
        return attn::buildNormPipeline(spec, target);
      });
    for (const attn::EmbeddingSpec &spec : specs.embedding)
      compile(spec.functionName, [&](const Halide::Target &target) {
        return attn::buildEmbeddingPipeline(spec, target);
      });
    llvm::SmallString<128> runtime(scratch);
    llvm::sys::path::append(runtime, "halide_runtime.o");
    Halide::compile_standalone_runtime(
        runtime.str().str(),
        targets.back().without_feature(Halide::Target::NoRuntime));

    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(scratch, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(".o"))
        objects.push_back(it->path());
    if (ec)
      return error("cannot list '" + scratch + "': " + ec.message());
    std::sort(objects.begin(), objects.end()); // a deterministic archive
    llvm::sys::fs::remove(archive);
    Halide::create_static_library(objects, targets.back(), archive.str().str());
  } catch (const Halide::Error &halideError) {
    llvm::sys::fs::remove(archive);
    return error(llvm::Twine("Halide failed: ") + halideError.what());
  }
  llvm::sys::fs::remove_directories(scratch);
  return llvm::Error::success();
}

} // namespace attnc
