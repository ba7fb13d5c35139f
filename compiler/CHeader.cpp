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

/* Describes the dense C array data[n3][n2][n1][n0] of `bits`-bit elements
   of Halide type `code` as a Halide buffer. Returns ATTNC_INVALID_ARGUMENT if
   an extent, stride or the element count exceeds int32. */
static inline int attnc_describe_4d(halide_buffer_t *buffer,
                                    halide_dimension_t dims[4],
                                    const void *data, int code, int bits,
                                    int64_t n0, int64_t n1, int64_t n2,
                                    int64_t n3) {
  const int64_t extents[4] = {n0, n1, n2, n3};
  int64_t stride = 1;
  int d;
  memset(buffer, 0, sizeof(*buffer));
  for (d = 0; d < 4; d++) {
    if (extents[d] < 1 || extents[d] > INT32_MAX || stride > INT32_MAX)
      return ATTNC_INVALID_ARGUMENT;
    dims[d].min = 0;
    dims[d].extent = (int32_t)extents[d];
    dims[d].stride = (int32_t)stride;
    dims[d].flags = 0;
    stride *= extents[d];
  }
  if (stride > INT32_MAX) /* Halide indexes without large_buffers */
    return ATTNC_INVALID_ARGUMENT;
  buffer->host = (uint8_t *)(uintptr_t)data; /* inputs are never written */
  buffer->type.code = (halide_type_code_t)code;
  buffer->type.bits = (uint8_t)bits;
  buffer->type.lanes = 1;
  buffer->dimensions = 4;
  buffer->dim = dims;
  return ATTNC_OK;
}

static inline int attnc_describe_f32(halide_buffer_t *buffer,
                                     halide_dimension_t dims[4],
                                     const float *data, int64_t n0, int64_t n1,
                                     int64_t n2, int64_t n3) {
  return attnc_describe_4d(buffer, dims, data, halide_type_float, 32, n0, n1,
                           n2, n3);
}

