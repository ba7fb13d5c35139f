//===- attnc.cpp - the attention compiler driver --------------------------===//
//
// attnc reads a model description (native JSON, a Hugging Face config.json or
// attn MLIR), runs the attn pipeline (materialize defaults, specialize and
// deduplicate kernels, plan the KV cache, select schedules) and emits either
// the IR (--emit=mlir) or a static library of fused Halide kernels with its C
// header and plan (--emit=lib, the default).
//
//===----------------------------------------------------------------------===//

#include "CHeader.h"
#include "DTypes.h"
#include "DescriptionImport.h"
#include "GgufImport.h"
#include "HalideBackend.h"
#include "KernelSpecs.h"
#include "ModelBuilder.h"
#include "ModelFacts.h"
#include "PlanWriter.h"
#include "Report.h"
#include "SharedLibrary.h"
#include "Targets.h"

#include "attn/AttnDialect.h"
#include "attn/AttnOps.h"
#include "attn/AttnPasses.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {
enum class EmitKind { ImportedMLIR, MLIR, Report, Header, Library };

cl::OptionCategory attncCategory("attnc options");
cl::OptionCategory cacheCategory(
    "KV cache options (fill in Hugging Face configs; override descriptions)");

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model description: .json or .mlir>"),
                               cl::cat(attncCategory));
cl::opt<std::string>
    outputPath("o", cl::value_desc("path"),
               cl::desc("Output directory for --emit=lib and header; output "
                        "file for --emit=mlir and report (default: stdout)"),
               cl::cat(attncCategory));
cl::opt<EmitKind>
    emitKind("emit", cl::desc("What to produce"), cl::init(EmitKind::Library),
             cl::values(clEnumValN(EmitKind::ImportedMLIR, "mlir-import",
                                   "the attn IR as imported, before any pass"),
                        clEnumValN(EmitKind::MLIR, "mlir",
                                   "the attn IR after the pipeline"),
                        clEnumValN(EmitKind::Report, "report",
                                   "what attnc decided: kernels, sharing, "
                                   "schedules, FLOPs, memory"),
                        clEnumValN(EmitKind::Header, "header",
                                   "<name>.h, <name>_kernels.h and "
                                   "<name>_plan.json, no kernels compiled"),
                        clEnumValN(EmitKind::Library, "lib",
                                   "<name>.a, <name>.h, <name>_kernels.h and "
                                   "<name>_plan.json")),
             cl::cat(attncCategory));
cl::opt<std::string>
    modelName("name", cl::value_desc("identifier"),
              cl::desc("Model name, prefix of every generated symbol "
                       "(default: the description's name, else its file name)"),
              cl::cat(attncCategory));
cl::opt<std::string> targetList(
    "target", cl::init("host"), cl::value_desc("target,..."),
    cl::desc("Targets of the generated kernels, most specific first: names "
             "listed below or Halide target strings (default: host)"),
    cl::cat(attncCategory));
cl::opt<std::string>
    scheduleDb("schedule-db", cl::value_desc("file.json"),
               cl::desc("Tuning database whose matching entries override the "
                        "schedule heuristics"),
               cl::cat(attncCategory));
cl::opt<std::string> kvBudget(
    "kv-budget", cl::value_desc("bytes"),
    cl::desc("Fail if the KV cache for max_batch sequences at max length "
             "needs more (suffixes K, M, G: KiB, MiB, GiB)"),
    cl::cat(attncCategory));
cl::opt<bool> sharedLibrary(
    "shared",
    cl::desc("Also link DIR/lib<name>.so, which the runtime loads at run time "
             "(attn::runtime::ModelLibrary::open; needs a C compiler: $CC or "
             "cc)"),
    cl::cat(attncCategory));
cl::opt<bool> showProgress(
    "progress", cl::desc("Say on stderr which kernel is being compiled"),
    cl::cat(attncCategory));
cl::opt<bool> printReport("report",
                          cl::desc("Also print the --emit=report table"),
                          cl::cat(attncCategory));

cl::opt<int> maxBatch("max-batch", cl::desc("Sequences the KV cache serves"),
                      cl::cat(cacheCategory));
cl::opt<std::string> kvLayout("kv-layout", cl::desc("contiguous or paged"),
                              cl::cat(cacheCategory));
