//===- HalideBackend.cpp - kernel specs to a static library ---------------===//
//
// The one place where attnc meets Halide: kernel specs become pipelines from
// schedules/, compiled ahead of time into one static library that carries a
// single copy of the Halide runtime.
//
//===----------------------------------------------------------------------===//

#include "HalideBackend.h"

#include "attn/schedules/Sdpa.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace attnc {

llvm::Error emitKernelLibrary(const ModelSpecs &specs,
                              llvm::StringRef targetString,
                              llvm::StringRef outDir) {
  const std::string &name = specs.name;
  if (!Halide::Target::validate_target_string(targetString.str()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unknown Halide target '" + targetString +
            "' (examples: host, x86-64-linux-avx2-fma, arm-64-linux)");
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return llvm::createStringError(ec, "cannot create '" + outDir +
                                           "': " + ec.message());

  llvm::SmallString<128> archive(outDir), header(outDir);
  llvm::sys::path::append(archive, name + ".a");
  llvm::sys::path::append(header, name + "_kernels.h");
  try {
    Halide::Target target(targetString.str());
    std::vector<Halide::Module> modules;
    auto add = [&](attn::KernelPipeline kernel, const std::string &function) {
      modules.push_back(kernel.pipeline.compile_to_module(
          kernel.arguments(), function + "_kernel", target));
    };
    for (const attn::SdpaSpec &spec : specs.prefill)
      add(attn::buildSdpaPipeline(spec, target), spec.functionName);
    for (const attn::DecodeSpec &spec : specs.decode)
      add(attn::buildDecodePipeline(spec, target), spec.functionName);
    Halide::Module library = Halide::link_modules(name, modules);
    library.compile({{Halide::OutputFileType::static_library, archive.c_str()},
                     {Halide::OutputFileType::c_header, header.c_str()}});
  } catch (const Halide::Error &error) {
    llvm::sys::fs::remove(archive);
    llvm::sys::fs::remove(header);
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Halide failed: %s", error.what());
  }
  return llvm::Error::success();
}

} // namespace attnc
