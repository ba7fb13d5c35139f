//===- CHeader.cpp - the C API header of a generated library --------------===//

#include "CHeader.h"

#include "attn/runtime/Version.h"
#include "attn/schedules/KernelAbi.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace attnc {

namespace {
// Shared by every generated header; guarded so several models can be included
// in one translation unit.
constexpr const char *kCommonDefinitions = R"(#ifndef ATTNC_COMMON_DEFINED
#define ATTNC_COMMON_DEFINED
/* Status codes of generated functions: ATTNC_OK, ATTNC_INVALID_ARGUMENT for
   arguments the wrapper rejects before running anything, otherwise the
   negative halide_error_code_t the kernel returned. */
#define ATTNC_OK 0
#define ATTNC_INVALID_ARGUMENT 1

/* Describes the dense C array data[extents[0]]...[extents[rank - 1]]
   (outermost first) of `bits`-bit elements of Halide type `code` as a
   Halide buffer over dims[rank]. Returns ATTNC_INVALID_ARGUMENT for a null
   array, an extent below 1, or an extent, stride or element count beyond
   int32 (Halide indexes without large_buffers). */
static inline int attnc_describe(halide_buffer_t *buffer,
                                 halide_dimension_t *dims, const void *data,
                                 int code, int bits, int rank,
                                 const int64_t *extents) {
  int64_t stride = 1;
  int d;
  memset(buffer, 0, sizeof(*buffer));
  if (!data)
    return ATTNC_INVALID_ARGUMENT;
  for (d = 0; d < rank; d++) { /* Halide's dimension 0 is the innermost */
    const int64_t extent = extents[rank - 1 - d];
    if (extent < 1 || extent > INT32_MAX || stride > INT32_MAX)
      return ATTNC_INVALID_ARGUMENT;
    dims[d].min = 0;
    dims[d].extent = (int32_t)extent;
    dims[d].stride = (int32_t)stride;
    dims[d].flags = 0;
    stride *= extent;
  }
  if (stride > INT32_MAX)
    return ATTNC_INVALID_ARGUMENT;
  buffer->host = (uint8_t *)(uintptr_t)data; /* inputs are never written */
  buffer->type.code = (halide_type_code_t)code;
  buffer->type.bits = (uint8_t)bits;
  buffer->type.lanes = 1;
  buffer->dimensions = rank;
  buffer->dim = dims;
  return ATTNC_OK;
}

#endif
)";

// What the wrappers of GPU kernels share (emitted with them only).
constexpr const char *kDeviceDefinitions = R"(#ifndef ATTNC_DEVICE_DEFINED
#define ATTNC_DEVICE_DEFINED
#include <dlfcn.h>
extern int setenv(const char *name, const char *value, int overwrite);

/* A GPU wrapper's status when its device API's driver cannot be loaded. */
#define ATTNC_NO_DEVICE_DRIVER 2

/* Loads a GPU API's driver `library` into *handle, once, with global
   symbols: where Halide's runtime finds them. */
static inline int attnc_load_driver(void **handle, const char *library) {
  if (!*handle)
    *handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  return *handle ? ATTNC_OK : ATTNC_NO_DEVICE_DRIVER;
}

/* Before a GPU kernel: every buffer but `out` is host memory the device
   has not seen, so marked host-dirty; Halide copies such buffers to the
   device (a clean one without a device allocation would be allocated and
   read uninitialized). */
static inline void attnc_device_inputs(halide_buffer_t **buffers, int count,
                                       const halide_buffer_t *out) {
  int i;
  for (i = 0; i < count; i++)
    if (buffers[i] != out)
      buffers[i]->flags |= halide_buffer_flag_host_dirty;
}

/* After a GPU kernel: `out` back to host memory, then every device
   allocation the call made freed (the wrappers take host arrays; nothing
   stays on the device between calls). */
static inline int attnc_device_finish(int result, halide_buffer_t *out,
                                      halide_buffer_t **buffers, int count) {
  int i;
  if (result == 0)
    result = halide_copy_to_host(NULL, out);
  for (i = 0; i < count; i++)
    if (buffers[i]->device)
      halide_device_free(NULL, buffers[i]);
  return result;
}
#endif
)";