cl::opt<int> pageSize("page-size", cl::desc("Tokens per page"),
                      cl::cat(cacheCategory));
cl::opt<std::string> kvDtype("kv-dtype",
                             cl::desc(attnc::kDescriptionCacheDTypeList),
                             cl::cat(cacheCategory));
cl::opt<int> maxLength("max-length", cl::desc("Tokens per sequence"),
                       cl::cat(cacheCategory));
cl::opt<std::string> weightDtype(
    "weight-dtype",
    cl::desc("f32, f16, bf16, int8 or int4: how the linear kernels read their "
             "weights (overrides the description's weight_dtype, a Hugging "
             "Face config's torch_dtype and a GGUF file's block types: every "
             "projection's)"),
    cl::cat(attncCategory));
cl::opt<std::string> headDtype(
    "head-dtype",
    cl::desc("f32, f16, bf16 or int8: how the output head's kernel reads its "
             "weights (default: as a GPTQ, AWQ or GGUF checkpoint keeps its "
             "head, else as the other linear kernels)"),
    cl::cat(attncCategory));
cl::opt<int> weightGroup(
    "weight-group",
    cl::desc("int4 weights: inputs per scale, 32, 64 or 128 (default 128); "
             "int8 weights: 16 or 32 (default: a scale per output feature)"),
    cl::cat(attncCategory));
cl::opt<bool> weightMins(
    "weight-mins",
    cl::desc("int4 weights with an f32 minimum per group instead of a zero "
             "point, W = u·s + m (as GGUF's Q4_1 and Q4_K store them)"),
    cl::cat(attncCategory));
enum class ComputeDtype { F32, BF16 };
cl::opt<ComputeDtype> attentionCompute(
    "attention-compute",
    cl::desc("Precision of every attention layer's prefill products "
             "(overrides the description's compute_dtype; a Hugging Face "
             "config's default: bf16 for a bf16 or f16 torch_dtype)"),
    cl::values(clEnumValN(ComputeDtype::F32, "f32", "fp32 throughout"),
               clEnumValN(ComputeDtype::BF16, "bf16",
                          "bf16 operands, fp32 accumulation and softmax, in "
                          "the kernel variants for CPUs with bf16 dot "
                          "products (AMX tiles where the CPU has them); fp32 "
                          "in the others")),
    cl::cat(attncCategory));

cl::opt<ComputeDtype> linearCompute(
    "linear-compute",
    cl::desc("Precision of the products of linear kernels with bf16 or int4 "
             "weights at prompt sizes"),
    cl::values(clEnumValN(ComputeDtype::BF16, "bf16",
                          "the inputs rounded to bf16 on AMX tiles where the "
                          "CPU running the library has them, fp32 elsewhere "
                          "(default)"),
               clEnumValN(ComputeDtype::F32, "f32", "fp32 products everywhere")),
    cl::init(ComputeDtype::BF16), cl::cat(attncCategory));

int fail(const Twine &message) {
  WithColor::error(errs(), "attnc") << message << "\n";
  return 1;
}

/// What a binary `input` is, in a few words, or nothing for text: a
/// description is UTF-8 text, and a file with a NUL or another control
/// character (but tab, line feeds and form feed) in its first 64 KiB is not
/// one. Safetensors checkpoints are named.
std::optional<std::string> binaryKind(StringRef input) {
  StringRef head = input.take_front(64 * 1024);
  const bool binary = llvm::any_of(head, [](char c) {
    const unsigned char byte = static_cast<unsigned char>(c);
    return byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r' &&
           byte != '\f';
  });
  if (!binary)
    return std::nullopt;
  // safetensors: an 8-byte little-endian header length, then its JSON.
  if (input.size() > 10 && input.substr(8, 2) == "{\"")
    return std::string("a safetensors checkpoint (weights: attnc reads the "
                       "config.json beside it)");
  return std::string("a binary file");
}

std::optional<int64_t> parseBytes(StringRef text) {
  int64_t scale = 1;
  if (text.consume_back("K") || text.consume_back("k"))
    scale = int64_t(1) << 10;
  else if (text.consume_back("M"))
    scale = int64_t(1) << 20;
  else if (text.consume_back("G"))
    scale = int64_t(1) << 30;
  int64_t value;
  if (text.getAsInteger(10, value) || value <= 0)
    return std::nullopt;
  return value * scale;
}

