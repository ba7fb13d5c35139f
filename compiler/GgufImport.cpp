//===- GgufImport.cpp - a GGUF file's model to attn IR --------------------===//

#include "GgufImport.h"

#include "DTypes.h"
#include "HuggingFaceImport.h"
#include "ModelBuilder.h"

#include "attn/Support.h"

#include "attn/runtime/Gguf.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using ::attn::runtime::ggmlInt8Group;
using ::attn::runtime::GgmlType;
using ::attn::runtime::GgufFile;
using ::attn::runtime::GgufTensor;
using ::attn::runtime::GgufValue;
using ::attn::runtime::Status;

namespace attnc {

namespace {

/// The architectures attnc reads (general.architecture) and the Hugging
/// Face model_type each stands for. llama.cpp's converter writes Llama and
/// Mistral as `llama` (Q and K rows permuted: the runtime undoes it), the
/// others under their own names (Gemma's norm weights with its offset
/// added: the runtime reads them so; OLMo 2's norms after each sublayer as
/// Gemma's post-norms; Phi-3's Q|K|V and gate|up fused as its checkpoints
/// have them, attn_qkv and ffn_up).
struct Architecture {
  const char *name, *modelType;
  /// Which attention.sliding_window values it states: none (a key to
  /// refuse), from 1, or from 0 (Phi-3's converter: 0 for none).
  enum class Window { None, FromOne, FromZero } window;
  /// rope.dimension_count below the head size (partial rotary), and
  /// LongRoPE's rope_factors_long/short.weight: read, else refused.
  bool partialRotary, longRopeFactors;
};
using Window = Architecture::Window;
// clang-format off
constexpr Architecture kArchitectures[] = {
    // name     model_type     sliding_window     partial  LongRoPE
    //                                            rotary   factors
    {"llama",  "llama",       Window::FromOne,  false,   false},
    {"qwen2",  "qwen2",       Window::None,     false,   false},
    {"qwen3",  "qwen3",       Window::None,     false,   false},
    {"gemma2", "gemma2",      Window::FromOne,  false,   false},
    {"gemma3", "gemma3_text", Window::FromOne,  false,   false},
    {"olmo2",  "olmo2",       Window::None,     false,   false},
    {"phi3",   "phi3",        Window::FromZero, true,    true}};
// clang-format on

llvm::Error error(const GgufFile &file, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 file.path() + ": " + message.str());
}
llvm::Error error(const Status &status) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 status.message());
}

/// The linear weights of the blocks: their type is the model's.
bool isBlockLinear(llvm::StringRef name) {
  if (!name.consume_front("blk."))
    return false;
  name = name.drop_until([](char c) { return c == '.'; }).drop_front();
  return llvm::is_contained({"attn_q.weight", "attn_k.weight",
                             "attn_v.weight", "attn_qkv.weight",
                             "attn_output.weight",
                             "ffn_gate.weight", "ffn_up.weight",
                             "ffn_down.weight"},
                            name);
}

/// The output head's tensor: output.weight, or the embedding it is tied
/// to (null: neither).
const GgufTensor *headTensor(const GgufFile &file) {
  const GgufTensor *head = file.tensor("output.weight");
  return head ? head : file.tensor("token_embd.weight");
}

/// The kernels' weight type of a float tensor type (none for a block type).
std::optional<::attn::DType> floatType(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
    return ::attn::DType::F32;
  case GgmlType::F16:
    return ::attn::DType::F16;
  case GgmlType::BF16:
    return ::attn::DType::BF16;
  default:
    return std::nullopt;
  }
}