// Loading each GPU API's driver where Halide's runtime finds it: the
// library with global symbols, under its versioned name (Halide 14 asks for
// "libcuda.so" and "libOpenCL.so", which driver-only installs lack).
constexpr const char *kCudaDefinitions = R"(#ifndef ATTNC_CUDA_DEFINED
#define ATTNC_CUDA_DEFINED
#include "HalideRuntimeCuda.h"
/* Loads libcuda.so.1 once per translation unit and raises Halide's cap of
   64 registers per thread for the kernels it JIT-compiles from PTX (the
   decode kernel needs more; an HL_CUDA_JIT_MAX_REGISTERS already set
   wins). ATTNC_OK or ATTNC_NO_DEVICE_DRIVER. */
static inline int attnc_cuda_load_driver(void) {
  static void *driver;
  if (!driver)
    setenv("HL_CUDA_JIT_MAX_REGISTERS", "255", 0);
  return attnc_load_driver(&driver, "libcuda.so.1");
}
#endif
)";

constexpr const char *kOpenclDefinitions = R"(#ifndef ATTNC_OPENCL_DEFINED
#define ATTNC_OPENCL_DEFINED
#include "HalideRuntimeOpenCL.h"
/* Loads the OpenCL ICD loader, libOpenCL.so.1, once per translation unit.
   ATTNC_OK or ATTNC_NO_DEVICE_DRIVER. */
static inline int attnc_opencl_load_driver(void) {
  static void *driver;
  return attnc_load_driver(&driver, "libOpenCL.so.1");
}
#endif
)";

// The types a model library shares with the runtime (attnc_kernel_entry,
// attnc_device_api): runtime/include/attn/runtime/attnc_library.h verbatim.
constexpr const char *kLibraryTypes =
#include "AttncLibraryText.inc"
    ;

/// A kernel buffer's element as C and Halide spell it.
struct CElement {
  const char *cType;
  const char *halideCode;
  int bits;
};
CElement cElement(attn::BufferElement element) {
  switch (element) {
  case attn::BufferElement::F32:
    return {"float", "halide_type_float", 32};
  case attn::BufferElement::F16:
    return {"uint16_t", "halide_type_float", 16};
  case attn::BufferElement::BF16:
    return {"uint16_t", "halide_type_bfloat", 16};
  case attn::BufferElement::U16:
    return {"uint16_t", "halide_type_uint", 16};
  case attn::BufferElement::U32:
    return {"uint32_t", "halide_type_uint", 32};
  case attn::BufferElement::I8:
    return {"int8_t", "halide_type_int", 8};
  case attn::BufferElement::U8:
    return {"uint8_t", "halide_type_uint", 8};
  case attn::BufferElement::I32:
    return {"int32_t", "halide_type_int", 32};
  }
  return {"void", "halide_type_float", 32};
}

/// The extents of a declared shape, "[batch][q_len][query_heads]" ->
/// {"batch", "q_len", "query_heads"}.
std::vector<std::string> shapeExtents(llvm::StringRef shape) {
  std::vector<std::string> extents;
  while (shape.consume_front("[")) {
    auto [extent, rest] = shape.split(']');
    extents.push_back(extent.str());
    shape = rest;
  }
  return extents;
}

/// The extents a kernel was specialized for, by the names its buffers'
/// shapes use (KernelAbi.cpp); every other extent is a wrapper parameter.
using Constants = std::map<std::string, int>;

/// `buffers` with the constants filled in, one line each, for a comment:
/// " *   query [batch][q_len][8][64] float".
std::string shapeLines(const std::vector<attn::KernelBuffer> &buffers,
                       const Constants &constants) {
  std::string lines;
  for (const attn::KernelBuffer &buffer : buffers) {
    lines += "\n *   " + buffer.name + " ";
    for (const std::string &extent : shapeExtents(buffer.shape)) {
      auto constant = constants.find(extent);
      lines +=
          "[" +
          (constant == constants.end() ? extent
                                       : std::to_string(constant->second)) +
          "]";
    }
    lines += std::string(" ") + cElement(buffer.element).cType;
  }
  return lines;
}

