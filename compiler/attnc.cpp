//===- attnc.cpp - the attention compiler driver --------------------------===//
//
// attnc reads a model description (native JSON or attn MLIR), verifies it as
// attn IR and emits either the IR (--emit=mlir) or a static library of fused
// Halide kernels with its C header (--emit=lib, the default).
//
//===----------------------------------------------------------------------===//

#include "CHeader.h"
#include "DescriptionImport.h"
#include "HalideBackend.h"
#include "KernelSpecs.h"

#include "attn/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {
enum class EmitKind { MLIR, Library };

cl::OptionCategory attncCategory("attnc options");

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model description: .json or .mlir>"),
                               cl::cat(attncCategory));
cl::opt<std::string>
    outputPath("o", cl::value_desc("path"),
               cl::desc("Output directory for --emit=lib; output file for "
                        "--emit=mlir (default: stdout)"),
               cl::cat(attncCategory));
cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Library),
    cl::values(clEnumValN(EmitKind::MLIR, "mlir", "the verified attn IR"),
               clEnumValN(EmitKind::Library, "lib",
                          "<name>.a, <name>.h and <name>_kernels.h")),
    cl::cat(attncCategory));
cl::opt<std::string>
    modelName("name", cl::value_desc("identifier"),
              cl::desc("Model name, prefix of every generated symbol "
                       "(default: the description's name, else its file name)"),
              cl::cat(attncCategory));
cl::opt<std::string> halideTarget(
    "target", cl::init("host"), cl::value_desc("halide-target"),
    cl::desc("Halide target of the generated kernels (default: host)"),
    cl::cat(attncCategory));

int fail(const Twine &message) {
  WithColor::error(errs(), "attnc") << message << "\n";
  return 1;
}

mlir::OwningOpRef<mlir::ModuleOp> loadDescription(SourceMgr &sourceMgr,
                                                  mlir::MLIRContext &context) {
  if (StringRef(inputPath).ends_with(".mlir")) {
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (module && !modelName.empty())
      module->setSymName(modelName);
    if (module && !module->getSymName())
      module->setSymName(sys::path::stem(inputPath));
    return module;
  }
  return attnc::importJsonDescription(sourceMgr, context, modelName);
}

int emitLibrary(mlir::ModuleOp module) {
  if (outputPath.empty())
    return fail("-o DIR is required with --emit=lib");
  std::vector<attn::SdpaSpec> specs;
  if (failed(attnc::collectKernelSpecs(module, specs)))
    return 1;
  std::string name = module.getSymName()->str();
  if (Error error =
          attnc::emitKernelLibrary(specs, halideTarget, outputPath, name))
    return fail(toString(std::move(error)));

  SmallString<128> headerPath(outputPath);
  sys::path::append(headerPath, name + ".h");
  std::string errorMessage;
  auto header = mlir::openOutputFile(headerPath, &errorMessage);
  if (!header)
    return fail(errorMessage);
  header->os() << attnc::renderCHeader(name, sys::path::filename(inputPath),
                                       specs);
  header->keep();
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(attncCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attnc: ahead-of-time attention compiler\n\n"
      "  attnc layer.json --emit=mlir     print the attn IR\n"
      "  attnc layer.json -o DIR          write DIR/<name>.a and "
      "DIR/<name>.h\n");

  mlir::MLIRContext context;
  // Diagnostics point into the description; the generic form of an op the
  // user never wrote would only confuse.
  context.printOpOnDiagnostic(false);
  context.loadDialect<mlir::attn::AttnDialect, mlir::func::FuncDialect>();

  std::string errorMessage;
  auto input = mlir::openInputFile(inputPath, &errorMessage);
  if (!input)
    return fail(errorMessage);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  // Every diagnostic, from the JSON reader or an op verifier, prints as
  // file:line:col: error: with the source line.
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      loadDescription(sourceMgr, context);
  if (!module || failed(mlir::verify(*module)))
    return 1;

  if (emitKind == EmitKind::MLIR) {
    auto output = mlir::openOutputFile(
        outputPath.empty() ? std::string("-") : std::string(outputPath),
        &errorMessage);
    if (!output)
      return fail(errorMessage);
    module->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  }
  return emitLibrary(*module);
}