/// How the kernels read a readable tensor type as stored: floats as they
/// are, Q8_0, Q5_0 and Q6_K as int8 in groups (ggmlInt8Group), Q4_0, Q4_1
/// and Q4_K as int4 in groups of 32 (the last two with minimums: withMins).
struct KernelWeights {
  ::attn::DType type;
  int64_t group;
};
KernelWeights kernelWeights(GgmlType type) {
  if (std::optional<::attn::DType> element = floatType(type))
    return {*element, 0};
  if (const int group = ggmlInt8Group(type))
    return {::attn::DType::I8, int64_t(group)};
  return {::attn::DType::I4, 32};
}
bool withMins(GgmlType type) {
  return type == GgmlType::Q4_1 || type == GgmlType::Q4_K;
}

/// The type of most of the blocks' linear weights (the model's: the rest
/// run as projections' own, #attn.weights), or none without blocks.
std::optional<GgmlType> mainLinearType(const GgufFile &file) {
  std::map<GgmlType, int> counts;
  for (const GgufTensor &tensor : file.tensors())
    if (isBlockLinear(tensor.name))
      counts[tensor.type]++;
  std::optional<GgmlType> main;
  for (const auto &[type, count] : counts)
    if (!main || count > counts[*main])
      main = type;
  return main;
}

} // namespace

bool isGguf(llvm::StringRef bytes) {
  return GgufFile::hasMagic({bytes.data(), bytes.size()});
}