/// The plain-array wrapper `function` (with its device suffix) of a kernel
/// with `buffers`: a pointer per buffer in the declared order, then an
/// int32_t per extent that is not a constant, in order of first use. Each
/// array is described as a dense Halide buffer (a bad pointer or extent is
/// ATTNC_INVALID_ARGUMENT) and the kernel called; a GPU kernel's inputs go
/// to the device, its output comes back and its device allocations are
/// freed.
void renderWrapper(llvm::raw_ostream &os, const std::string &function,
                   llvm::StringRef suffix,
                   const std::vector<attn::KernelBuffer> &buffers,
                   const Constants &constants) {
  std::vector<std::string> extentParameters;
  std::string parameters, describe, arguments;
  int output = -1;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const attn::KernelBuffer &buffer = buffers[i];
    const CElement element = cElement(buffer.element);
    parameters += std::string(buffer.isOutput() ? "" : "const ") +
                  element.cType + " *" + buffer.name + ", ";
    std::string extents;
    for (const std::string &extent : shapeExtents(buffer.shape)) {
      auto constant = constants.find(extent);
      if (constant != constants.end()) {
        extents +=
            (extents.empty() ? "" : ", ") + std::to_string(constant->second);
        continue;
      }
      if (llvm::find(extentParameters, extent) == extentParameters.end())
        extentParameters.push_back(extent);
      extents += (extents.empty() ? "" : ", ") + extent;
    }
    const std::string index = std::to_string(i);
    describe += llvm::formatv(
        "  {{\n    const int64_t extents[] = {{{0}};\n"
        "    if (attnc_describe(&b[{1}], d[{1}], {2}, {3}, {4}, {5},\n"
        "                       extents))\n"
        "      return ATTNC_INVALID_ARGUMENT;\n  }\n",
        extents, index, buffer.name, element.halideCode, element.bits,
        buffer.rank());
    arguments += (arguments.empty() ? "&b[" : ", &b[") + index + "]";
    if (buffer.isOutput())
      output = int(i);
  }
  for (const std::string &extent : extentParameters)
    parameters += "int32_t " + extent + ", ";
  parameters.resize(parameters.size() - 2);
  std::string call;
  if (suffix.empty()) {
    call = "  return " + function + "_kernel(" + arguments + ");\n";
  } else {
    const std::string out = "&b[" + std::to_string(output) + "]";
    call = "  {\n    halide_buffer_t *all[] = {" + arguments + "};\n" +
           "    const int count = (int)(sizeof all / sizeof all[0]);\n" +
           "    if (attnc" + suffix.str() + "_load_driver() != ATTNC_OK)\n" +
           "      return ATTNC_NO_DEVICE_DRIVER;\n" +
           "    attnc_device_inputs(all, count, " + out + ");\n" +
           "    return attnc_device_finish(" + function + "_kernel(" +
           arguments + "),\n                               " + out +
           ", all, count);\n  }\n";
  }
  // The signature wrapped at 80 columns, continued lines indented by 4.
  std::string signature = "static inline int " + function + "(";
  size_t lineStart = 0;
  for (llvm::StringRef rest = parameters; !rest.empty();) {
    auto [parameter, tail] = rest.split(", ");
    std::string piece = parameter.str() + (tail.empty() ? ") {" : ",");
    if (signature.size() - lineStart + 1 + piece.size() > 80 &&
        signature.back() != '(') {
      signature += "\n   ";
      lineStart = signature.size() - 3;
    }
    signature += (signature.back() == '(' ? "" : " ") + piece;
    rest = tail;
  }
  os << signature << "\n"
     << "  halide_buffer_t b[" << buffers.size() << "];\n"
     << "  halide_dimension_t d[" << buffers.size() << "][4];\n"
     << describe << call << "}\n";
}

/// A line for a GPU wrapper's comment.
const char *kDeviceWrapperNote =
    "\n *   GPU: the arrays are host memory, copied to the device and the "
    "output\n *   back on every call; ATTNC_NO_DEVICE_DRIVER without the "
    "driver.";