attnc::ImportOptions importOptions() {
  attnc::ImportOptions options;
  options.modelName = modelName;
  if (maxBatch.getNumOccurrences())
    options.maxBatch = maxBatch;
  if (kvLayout.getNumOccurrences())
    options.kvLayout = kvLayout;
  if (pageSize.getNumOccurrences())
    options.pageSize = pageSize;
  if (kvDtype.getNumOccurrences())
    options.kvDtype = kvDtype;
  if (maxLength.getNumOccurrences())
    options.maxLength = maxLength;
  if (attentionCompute.getNumOccurrences())
    options.bf16Compute = attentionCompute == ComputeDtype::BF16;
  return options;
}

mlir::OwningOpRef<mlir::ModuleOp> loadDescription(SourceMgr &sourceMgr,
                                                  mlir::MLIRContext &context) {
  if (!StringRef(inputPath).ends_with(".mlir"))
    return attnc::importJsonDescription(sourceMgr, context, importOptions());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return nullptr;
  auto models = module->getOps<mlir::attn::ModelOp>();
  if (std::distance(models.begin(), models.end()) != 1) {
    module->emitError() << "expected exactly one attn.model";
    return nullptr;
  }
  if (!modelName.empty())
    (*models.begin()).setSymName(modelName);
  return module;
}

/// `targets`: the CPU targets as the user wrote them (tuning-database
/// entries name them so; GPU schedules are not tuned).
mlir::LogicalResult runPipeline(mlir::ModuleOp module, int64_t budget,
                                StringRef targets) {
  mlir::PassManager pm(module.getContext());
  // --mlir-print-ir-after-all, --mlir-timing and the rest.
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  auto timing = std::make_unique<mlir::DefaultTimingManager>();
  mlir::applyDefaultTimingManagerCLOptions(*timing);
  pm.enableTiming(std::move(timing));
  mlir::attn::AttnPipelineOptions options;
  options.kvBudget = budget;
  options.target = targets.str();
  options.scheduleDb = scheduleDb.getValue();
  mlir::attn::buildAttnPipeline(pm, options);
  return pm.run(module);
}

int writeFile(StringRef directory, StringRef fileName, StringRef contents) {
  SmallString<128> path(directory);
  sys::path::append(path, fileName);
  std::string errorMessage;
  auto file = mlir::openOutputFile(path, &errorMessage);
  if (!file)
    return fail(errorMessage);
  file->os() << contents;
  file->keep();
  return 0;
}

/// Writes the headers and the plan for the kernel sets `targets` asks for;
/// with `library`, the library too.
int emitHeadersAndLibrary(mlir::ModuleOp module,
                          const attnc::LibraryTargets &targets, bool library) {
  if (outputPath.empty())
    return fail("-o DIR is required with --emit=lib and --emit=header");
  attnc::ModelSpecs specs;
  if (failed(attnc::collectKernelSpecs(module, specs)))
    return 1;
  specs.cpuKernels = !targets.cpu.empty();
  specs.gpuApi = targets.gpuApi;
  specs.cpuTargets = attnc::resolvedCpuTargets(targets);
  for (attn::LinearSpec &spec : specs.linear)
    spec.bf16Products = linearCompute == ComputeDtype::BF16;
  if (sharedLibrary && !library)
    return fail("--shared links the kernels: it needs --emit=lib");
  if (library)
    if (Error error = attnc::emitKernelLibrary(
            specs, targets, outputPath, showProgress ? &errs() : nullptr))
      return fail(toString(std::move(error)));
  if (std::error_code ec = sys::fs::create_directories(outputPath))
    return fail("cannot create '" + outputPath + "': " + ec.message());
  std::string plan = attnc::renderPlanJson(module, specs.devices());
  if (int status = writeFile(outputPath, specs.name + "_kernels.h",
                             attnc::renderKernelDeclarations(specs)))
    return status;
  if (int status = writeFile(
          outputPath, specs.name + ".h",
          attnc::renderCHeader(specs, sys::path::filename(inputPath), plan)))
    return status;
  if (int status = writeFile(outputPath, specs.name + "_plan.json", plan))
    return status;
  if (sharedLibrary)
    if (Error error = attnc::linkSharedLibrary(specs.name, outputPath))
      return fail(toString(std::move(error)));
  return 0;
}