llvm::Expected<llvm::json::Object> ggufConfig(const GgufFile &file) {
  std::string arch;
  if (Status s = file.getString("general.architecture", arch); !s)
    return error(s);
  const Architecture *architecture = nullptr;
  for (const Architecture &candidate : kArchitectures)
    if (arch == candidate.name)
      architecture = &candidate;
  if (!architecture) {
    std::string known;
    for (const Architecture &candidate : kArchitectures)
      known += std::string(known.empty() ? "" : ", ") + candidate.name;
    return error(file, "general.architecture '" + arch +
                           "' is not read (attnc reads " + known + ")");
  }
  if (const GgufValue *split = file.find("split.count");
      split && split->isInteger() && split->integer > 1)
    return error(file, "a split GGUF file (split.count " +
                           std::to_string(split->integer) +
                           "): attnc reads whole files");

  llvm::json::Object config;
  config["model_type"] = architecture->modelType;
  std::set<std::string> read; // the <arch>.* keys taken
  const std::string prefix = arch + ".";
  auto key = [&](const char *suffix) {
    read.insert(prefix + suffix);
    return prefix + suffix;
  };
  // An integer of at least `minimum`; absent: nullopt (or an error when
  // `required`).
  llvm::Error failure = llvm::Error::success();
  auto integer = [&](const char *suffix, bool required,
                     int64_t minimum = 1) -> std::optional<int64_t> {
    const std::string name = key(suffix);
    if (failure || (!required && !file.find(name)))
      return std::nullopt;
    int64_t value;
    if (Status s = file.getInteger(name, value); !s) {
      failure = error(s);
      return std::nullopt;
    }
    if (value < minimum) {
      failure = error(file, "metadata '" + name + "' is " +
                                std::to_string(value) + "; expected >= " +
                                std::to_string(minimum));
      return std::nullopt;
    }
    return value;
  };
  auto real = [&](const char *suffix) -> std::optional<double> {
    const std::string name = key(suffix);
    if (failure || !file.find(name))
      return std::nullopt;
    double value;
    if (Status s = file.getReal(name, value); !s) {
      failure = error(s);
      return std::nullopt;
    }
    return value;
  };

  std::optional<int64_t> context = integer("context_length", true),
                         hidden = integer("embedding_length", true),
                         layers = integer("block_count", true),
                         ffn = integer("feed_forward_length", true),
                         heads = integer("attention.head_count", true),
                         kvHeads = integer("attention.head_count_kv", false),
                         keyLength = integer("attention.key_length", false),
                         valueLength = integer("attention.value_length", false),
                         ropeDims = integer("rope.dimension_count", false),
                         window = integer(
                             "attention.sliding_window", false,
                             architecture->window == Window::FromZero ? 0 : 1),
                         vocab = integer("vocab_size", false),
                         experts = integer("expert_count", false);
  integer("expert_used_count", false);
  std::optional<double> eps = real("attention.layer_norm_rms_epsilon"),
                        base = real("rope.freq_base"),
                        scale = real("rope.scaling.factor"),
                        attentionFactor = real("rope.scaling.attn_factor");
  std::optional<int64_t> originalContext =
      integer("rope.scaling.original_context_length", false);
  // Gemma 2's soft-caps of the attention scores and the output logits
  // (absent: none); read for gemma2 only, refused below elsewhere.
  const bool gemma = arch == "gemma2" || arch == "gemma3";
  std::optional<double> scoreCap, logitCap;
  if (arch == "gemma2") {
    scoreCap = real("attn_logit_softcapping");
    logitCap = real("final_logit_softcapping");
  }
  // Gemma's local layers as llama.cpp's converter states them: a period
  // (layer i is local unless i % period == period - 1; 0: every layer), or
  // one bool per layer; absent: the architecture's own pattern. And Gemma
  // 3's RoPE base of its local layers.
  std::vector<bool> localLayers;
  std::optional<double> localBase;
  if (gemma && !failure) {
    localBase = real("rope.freq_base_swa");
    const std::string name = key("attention.sliding_window_pattern");
    if (const GgufValue *pattern = file.find(name)) {
      if (pattern->isInteger() && pattern->integer >= 0) {
        for (int64_t i = 0; i < layers.value_or(0); i++)
          localLayers.push_back(pattern->integer == 0 ||
                                i % pattern->integer < pattern->integer - 1);
      } else if (pattern->type == ::attn::runtime::GgufValueType::Array &&
                 pattern->elementType ==
                     ::attn::runtime::GgufValueType::Bool &&
                 int64_t(pattern->items.size()) == layers.value_or(0)) {
        for (const GgufValue &item : pattern->items)
          localLayers.push_back(item.boolean);
      } else {
        return error(file, "metadata '" + name +
                               "' must be a period (an integer >= 0) or an "
                               "array of " +
                               std::to_string(layers.value_or(0)) +
                               " bools (one a layer)");
      }
    }
  }
  std::string scaling = "none";
  if (file.find(key("rope.scaling.type")) && !failure)
    if (Status s = file.getString(prefix + "rope.scaling.type", scaling); !s)
      failure = error(s);
  if (failure)
    return std::move(failure);
  if (!eps)
    return error(file, "metadata '" + prefix +
                           "attention.layer_norm_rms_epsilon' is missing");
  // Every other <arch>.* key would change the model in a way attnc does
  // not read: refused by name, never ignored.
  for (const auto &[name, value] : file.metadata())
    if (llvm::StringRef(name).starts_with(prefix) && !read.count(name))
      return error(file, "metadata '" + name +
                             "' is not read by attnc (it would change the "
                             "model)");
  if (experts)
    return error(file, "metadata '" + prefix +
                           "expert_count': mixtures of experts are not read "
                           "from GGUF files yet");

  config["max_position_embeddings"] = *context;
  config["hidden_size"] = *hidden;
  config["num_hidden_layers"] = *layers;
  config["intermediate_size"] = *ffn;
  config["num_attention_heads"] = *heads;
  config["num_key_value_heads"] = kvHeads.value_or(*heads);
  config["rms_norm_eps"] = *eps;
  // llama.cpp's default base where a file states none.
  config["rope_theta"] = base.value_or(10000.0);
  config["hidden_act"] = "silu";
  if (gemma) {
    // llama.cpp's Gemma: GELU (tanh) gates; local layers every other
    // (Gemma 2) or five of six (Gemma 3, their RoPE base 10000) where the
    // file states no pattern or base; the query scaled by head_dim^-1/2,
    // or by (hidden / heads)^-1/2 for the 27B models (by their layer
    // counts: llama.cpp reads no key for query_pre_attn_scalar).
    config["hidden_act"] = "gelu_pytorch_tanh";
    config["hidden_activation"] = "gelu_pytorch_tanh";
    if (!window)
      return error(file, "metadata '" + prefix +
                             "attention.sliding_window' is missing");
    const int64_t head = keyLength.value_or(*hidden / *heads);
    const bool is27B = *layers == (arch == "gemma2" ? 46 : 62);
    config["query_pre_attn_scalar"] = is27B ? *hidden / *heads : head;
    config["attn_logit_softcapping"] =
        scoreCap ? llvm::json::Value(*scoreCap) : llvm::json::Value(nullptr);
    config["final_logit_softcapping"] =
        logitCap ? llvm::json::Value(*logitCap) : llvm::json::Value(nullptr);
    if (arch == "gemma3") {
      config["sliding_window_pattern"] = 6;
      config["rope_local_base_freq"] = localBase.value_or(10000.0);
    } else if (localBase && *localBase != base.value_or(10000.0)) {
      return error(file, "metadata '" + prefix +
                             "rope.freq_base_swa' differs from "
                             "rope.freq_base: Gemma 2's local and global "
                             "layers share one RoPE base");
    }
    if (!localLayers.empty()) {
      llvm::json::Array types;
      for (bool local : localLayers)
        types.push_back(local ? "sliding_attention" : "full_attention");
      config["layer_types"] = std::move(types);
    }
  }
  if (keyLength || valueLength) {
    if (keyLength != valueLength)
      return error(file, "keys of " +
                             std::to_string(keyLength.value_or(0)) +
                             " and values of " +
                             std::to_string(valueLength.value_or(0)) +
                             " per head (" + prefix +
                             "attention.key_length / value_length): attnc "
                             "reads equal sizes");
    config["head_dim"] = *keyLength;
  }
  const int64_t headDim = keyLength.value_or(*hidden / *heads);
  // Phi-3's partial rotary: the first rope.dimension_count channels of a
  // head rotate (partial_rotary_factor · head_dim, as transformers counts).
  if (ropeDims && *ropeDims != headDim) {
    const double partial = double(*ropeDims) / double(headDim);
    if (!architecture->partialRotary)
      return error(file, "metadata '" + prefix +
                             "rope.dimension_count' is " +
                             std::to_string(*ropeDims) +
                             ", a partial rotation of heads of " +
                             std::to_string(headDim) + ", which " + arch +
                             " models do not have");
    if (*ropeDims > headDim || *ropeDims % 2 != 0 ||
        int64_t(double(headDim) * partial) != *ropeDims)
      return error(file, "metadata '" + prefix + "rope.dimension_count' is " +
                             std::to_string(*ropeDims) +
                             ": an even number of rotating channels of "
                             "heads of " +
                             std::to_string(headDim) + " expected");
    config["partial_rotary_factor"] = partial;
  }
  const int64_t rotaryPairs = ropeDims.value_or(headDim) / 2;
  if (scaling == "linear") {
    if (!scale)
      return error(file, "metadata '" + prefix +
                             "rope.scaling.factor' is missing");
    config["rope_scaling"] =
        llvm::json::Object{{"rope_type", "linear"}, {"factor", *scale}};
  } else if (scaling != "none") {
    return error(file, "metadata '" + prefix + "rope.scaling.type' '" +
                           scaling + "' is not read (none or linear)");
  }
  if (window) {
    if (architecture->window == Window::None)
      return error(file, "metadata '" + prefix +
                             "attention.sliding_window': " + arch +
                             " models have no sliding window in attnc");
    if (arch == "llama")
      config["model_type"] = "mistral";
    // Phi-3's 0: none. (llama.cpp runs no Phi-3 window at all; attnc runs
    // the one the file states, as transformers the config's.)
    if (*window > 0)
      config["sliding_window"] = *window;
  }
  // A list of RoPE factors stored as a tensor: one positive float per
  // rotating channel pair.
  auto factorList = [&](const GgufTensor &tensor)
      -> llvm::Expected<llvm::json::Array> {
    if (tensor.dims.size() != 1 || tensor.dims[0] != rotaryPairs ||
        !floatType(tensor.type))
      return error(file, "tensor '" + tensor.name + "' must be [" +
                             std::to_string(rotaryPairs) +
                             "] floats (a factor per channel pair), got " +
                             ::attn::runtime::name(tensor.type) + " [" +
                             llvm::join(llvm::map_range(tensor.shape(),
                                                        [](int64_t d) {
                                                          return std::to_string(d);
                                                        }),
                                        ", ") +
                             "]");
    std::vector<float> factors(size_t(tensor.dims[0]));
    ::attn::runtime::decodeValues(tensor.type, tensor.data, tensor.dims[0],
                                  factors.data());
    llvm::json::Array list;
    for (float factor : factors) {
      if (!(std::isfinite(factor) && factor > 0))
        return error(file, "tensor '" + tensor.name + "' holds " +
                               std::to_string(factor) +
                               ": each factor must be positive and finite");
      list.push_back(double(factor));
    }
    return list;
  };
  // Llama 3's RoPE (rope_type llama3) comes as a tensor of its own,
  // rope_freqs.weight [head_dim / 2]: the divisor of each channel pair's
  // frequency, which llama.cpp's converter computes from the config's
  // factor, low/high_freq_factor and original context. The same divisors
  // per pair are transformers' LongRoPE factors (inv_freq / factor_i) at a
  // context of its original length (no attention factor): that rule, with
  // one list for short and long sequences, is what the file states.
  if (const GgufTensor *freqs = file.tensor("rope_freqs.weight")) {
    if (config.get("rope_scaling"))
      return error(file, "tensor 'rope_freqs.weight' beside metadata '" +
                             prefix + "rope.scaling.type' '" + scaling +
                             "': attnc reads one RoPE rule");
    llvm::Expected<llvm::json::Array> list = factorList(*freqs);
    if (!list)
      return list.takeError();
    config["rope_scaling"] = llvm::json::Object{
        {"rope_type", "longrope"},
        {"factor", 1.0},
        {"short_factor", llvm::json::Array(*list)},
        {"long_factor", std::move(*list)}};
  }
  // Phi-3's LongRoPE (Phi-3.5, Phi-4-mini): the short and long factors as
  // tensors, the pretrained context and the attention factor as metadata;
  // the rule is transformers' (the long factors past the pretrained
  // context, which the config.json import derives as it does for the
  // checkpoint's own config).
  const GgufTensor *longFactors = file.tensor("rope_factors_long.weight"),
                   *shortFactors = file.tensor("rope_factors_short.weight");
  if (longFactors || shortFactors) {
    if (!architecture->longRopeFactors || !longFactors || !shortFactors ||
        config.get("rope_scaling"))
      return error(file, "tensor '" +
                             (longFactors ? longFactors : shortFactors)->name +
                             "': LongRoPE factors are read from phi3 files, "
                             "as a pair (rope_factors_long.weight and "
                             "rope_factors_short.weight) and as their one "
                             "RoPE rule");
    llvm::Expected<llvm::json::Array> longList = factorList(*longFactors);
    if (!longList)
      return longList.takeError();
    llvm::Expected<llvm::json::Array> shortList = factorList(*shortFactors);
    if (!shortList)
      return shortList.takeError();
    llvm::json::Object rule{{"rope_type", "longrope"},
                            {"short_factor", std::move(*shortList)},
                            {"long_factor", std::move(*longList)}};
    if (attentionFactor)
      rule["attention_factor"] = *attentionFactor;
    config["rope_scaling"] = std::move(rule);
    if (originalContext)
      config["original_max_position_embeddings"] = *originalContext;
  } else if (attentionFactor && *attentionFactor != 1.0) {
    return error(file, "metadata '" + prefix +
                           "rope.scaling.attn_factor' is " +
                           std::to_string(*attentionFactor) +
                           " without LongRoPE factors: attnc scales RoPE's "
                           "cos and sin only in that rule");
  }

  // The vocabulary is the embedding's rows; a file without an output head
  // ties it to the embedding.
  const GgufTensor *embedding = file.tensor("token_embd.weight");
  if (!embedding || embedding->dims.size() != 2 ||
      embedding->dims[0] != *hidden)
    return error(file, "tensor 'token_embd.weight' must be [vocabulary][" +
                           std::to_string(*hidden) + "]");
  if (vocab && *vocab != embedding->dims[1])
    return error(file, "metadata '" + prefix + "vocab_size' is " +
                           std::to_string(*vocab) +
                           ", but token_embd.weight has " +
                           std::to_string(embedding->dims[1]) + " rows");
  config["vocab_size"] = embedding->dims[1];
  config["tie_word_embeddings"] = !file.tensor("output.weight");

  // The weights' dtype: that of most of the blocks' linear weights; each
  // of the others runs as stored too (importGguf: a Q4_K_M file's Q6_K V
  // and down projections beside its Q4_K ones).
  for (const GgufTensor &tensor : file.tensors())
    if (!::attn::runtime::ggmlReadable(tensor.type))
      return error(file, "tensor '" + tensor.name + "' is " +
                             ::attn::runtime::name(tensor.type) +
                             ", which attnc does not run yet (it runs " +
                             ::attn::runtime::ggmlReadableNames() +
                             " weights)");
  const std::optional<GgmlType> linear = mainLinearType(file);
  if (!linear)
    return error(file, "no tensor 'blk.0.attn_q.weight' or like it");
  for (const GgufTensor &tensor : file.tensors()) {
    if (!isBlockLinear(tensor.name) || tensor.type == *linear)
      continue;
    auto beside = [&](const llvm::Twine &why) {
      return error(file, "tensor '" + tensor.name + "' is " +
                             ::attn::runtime::name(tensor.type) +
                             " beside blocks of " +
                             ::attn::runtime::name(*linear) + ": " + why);
    };
    // int4 offsets are the model's rule: minimums (Q4_1, Q4_K) or the
    // zero point 8 (Q4_0) for all of its int4 weights.
    if (withMins(tensor.type) && !withMins(*linear))
      return beside("attnc runs Q4_1 and Q4_K weights (int4 with "
                    "minimums) only in a file whose blocks are mostly Q4_1 "
                    "or Q4_K");
    if (tensor.type == GgmlType::Q4_0 && withMins(*linear))
      return beside("a model's int4 weights follow one offset rule in "
                    "attnc, and Q4_0's zero point is not Q4_1's and Q4_K's "
                    "minimums");
    // One kernel computes a gated FFN's gate and up halves.
    llvm::StringRef name = tensor.name;
    if (name.ends_with(".ffn_gate.weight") || name.ends_with(".ffn_up.weight")) {
      const std::string block = name.substr(0, name.rfind(".ffn_")).str();
      const GgufTensor *gate = file.tensor(block + ".ffn_gate.weight"),
                       *up = file.tensor(block + ".ffn_up.weight");
      if (gate && up && gate->type != up->type)
        return error(file, "tensors '" + gate->name + "' (" +
                               ::attn::runtime::name(gate->type) + ") and '" +
                               up->name + "' (" +
                               ::attn::runtime::name(up->type) +
                               ") differ in type: attnc computes a gated "
                               "FFN's gate and up in one kernel");
    }
  }
  // The output head keeps its own precision where it is stored in floats,
  // Q8_0, Q5_0 or Q6_K (importGguf gives its kernel that type: llama.cpp's
  // quantizer keeps most files' head in Q6_K); F32 blocks' kernels take any
  // head exactly. A head of another block type would be requantized at
  // load.
  const GgufTensor *head = headTensor(file);
  if (head->type != *linear && *linear != GgmlType::F32 &&
      !floatType(head->type) && !ggmlInt8Group(head->type))
    return error(file, "tensor '" + head->name + "' (the output head) is " +
                           ::attn::runtime::name(head->type) +
                           " beside blocks of " +
                           ::attn::runtime::name(*linear) +
                           ": attnc runs a head of the blocks' type or of "
                           "F32, F16, BF16, Q8_0, Q5_0 or Q6_K");
  switch (*linear) {
  case GgmlType::BF16:
    config["torch_dtype"] = "bfloat16";
    break;
  case GgmlType::F16:
    config["torch_dtype"] = "float16";
    break;
  case GgmlType::Q8_0:
  case GgmlType::Q6_K:
  case GgmlType::Q5_0:
  case GgmlType::Q4_0:
  case GgmlType::Q4_1:
  case GgmlType::Q4_K:
    // int8 or int4 weights (importGguf), and the rest of the arithmetic
    // as attnc gives a 16-bit checkpoint: bf16 attention products where
    // the CPU has them (a quantized file's model is not fp32 anyway).
    config["torch_dtype"] = "bfloat16";
    break;
  default:
    config["torch_dtype"] = "float32";
  }
  return config;
}