void renderPrefill(llvm::raw_ostream &os, const attn::SdpaSpec &spec,
                   llvm::StringRef suffix) {
  const std::string function = spec.functionName + suffix.str();
  std::string macro = llvm::StringRef(spec.functionName).upper();
  int hq = spec.numQueryHeads, hkv = spec.numKvHeads, d = spec.headDim;
  const bool bf16 = spec.compute == attn::SdpaCompute::BF16;
  const std::vector<attn::KernelBuffer> buffers = attn::kernelBuffers(spec);
  const Constants constants = {
      {"query_heads", hq}, {"kv_heads", hkv}, {"head_dim", d}};
  os << llvm::formatv(
      R"(
/* {0}: output = softmax(query · keyᵀ · {1} {2}) · value
 *   {3} query heads over {4} KV heads, head_dim {5}; C order:{6}{7}{8}{9}{10}
 *   Returns ATTNC_OK, ATTNC_INVALID_ARGUMENT, or a halide_error_code_t. */
#define {11}_NUM_QUERY_HEADS {3}
#define {11}_NUM_KV_HEADS {4}
#define {11}_HEAD_DIM {5}
#define {11}_CAUSAL {12}
#define {11}_KEY_PADDING {13}
#define {11}_BF16_COMPUTE {14}
)",
      function, llvm::formatv("{0:e}", spec.scale),
      spec.causal ? "+ causal mask" : "", hq, hkv, d,
      shapeLines(buffers, constants),
      spec.window
          ? llvm::formatv("\n *   Sliding window: query i sees keys j with "
                          "i + kv_len - q_len - {0} < j <= i + kv_len - q_len.",
                          spec.window)
                .str()
      : spec.causal
          ? "\n *   Causal: query i sees keys j <= i + kv_len - q_len;"
            "\n *   a query that sees no key yields 0."
          : "",
      spec.keyPadding
          ? "\n *   key_lengths: entry b sees only its first key_lengths[b] "
            "keys\n *   (clamped to [0, kv_len]); a query that sees no key "
            "yields 0."
          : "",
      bf16 ? "\n *   bf16 products: Q, K, V and the softmax weights are "
             "rounded to bf16\n *   for Q·Kᵀ and P·V (fp32 accumulation "
             "and softmax) on CPUs with bf16\n *   dot products "
             "(AVX512-BF16; AMX tiles where the CPU has them); fp32\n *   "
             "products elsewhere."
           : "",
      suffix.empty() ? "" : kDeviceWrapperNote, macro, spec.causal ? 1 : 0,
      spec.keyPadding ? 1 : 0, bf16 ? 1 : 0);
  renderWrapper(os, function, suffix, buffers, constants);
}

void renderDecode(llvm::raw_ostream &os, const attn::DecodeSpec &spec,
                  llvm::StringRef suffix) {
  const std::string function = spec.functionName + suffix.str();
  std::string macro = llvm::StringRef(spec.functionName).upper();
  int hq = spec.numQueryHeads, hkv = spec.numKvHeads, d = spec.headDim;
  const std::vector<attn::KernelBuffer> buffers = attn::kernelBuffers(
      spec, suffix.empty() ? attn::KernelPlace::Cpu : attn::KernelPlace::Gpu);
  const Constants constants = {{"query_heads", hq},
                               {"kv_heads", hkv},
                               {"head_dim", d},
                               {"page_size", spec.pageSize}};
  const char *element =
      spec.cacheElement == attn::DType::I8
          ? "symmetric int8: element (p, s, h, x) is key_pages[p][s][h][x] ·"
            "\n *   key_scales[p][s][h] (values alike)"
      : spec.cacheElement == attn::DType::F16  ? "IEEE binary16"
      : spec.cacheElement == attn::DType::BF16 ? "bfloat16"
                                               : "float";
  os << llvm::formatv(
      R"(
/* {0}: decode attention over a paged KV cache (a contiguous
 *   cache is one page of max_length tokens per sequence). Scale {1};
 *   {2} query heads over {3} KV heads, head_dim {4}, pages of {5} tokens
 *   of {6}; C order:{7}
 *   query: the newest q_len tokens; block_table: page ids of each sequence
 *   in order; seq_lens: cached tokens per sequence, the new ones included.{8}{9}
 *   Page ids and lengths are clamped to the buffers: a corrupt table cannot
 *   read out of bounds. Returns ATTNC_OK, ATTNC_INVALID_ARGUMENT, or a
 *   halide_error_code_t. */
#define {10}_NUM_QUERY_HEADS {2}
#define {10}_NUM_KV_HEADS {3}
#define {10}_HEAD_DIM {4}
#define {10}_PAGE_SIZE {5}
)",
      function, llvm::formatv("{0:e}", spec.scale), hq, hkv, d, spec.pageSize,
      element, shapeLines(buffers, constants),
      spec.window
          ? llvm::formatv("\n *   Sliding window: new token t of a sequence of "
                          "length L sees keys L - q_len + t - {0} < j <= "
                          "L - q_len + t.",
                          spec.window)
                .str()
      : spec.causal
          ? "\n *   Causal: new token t of a sequence of length L sees "
            "keys j <= L - q_len + t."
          : "",
      suffix.empty() ? "" : kDeviceWrapperNote, macro);
  renderWrapper(os, function, suffix, buffers, constants);
}
} // namespace