/* Describes int32_t data[n] (per-sequence lengths) as a Halide buffer. */
static inline void attnc_describe_i32(halide_buffer_t *buffer,
                                      halide_dimension_t *dim,
                                      const int32_t *data, int32_t n) {
  memset(buffer, 0, sizeof(*buffer));
  buffer->host = (uint8_t *)(uintptr_t)data; /* inputs are never written */
  buffer->type.code = halide_type_int;
  buffer->type.bits = 32;
  buffer->type.lanes = 1;
  buffer->dimensions = 1;
  buffer->dim = dim;
  dim->min = 0;
  dim->extent = n;
  dim->stride = 1;
  dim->flags = 0;
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

/// The statement that ends a wrapper: the kernel `function` (with its
/// device suffix) on `arguments`; a GPU kernel's inputs go to the device,
/// its output comes back to the host and its device allocations are freed.
std::string kernelCall(const std::string &function, llvm::StringRef suffix,
                       const std::string &arguments) {
  if (suffix.empty())
    return "return " + function + "_kernel(" + arguments + ");";
  return "{\n    halide_buffer_t *all[] = {" + arguments + "};\n" +
         "    const int count = (int)(sizeof all / sizeof all[0]);\n" +
         "    if (attnc" + suffix.str() + "_load_driver() != ATTNC_OK)\n" +
         "      return ATTNC_NO_DEVICE_DRIVER;\n" +
         "    attnc_device_inputs(all, count, &o);\n" +
         "    return attnc_device_finish(" + function + "_kernel(" + arguments +
         "), &o,\n                               all, count);\n  }";
}

/// A wrapper's arguments to its kernel: the local halide_buffer_t that
/// `locals` names for each declared buffer, in the declaration's order.
std::string kernelArguments(const std::vector<attn::KernelBuffer> &buffers,
                            const std::map<std::string, std::string> &locals) {
  std::string arguments;
  for (const attn::KernelBuffer &buffer : buffers)
    arguments += (arguments.empty() ? "&" : ", &") + locals.at(buffer.name);
  return arguments;
}

/// A line for a GPU wrapper's comment.
const char *kDeviceWrapperNote =
    "\n *   GPU: the arrays are host memory, copied to the device and `out` "
    "back\n *   on every call; ATTNC_NO_DEVICE_DRIVER without the driver.";

void renderPrefill(llvm::raw_ostream &os, const attn::SdpaSpec &spec,
                   llvm::StringRef suffix) {
  const std::string function = spec.functionName + suffix.str();
  std::string macro = llvm::StringRef(spec.functionName).upper();
  int hq = spec.numQueryHeads, hkv = spec.numKvHeads, d = spec.headDim;
  // Key padding: one more input, the real keys of each batch entry.
  const bool padded = spec.keyPadding;
  const bool bf16 = spec.compute == attn::SdpaCompute::BF16;
  std::string lengthsDoc =
      padded ? "\n *   key_lengths [batch]: entry b sees only its first "
               "key_lengths[b] keys\n *   (clamped to [0, kv_len]); a query "
               "that sees no key yields 0."
             : "";
  std::string lengthsParam = padded ? "const int32_t *key_lengths, " : "";
  std::string lengthsBuffer = padded ? R"(
  halide_buffer_t n;
  halide_dimension_t nd[1];
  if (!key_lengths || batch < 1)
    return ATTNC_INVALID_ARGUMENT;
  attnc_describe_i32(&n, nd, key_lengths, batch);)"
                                     : "";
  os << llvm::formatv(
      R"(
/* {0}: out = softmax(query · keyᵀ · {1} {2}) · value
 *   {3} query heads over {4} KV heads, head_dim {5}; float, C order:
 *   query [batch][q_len][{3}][{5}], key and value [batch][kv_len][{4}][{5}],
 *   out [batch][q_len][{3}][{5}].{6}{9}{14}{17}
 *   Returns ATTNC_OK, ATTNC_INVALID_ARGUMENT, or a halide_error_code_t. */
#define {7}_NUM_QUERY_HEADS {3}
#define {7}_NUM_KV_HEADS {4}
#define {7}_HEAD_DIM {5}
#define {7}_CAUSAL {8}
#define {7}_KEY_PADDING {12}
#define {7}_BF16_COMPUTE {15}
static inline int {0}(const float *query, const float *key,
    const float *value, {10}float *out, int32_t batch, int32_t q_len,
    int32_t kv_len) {{
  halide_buffer_t q, k, v, o;
  halide_dimension_t qd[4], kd[4], vd[4], od[4];{11}
  if (!query || !key || !value || !out)
    return ATTNC_INVALID_ARGUMENT;
  if (attnc_describe_f32(&q, qd, query, {5}, {3}, q_len, batch) ||
      attnc_describe_f32(&k, kd, key, {5}, {4}, kv_len, batch) ||
      attnc_describe_f32(&v, vd, value, {5}, {4}, kv_len, batch) ||
      attnc_describe_f32(&o, od, out, {5}, {3}, q_len, batch))
    return ATTNC_INVALID_ARGUMENT;
  {16}
}
)",
      function, llvm::formatv("{0:e}", spec.scale),
      spec.causal ? "+ causal mask" : "", hq, hkv, d,
      spec.window
          ? llvm::formatv("\n *   Sliding window: query i sees keys j with "
                          "i + kv_len - q_len - {0} < j <= i + kv_len - q_len.",
                          spec.window)
                .str()
      : spec.causal
          ? "\n *   Causal: query i sees keys j <= i + kv_len - q_len;"
            "\n *   a query that sees no key yields 0."
          : "",
      macro, spec.causal ? 1 : 0, lengthsDoc, lengthsParam, lengthsBuffer,
      padded ? 1 : 0, padded ? "&n, " : "",
      bf16 ? "\n *   bf16 products: Q, K, V and the softmax weights are "
             "rounded to bf16\n *   for Q·Kᵀ and P·V (fp32 accumulation "
             "and softmax)."
           : "",
      bf16 ? 1 : 0,
      kernelCall(function, suffix,
                 kernelArguments(attn::kernelBuffers(spec),
                                 {{"query", "q"},
                                  {"key", "k"},
                                  {"value", "v"},
                                  {"key_lengths", "n"},
                                  {"output", "o"}})),
      suffix.empty() ? "" : kDeviceWrapperNote);
}