std::string ggufReport(const std::string &path) {
  GgufFile file;
  if (Status s = GgufFile::open(path, file); !s)
    return "GGUF file: " + s.message() + "\n";
  std::string text;
  llvm::raw_string_ostream out(text);
  std::map<std::string, int> types;
  for (const GgufTensor &tensor : file.tensors())
    types[::attn::runtime::name(tensor.type)]++;
  out << "GGUF file: version " << file.version() << ", "
      << file.metadata().size() << " metadata keys, " << file.tensors().size()
      << " tensors, "
      << mlir::attn::formatBytes(int64_t(file.tensorBytes()))
      << " of tensor data (";
  llvm::interleaveComma(types, out, [&](const auto &entry) {
    out << entry.second << " " << entry.first;
  });
  out << ")\n";
  // Each tensor's precision as the file stores it (and the runtime reads
  // it: Q8_0, Q5_0 and Q6_K blocks as int8 in groups of 32, 32 and 16,
  // Q4_0, Q4_1 and Q4_K blocks as int4 in groups of 32, the rest decoded).
  for (const GgufTensor &tensor : file.tensors()) {
    out << "  " << tensor.name << "  " << ::attn::runtime::name(tensor.type)
        << " [";
    llvm::interleaveComma(tensor.shape(), out);
    out << "]\n";
  }
  // The tokenizer the file carries (tokenizer.ggml.*: read by the runtime,
  // docs/tokenizers.md).
  std::string model, pre;
  const std::vector<GgufValue> *tokens = nullptr;
  if (!file.getString("tokenizer.ggml.model", model) ||
      !file.getArray("tokenizer.ggml.tokens", ::attn::runtime::GgufValueType::String,
                     tokens)) {
    out << "tokenizer: none in the file\n";
    return text;
  }
  out << "tokenizer: " << model
      << (model == "llama" ? " (SentencePiece)" : " (byte-level BPE)") << ", "
      << tokens->size() << " tokens";
  if (file.getString("tokenizer.ggml.pre", pre))
    out << ", pre-tokenizer " << pre;
  for (const char *special : {"bos", "eos", "eot"}) {
    int64_t id;
    const std::string key =
        std::string("tokenizer.ggml.") + special + "_token_id";
    if (file.getInteger(key, id) && id >= 0 && size_t(id) < tokens->size())
      out << ", " << llvm::StringRef(special).upper() << " " << id << " '"
          << (*tokens)[size_t(id)].string << "'";
  }
  std::string chatTemplate;
  out << (file.getString("tokenizer.chat_template", chatTemplate)
              ? ", chat template"
              : ", no chat template")
      << "\n";
  return text;
}