/// Lists the pass manager's own options (IR printing, timing, statistics)
/// in --help beside attnc's.
void showPassManagerOptions(cl::OptionCategory &category) {
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (name.starts_with("mlir-print-ir") || name.starts_with("mlir-timing") ||
        name == "mlir-pass-statistics" || name == "mlir-disable-threading")
      option->addCategory(category);
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  mlir::registerPassManagerCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::OptionCategory passManagerCategory("MLIR pass manager options");
  showPassManagerOptions(passManagerCategory);
  cl::HideUnrelatedOptions(
      {&attncCategory, &cacheCategory, &passManagerCategory});
  std::string overview =
      "attnc: ahead-of-time attention compiler\n\n"
      "  attnc model.json -o DIR          write DIR/<name>.a, DIR/<name>.h\n"
      "  attnc config.json --emit=report  print what attnc decides\n"
      "  attnc model.json --emit=mlir     print the attn IR after the "
      "pipeline\n\n"
      "Targets (--target, comma-separated, most specific first):\n" +
      attnc::describeTargetNames();
  cl::ParseCommandLineOptions(argc, argv, overview);

  Expected<std::string> expanded = attnc::expandTargetNames(targetList);
  if (!expanded)
    return fail(toString(expanded.takeError()));
  Expected<attnc::LibraryTargets> targets =
      attnc::splitLibraryTargets(*expanded);
  if (!targets)
    return fail(toString(targets.takeError()));

  int64_t budget = 0;
  if (!kvBudget.empty()) {
    std::optional<int64_t> parsed = parseBytes(kvBudget);
    if (!parsed)
      return fail("--kv-budget expects a positive byte count such as "
                  "2147483648 or 2G, got '" +
                  kvBudget + "'");
    budget = *parsed;
  }

  mlir::MLIRContext context; // honours --mlir-disable-threading
  context.loadDialect<mlir::attn::AttnDialect>();
  // Diagnostics point into the description; the generic form of an op the
  // user never wrote would only confuse.
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  auto input = mlir::openInputFile(inputPath, &errorMessage);
  if (!input)
    return fail(errorMessage);
  const bool gguf = attnc::isGguf(input->getBuffer());
  // One line for another binary file, never its bytes echoed as a "source
  // line".
  if (std::optional<std::string> kind = binaryKind(input->getBuffer());
      kind && !gguf)
    return fail(inputPath + ": " + *kind +
                ", not a model description (attnc reads attnc's JSON, a "
                "Hugging Face config.json, a GGUF file or the attn "
                "dialect's .mlir)");
  SourceMgr sourceMgr;
  // A GGUF file's model is its metadata's config (GgufImport.h); the
  // file itself is no source to quote.
  if (!gguf)
    sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  input.reset();
  // Every diagnostic, from the JSON reader, a verifier or a pass, prints as
  // file:line:col: error: with the source line.
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  std::string ggufError;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      gguf ? attnc::importGguf(inputPath, sourceMgr, context, importOptions(),
                               ggufError)
           : loadDescription(sourceMgr, context);
  if (!ggufError.empty())
    return fail(ggufError);
  if (!module)
    return 1;
  mlir::attn::ModelOp model = *module->getOps<mlir::attn::ModelOp>().begin();
  if (weightDtype.getNumOccurrences() || weightGroup.getNumOccurrences() ||
      weightMins.getNumOccurrences()) {
    mlir::Type type = attnc::weightDtype(model);
    if (weightDtype.getNumOccurrences()) {
      std::optional<::attn::DType> element =
          attnc::parseDescriptionDType(weightDtype);
      if (!element)
        return fail(std::string("--weight-dtype must be ") +
                    attnc::kDescriptionDTypeList + ", got '" + weightDtype +
                    "'");
      type = attnc::mlirType(context, *element);
    }
    const bool grouped =
        type.isSignlessInteger(4) || type.isSignlessInteger(8);
    if (weightGroup.getNumOccurrences() && !grouped)
      return fail("--weight-group applies to int4 and int8 weights "
                  "(--weight-dtype=int4 or int8)");
    if (weightMins && !type.isSignlessInteger(4))
      return fail("--weight-mins applies to int4 weights (--weight-dtype="
                  "int4)");
    if (std::optional<llvm::StringRef> format = model.getWeightFormat())
      return fail("the checkpoint holds its weights quantized (" +
                  format->str() +
                  "): --weight-dtype and --weight-group cannot change them");
    std::optional<int64_t> group = model.getWeightGroup();
    if (weightGroup.getNumOccurrences())
      group = weightGroup;
    else if (type != attnc::weightDtype(model))
      group.reset(); // the new type's default
    // Minimums stay with the model's own int4 weights unless asked for.
    const bool mins = weightMins || (type == attnc::weightDtype(model) &&
                                     model.getWeightMins());
    attnc::setWeights(model, type, group, std::nullopt, mins);
  }
  if (headDtype.getNumOccurrences()) {
    std::optional<::attn::DType> element = attnc::parseDescriptionDType(
        headDtype, attnc::kDescriptionHeadDTypes);
    if (!element)
      return fail("--head-dtype must be f32, f16, bf16 or int8, got '" +
                  headDtype + "'");
    attnc::setHeadWeights(model, attnc::mlirType(context, *element));
  }
  // The GPU kernel sets read f32 weights only.
  for (auto head : model.getBody().front().getOps<mlir::attn::OutputHeadOp>())
    if (std::optional<mlir::Type> weights = head.getWeightDtype();
        weights && !weights->isF32() && !targets->gpu.empty())
      return fail("--target=" + targets->gpuApi +
                  " reads f32 weights; the output head keeps its own "
                  "(from the checkpoint or --head-dtype): pass "
                  "--head-dtype=f32");
  if (std::optional<mlir::Type> weights = model.getWeightDtype();
      weights && !weights->isF32() && !targets->gpu.empty()) {
    std::string type;
    llvm::raw_string_ostream(type) << *weights;
    return fail("--target=" + targets->gpuApi + " reads f32 weights; the "
                "model's weight dtype is " + type +
                " (from --weight-dtype, weight_dtype or torch_dtype): pass "
                "--weight-dtype=f32");
  }
  // Projections stored in a type of their own (a GGUF file's mixed blocks).
  if (!targets->gpu.empty())
    for (mlir::Operation &op : model.getBody().front()) {
      auto layer = llvm::dyn_cast<mlir::attn::AttentionLayerOp>(op);
      auto ffn = llvm::dyn_cast<mlir::attn::FfnOp>(op);
      if ((layer && (layer.getQueryWeights() || layer.getKeyWeights() ||
                     layer.getValueWeights() || layer.getOutputWeights())) ||
          (ffn && (ffn.getUpWeights() || ffn.getDownWeights())))
        return fail("--target=" + targets->gpuApi + " reads f32 weights; '" +
                    mlir::SymbolTable::getSymbolName(&op).str() +
                    "' has projections stored in a type of their own: pass "
                    "--weight-dtype=f32");
    }
  // Experts run on host views of their stacked weights (runtime Experts.h).
  if (!targets->gpu.empty())
    for (mlir::attn::FfnOp ffn :
         model.getBody().front().getOps<mlir::attn::FfnOp>())
      if (ffn.getExperts())
        return fail("--target=" + targets->gpuApi + ": '" +
                    ffn.getSymName().str() +
                    "' is a mixture of experts, which attnc runs on the CPU "
                    "only");
  if (failed(mlir::verify(*module)))
    return 1;
  if (emitKind != EmitKind::ImportedMLIR &&
      failed(
          runPipeline(*module, budget, attnc::withoutGpuTargets(targetList))))
    return 1;

  if (emitKind == EmitKind::ImportedMLIR || emitKind == EmitKind::MLIR ||
      emitKind == EmitKind::Report) {
    auto output = mlir::openOutputFile(
        outputPath.empty() ? std::string("-") : std::string(outputPath),
        &errorMessage);
    if (!output)
      return fail(errorMessage);
    if (emitKind == EmitKind::Report) {
      output->os() << attnc::renderReport(*module);
      if (gguf)
        output->os() << attnc::ggufReport(inputPath);
    } else {
      module->print(output->os());
      output->os() << "\n";
    }
    output->keep();
    return 0;
  }
  if (int status = emitHeadersAndLibrary(*module, *targets,
                                         emitKind == EmitKind::Library))
    return status;
  if (printReport)
    outs() << attnc::renderReport(*module)
           << (gguf ? attnc::ggufReport(inputPath) : std::string());
  return 0;
}