std::string renderCHeader(const ModelSpecs &specs, llvm::StringRef description,
                          llvm::StringRef planJson) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::StringRef name = specs.name;
  std::string guard = "ATTNC_" + name.upper() + "_H";
  os << "/* " << name << ".h: generated by attnc from " << description
     << ". Do not edit. */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stdint.h>\n#include <string.h>\n\n"
     << "#include \"HalideRuntime.h\"\n"
     << "#include \"" << name << "_kernels.h\"\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << kCommonDefinitions << kLibraryTypes;
  if (!specs.gpuApi.empty())
    os << kDeviceDefinitions
       << (specs.gpuApi == "cuda" ? kCudaDefinitions : kOpenclDefinitions);
  // Plain-array wrappers of each kernel set: `<name>` calls the CPU kernel,
  // `<name>_cuda` (`_opencl`) the GPU one.
  for (const std::string &suffix : specs.deviceSuffixes()) {
    for (const attn::SdpaSpec &spec : specs.prefill)
      renderPrefill(os, spec, suffix);
    for (const attn::DecodeSpec &spec : specs.decode)
      renderDecode(os, spec, suffix);
  }
  os << "\n/* Layers in execution order and the kernels they run. */\n"
     << "#define " << name.upper() << "_NUM_LAYERS " << specs.layers.size()
     << "\n";
  // `<layer>_prefill` names the CPU wrapper (the GPU one in a GPU-only
  // library); `<layer>_prefill_cuda` the CUDA one beside CPU kernels.
  for (const std::string &suffix : specs.deviceSuffixes()) {
    std::string macroSuffix = specs.cpuKernels ? suffix : "";
    for (const ModelSpecs::Layer &layer : specs.layers) {
      os << "#define " << name << "_" << layer.symbol << "_prefill"
         << macroSuffix << " " << layer.prefill << suffix << "\n";
      if (!layer.decode.empty())
        os << "#define " << name << "_" << layer.symbol << "_decode"
           << macroSuffix << " " << layer.decode << suffix << "\n";
    }
  }

  // The runtime's view: the plan and every kernel by name. The table stores
  // type-erased pointers; the runtime casts each back to its family's
  // signature (declared in <name>_kernels.h).
  os << "\nstatic const attnc_kernel_entry " << name << "_kernel_table[] = {\n";
  auto entry = [&](const std::string &function) {
    os << "    {\"" << function << "\", (void (*)(void))" << function
       << "_kernel, " << function << "_kernel_metadata},\n";
  };
  for (const std::string &suffix : specs.deviceSuffixes())
    for (const std::string &function :
         specs.functionNames(/*gpu=*/!suffix.empty()))
      entry(function + suffix);
  os << "};\n#define " << name.upper() << "_KERNEL_TABLE_SIZE (sizeof " << name
     << "_kernel_table / sizeof " << name << "_kernel_table[0])\n\n";
  // A library with GPU kernels also gives the runtime the few entry points
  // of Halide's device runtime it needs (attn::runtime::DeviceApi): through
  // this table, so that the runtime library references no halide_* symbol
  // a CPU-only model library would lack.
  if (!specs.gpuApi.empty()) {
    const std::string &api = specs.gpuApi;
    os << "/* The GPU API of this library's second kernel set. */\n#define "
       << name.upper() << "_GPU_API \"" << api << "\"\n"
       << "static const attnc_device_api " << name << "_device_api = {\n    \""
       << api << "\", attnc_" << api << "_load_driver, halide_" << api
       << "_device_interface,\n"
       << "    halide_device_malloc, halide_device_free, "
          "halide_copy_to_device,\n"
       << "    halide_copy_to_host, halide_buffer_copy, halide_device_crop,\n"
       << "    halide_device_release_crop, halide_set_error_handler};\n\n";
  }
  os << "/* The plan (also written as " << name << "_plan.json). */\n"
     << "static const char " << name << "_plan_json[] =";
  llvm::SmallVector<llvm::StringRef> lines;
  planJson.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    os << "\n    \"";
    for (char c : line) { // a C string literal: escape quotes and backslashes
      if (c == '"' || c == '\\')
        os << '\\' << c;
      else if (llvm::isPrint(c))
        os << c;
      else
        os << llvm::format("\\%03o", unsigned(static_cast<unsigned char>(c)));
    }
    os << "\\n\"";
  }
  os << ";\n";
  // Everything above, for the runtime in one value (Model::load takes it);
  // a shared library (attnc --shared) returns the same from attnc_library().
  os << "\n/* The library as the runtime takes it "
        "(attn::runtime::ModelLibrary). */\n"
     << "static const attnc_model_library " << name << "_library = {\n"
     << "    ATTNC_LIBRARY_ABI, \"" << ATTNC_VERSION << "\", \"" << name
     << "\",\n    \"" << specs.cpuTargets << "\",\n    " << name
     << "_plan_json, " << name << "_kernel_table, " << name.upper()
     << "_KERNEL_TABLE_SIZE,\n    "
     << (specs.gpuApi.empty() ? std::string("NULL")
                              : "&" + name.str() + "_device_api")
     << ",\n    halide_set_error_handler, halide_set_custom_malloc, "
        "halide_set_custom_free};\n";
  os << "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return text;
}