void renderDecode(llvm::raw_ostream &os, const attn::DecodeSpec &spec,
                  llvm::StringRef suffix) {
  const std::string function = spec.functionName + suffix.str();
  std::string macro = llvm::StringRef(spec.functionName).upper();
  int hq = spec.numQueryHeads, hkv = spec.numKvHeads, d = spec.headDim;
  bool f32 = spec.cacheElement == attn::CacheElement::F32;
  bool int8 = spec.cacheElement == attn::CacheElement::I8;
  std::string element =
      f32    ? "float"
      : int8 ? "int8_t (symmetric, one float scale per token and head in "
               "key_scales, value_scales [num_pages][" +
                   std::to_string(spec.pageSize) + "][" + std::to_string(hkv) +
                   "])"
      : spec.cacheElement == attn::CacheElement::F16
          ? "uint16_t (IEEE binary16)"
          : "uint16_t (bfloat16)";
  const char *pageType = f32 ? "float" : int8 ? "int8_t" : "uint16_t";
  // GPU kernels take a bf16 pool as its uint16 bits (schedules/Decode.cpp).
  const bool bf16 = spec.cacheElement == attn::CacheElement::BF16;
  const char *typeCode = bf16 && suffix.empty() ? "halide_type_bfloat"
                         : bf16                 ? "halide_type_uint"
                         : int8                 ? "halide_type_int"
                                                : "halide_type_float";
  int bits = f32 ? 32 : int8 ? 8 : 16;
  // I8: two more inputs, the scale pools, described as 3-d float arrays
  // (a 4-d description with a unit outermost extent, cut to 3 dims).
  std::string scaleParameters, scaleChecks, scaleBuffers;
  if (int8) {
    scaleParameters = "const float *key_scales, const float *value_scales, ";
    scaleChecks = " || !key_scales || !value_scales";
    scaleBuffers = llvm::formatv(
        R"(  halide_buffer_t ks, vs;
  halide_dimension_t ksd[4], vsd[4];
  if (attnc_describe_4d(&ks, ksd, key_scales, halide_type_float, 32, {0},
                        {1}, num_pages, 1) ||
      attnc_describe_4d(&vs, vsd, value_scales, halide_type_float, 32, {0},
                        {1}, num_pages, 1))
    return ATTNC_INVALID_ARGUMENT;
  ks.dimensions = vs.dimensions = 3;
)",
        hkv, spec.pageSize);
  }
  os << llvm::formatv(
      R"(
/* {0}: decode attention over a paged KV cache (a contiguous
 *   cache is one page of max_length tokens per sequence). Scale {1};
 *   {2} query heads over {3} KV heads, head_dim {4}, pages of {5} tokens.
 *   query [batch][q_len][{2}][{4}] float: the newest q_len tokens,
 *   key_pages, value_pages [num_pages][{5}][{3}][{4}] {8},
 *   block_table [batch][max_pages]: page ids of each sequence in order,
 *   seq_lens [batch]: cached tokens per sequence, the new ones included,
 *   out [batch][q_len][{2}][{4}].{6}{17}
 *   Page ids and lengths are clamped to the buffers: a corrupt table cannot
 *   read out of bounds. Returns ATTNC_OK, ATTNC_INVALID_ARGUMENT, or a
 *   halide_error_code_t. */
#define {7}_NUM_QUERY_HEADS {2}
#define {7}_NUM_KV_HEADS {3}
#define {7}_HEAD_DIM {4}
#define {7}_PAGE_SIZE {5}
static inline int {0}(const float *query, const {9} *key_pages,
    const {9} *value_pages, {12}const int32_t *block_table,
    const int32_t *seq_lens, float *out, int32_t batch, int32_t q_len,
    int32_t num_pages, int32_t max_pages) {{
  halide_buffer_t q, k, v, t, l, o;
  halide_dimension_t qd[4], kd[4], vd[4], td[2], ld[1], od[4];
  if (!query || !key_pages || !value_pages || !block_table || !seq_lens ||
      !out || max_pages < 1{13})
    return ATTNC_INVALID_ARGUMENT;
{14}
  if (attnc_describe_f32(&q, qd, query, {4}, {2}, q_len, batch) ||
      attnc_describe_4d(&k, kd, key_pages, {10}, {11}, {4}, {3}, {5},
                        num_pages) ||
      attnc_describe_4d(&v, vd, value_pages, {10}, {11}, {4}, {3}, {5},
                        num_pages) ||
      attnc_describe_f32(&o, od, out, {4}, {2}, q_len, batch) ||
      (int64_t)max_pages * batch > INT32_MAX)
    return ATTNC_INVALID_ARGUMENT;
  memset(&t, 0, sizeof t);
  t.host = (uint8_t *)(uintptr_t)block_table;
  t.type.code = halide_type_int;
  t.type.bits = 32;
  t.type.lanes = 1;
  t.dimensions = 2;
  t.dim = td;
  td[0].min = 0; td[0].extent = max_pages; td[0].stride = 1; td[0].flags = 0;
  td[1].min = 0; td[1].extent = batch; td[1].stride = max_pages; td[1].flags = 0;
  attnc_describe_i32(&l, ld, seq_lens, batch);
  {16}
}
)",
      function, llvm::formatv("{0:e}", spec.scale), hq, hkv, d, spec.pageSize,
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
      macro, element, pageType, typeCode, bits, scaleParameters, scaleChecks,
      scaleBuffers, "",
      kernelCall(function, suffix,
                 kernelArguments(
                     attn::kernelBuffers(spec, suffix.empty()
                                                   ? attn::KernelPlace::Cpu
                                                   : attn::KernelPlace::Gpu),
                     {{"query", "q"},
                      {"key_pages", "k"},
                      {"value_pages", "v"},
                      {"key_scales", "ks"},
                      {"value_scales", "vs"},
                      {"block_table", "t"},
                      {"seq_lens", "l"},
                      {"output", "o"}})),
      suffix.empty() ? "" : kDeviceWrapperNote);
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
       << "static const attnc_device_api " << name
       << "_device_api = {\n    \"" << api << "\", attnc_" << api
       << "_load_driver, halide_" << api << "_device_interface,\n"
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
  os << "\n/* The library as the runtime takes it (attn::runtime::ModelLibrary). */\n"
     << "static const attnc_model_library " << name << "_library = {\n"
     << "    ATTNC_LIBRARY_ABI, \"" << ATTNC_VERSION << "\", \"" << name
     << "\",\n    \"" << specs.cpuTargets << "\",\n    " << name
     << "_plan_json, " << name << "_kernel_table, " << name.upper()
     << "_KERNEL_TABLE_SIZE,\n    "
     << (specs.gpuApi.empty() ? std::string("NULL")
                              : "&" + name.str() + "_device_api")
     << ", halide_set_error_handler};\n";
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
         << "int " << function << suffix << "_kernel(" << parameters
         << ");\n";
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