OwningOpRef<ModuleOp> importGguf(const std::string &path,
                                 llvm::SourceMgr &sourceMgr,
                                 MLIRContext &context,
                                 const ImportOptions &options,
                                 std::string &error) {
  GgufFile file;
  if (Status s = GgufFile::open(path, file); !s) {
    error = s.message();
    return nullptr;
  }
  llvm::Expected<llvm::json::Object> config = ggufConfig(file);
  if (!config) {
    error = llvm::toString(config.takeError());
    return nullptr;
  }
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(*config)));
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          text, path + " (its metadata as config.json)"),
      llvm::SMLoc());
  ImportOptions named = options;
  if (named.modelName.empty())
    named.modelName = modelNameOf(path);
  OwningOpRef<ModuleOp> module =
      importJsonDescription(sourceMgr, context, named);
  if (!module)
    return nullptr;
  // The model's weights: those of most of the blocks' (ggufConfig checked
  // the rest can run beside them), quantized ones as stored; floats in
  // the dtype the config's torch_dtype gave.
  const GgmlType blocks = *mainLinearType(file);
  auto model = *module->getOps<mlir::attn::ModelOp>().begin();
  if (!floatType(blocks)) {
    const KernelWeights main = kernelWeights(blocks);
    setWeights(model, mlirType(context, main.type), main.group, std::nullopt,
               withMins(blocks));
  }
  // Each projection stored in another type runs as stored, in a kernel of
  // its own (blk.<i> is the i-th attention layer and the i-th FFN).
  const mlir::attn::WeightsAttr modelWeights =
      model.projectionWeights(mlir::attn::WeightsAttr());
  auto own = [&](int block, const char *role) -> mlir::attn::WeightsAttr {
    const std::string stem = "blk." + std::to_string(block) + ".";
    const GgufTensor *tensor = file.tensor(stem + role);
    // Phi-3's Q, K and V: rows of one tensor.
    if (!tensor && llvm::is_contained({llvm::StringRef("attn_q.weight"),
                                       llvm::StringRef("attn_k.weight"),
                                       llvm::StringRef("attn_v.weight")},
                                      llvm::StringRef(role)))
      tensor = file.tensor(stem + "attn_qkv.weight");
    if (!tensor)
      return {};
    const KernelWeights stored = kernelWeights(tensor->type);
    auto weights = mlir::attn::WeightsAttr::get(
        &context, mlirType(context, stored.type), stored.group);
    return weights == modelWeights ? mlir::attn::WeightsAttr() : weights;
  };
  int layers = 0, ffns = 0;
  for (Operation &op : model.getBody().front()) {
    if (auto layer = dyn_cast<mlir::attn::AttentionLayerOp>(op)) {
      layer.setQueryWeightsAttr(own(layers, "attn_q.weight"));
      layer.setKeyWeightsAttr(own(layers, "attn_k.weight"));
      layer.setValueWeightsAttr(own(layers, "attn_v.weight"));
      layer.setOutputWeightsAttr(own(layers, "attn_output.weight"));
      layers++;
    } else if (auto ffn = dyn_cast<mlir::attn::FfnOp>(op)) {
      ffn.setUpWeightsAttr(own(ffns, "ffn_up.weight"));
      ffn.setDownWeightsAttr(own(ffns, "ffn_down.weight"));
      ffns++;
    }
  }
  // A head stored in floats, Q8_0, Q5_0 or Q6_K beside blocks of another type
  // runs as stored.
  const GgmlType head = headTensor(file)->type;
  if (head != blocks) {
    if (std::optional<::attn::DType> type = floatType(head))
      setHeadWeights(model, mlirType(context, *type));
    else if (ggmlInt8Group(head) && blocks != GgmlType::F32)
      setHeadWeights(model, IntegerType::get(&context, 8),
                     uint64_t(ggmlInt8Group(head)));
  }
  return module;
}

} // namespace attnc