std::string renderKernelDeclarations(const ModelSpecs &specs) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string guard =
      "ATTNC_" + llvm::StringRef(specs.name).upper() + "_KERNELS_H";
  os << "/* " << specs.name
     << "_kernels.h: generated by attnc. Do not edit. */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include \"HalideRuntime.h\"\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  // CPU kernels, then their GPU twins (`_cuda`, `_opencl`), each with the
  // buffers its family declares (schedules/KernelAbi.cpp).
  for (const std::string &suffix : specs.deviceSuffixes()) {
    const attn::KernelPlace place =
        suffix.empty() ? attn::KernelPlace::Cpu : attn::KernelPlace::Gpu;
    auto declare = [&](const std::string &function,
                       const std::vector<attn::KernelBuffer> &buffers) {
      std::string inputs, outputs, parameters;
      for (const attn::KernelBuffer &buffer : buffers) {
        std::string &list = buffer.isOutput() ? outputs : inputs;
        list += (list.empty() ? "" : ", ") + buffer.name + " " +
                attn::bufferElementName(buffer.element) + buffer.shape;
        parameters += (parameters.empty() ? "" : ", ") +
                      std::string("struct halide_buffer_t *") + buffer.name;
      }
      os << "/* in: " << inputs << "\n   out: " << outputs << " */\n"
         << "int " << function << suffix << "_kernel(" << parameters << ");\n";
    };
    for (const attn::SdpaSpec &spec : specs.prefill)
      declare(spec.functionName, attn::kernelBuffers(spec));
    for (const attn::DecodeSpec &spec : specs.decode)
      declare(spec.functionName, attn::kernelBuffers(spec, place));
    for (const attn::LinearSpec &spec :
         specs.linearVariants(/*fewTokens=*/suffix.empty()))
      declare(spec.functionName, attn::kernelBuffers(spec, place));
    for (const attn::NormSpec &spec : specs.norm)
      declare(spec.functionName, attn::kernelBuffers(spec));
    for (const attn::EmbeddingSpec &spec : specs.embedding)
      declare(spec.functionName, attn::kernelBuffers(spec));
  }
  // What each kernel takes, as Halide describes it: the runtime checks its
  // calls against it.
  os << "\n";
  for (const std::string &suffix : specs.deviceSuffixes())
    for (const std::string &function :
         specs.functionNames(/*gpu=*/!suffix.empty()))
      os << "const struct halide_filter_metadata_t *" << function << suffix
         << "_kernel_metadata(void);\n";
  os << "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return text;
}

} // namespace attnc
