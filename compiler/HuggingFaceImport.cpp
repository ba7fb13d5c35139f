//===- HuggingFaceImport.cpp - config.json to attn IR ---------------------===//
//
// Hugging Face configs carry dozens of keys attnc has no use for
// (tokenizer ids, dropout, initializer ranges), so unknown keys are ignored
// here, unlike in the native format. The KV cache is not part of a config:
// it is paged (16-token pages), f32, max_position_embeddings long, unless
// attnc's --kv-* options say otherwise.
//
//===----------------------------------------------------------------------===//

#include "HuggingFaceImport.h"
#include "ModelBuilder.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
namespace json = llvm::json;

namespace attnc {
namespace {

constexpr int64_t kMaxInt = int64_t(1) << 30;

/// Reads keys of a config without rejecting the ones it does not ask for.
struct ConfigReader : JsonObjectReader {
  using JsonObjectReader::JsonObjectReader;
  /// A key that may be JSON null (meaning "not set").
  bool isNull(llvm::StringRef key, const json::Object &object) const {
    const json::Value *value = object.get(key);
    return value && value->getAsNull();
  }
};

/// A Hugging Face activation (transformers' ACT2FN names that attnc
/// computes) as the dialect's activation.
std::optional<Activation> readActivation(ConfigReader &config,
                                         llvm::StringRef key,
                                         llvm::StringRef fallback) {
  llvm::StringRef name = config.optionalEnum(
      key, {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "swish", "silu"},
      fallback);
  if (!config.ok())
    return std::nullopt;
  return llvm::StringSwitch<Activation>(name)
      .Case("gelu", Activation::Gelu)
      .Cases("gelu_new", "gelu_pytorch_tanh", Activation::GeluTanh)
      .Case("relu", Activation::Relu)
      .Default(Activation::Silu);
}

/// The checkpoint's dtype (torch_dtype), which the linear kernels read
/// unless --weight-dtype says otherwise; f32 for other dtypes (float64).
Type weightDtype(ConfigReader &config, MLIRContext &context) {
  std::optional<llvm::StringRef> dtype = config.optionalString("torch_dtype");
  Builder b(&context);
  if (dtype == "bfloat16")
    return b.getBF16Type();
  if (dtype == "float16")
    return b.getF16Type();
  return b.getF32Type();
}

/// A checkpoint whose linear weights are int4 already (quantization_config:
/// GPTQ or AWQ, 4 bits in groups of 32, 64 or 128): read as that format
/// packs them, scales and zero points included (Int4Weights.h).
struct QuantizedWeights {
  ::attn::Int4Format format;
  int64_t group;
  /// Or gpt-oss's: the experts MXFP4 (quant_method mxfp4), every other
  /// tensor in floats.
  bool mxfp4Experts = false;
};

/// Reads `quantization_config`: every key that changes the math is honoured
/// or refused at its key (bits, group_size, GPTQ's checkpoint_format and
/// lm_head, AWQ's version, zero_point and modules_to_not_convert; GPTQ's
/// desc_act and static_groups show in g_idx, which the runtime checks).
/// Keys of the quantization run itself (damp_percent, true_sequential,
/// dataset, ...) and kernel choices (use_exllama) change nothing here.
/// False after an error.
bool readQuantization(ConfigReader &config, const JsonLocator &locator,
                      std::optional<QuantizedWeights> &result) {
  JsonPath path;
  const json::Object *object =
      config.getObject("quantization_config", false, path);
  if (!object)
    return config.ok();
  ConfigReader q(*object, path, locator);
  std::optional<llvm::StringRef> method = q.requiredString("quant_method");
  if (!method)
    return false;
  // The modules the config leaves in floats (absent or null: none); an
  // entry that is not a string reads as "".
  auto eachUnconverted = [&](llvm::function_ref<void(llvm::StringRef)> onModule) {
    JsonPath skipPath;
    if (const json::Array *skipped =
            config.isNull("modules_to_not_convert", *object)
                ? nullptr
                : q.getArray("modules_to_not_convert", false, skipPath))
      for (const json::Value &module : *skipped)
        onModule(module.getAsString().value_or(""));
  };
  // gpt-oss as published: its experts' gate_up_proj and down_proj in MXFP4
  // (_blocks, _scales), read as they are; the modules the config leaves
  // unconverted (attention, routers, embeddings, head) in floats. A list
  // that names the experts contradicts the tensors: refused.
  if (*method == "mxfp4") {
    eachUnconverted([&](llvm::StringRef module) {
      if (module.empty() || module.contains("experts"))
        q.error("modules_to_not_convert",
                "an MXFP4 gpt-oss checkpoint's experts are MXFP4; "
                "modules_to_not_convert may name the attention, routers, "
                "embeddings and head only");
    });
    if (!q.ok() || !config.ok())
      return false;
    result = QuantizedWeights{::attn::Int4Format::Gptq, 0, true};
    return true;
  }
  if (*method != "gptq" && *method != "awq") {
    q.error("quant_method",
            "checkpoints quantized by '" + *method +
                "' are not read: attnc reads GPTQ and AWQ int4 checkpoints "
                "(and gpt-oss's MXFP4 experts); give it the float checkpoint "
                "and --weight-dtype=int8 or int4 (it quantizes at load)");
    return false;
  }
  std::optional<int64_t> bits = q.getInt("bits", true, 1, 64);
  if (bits && *bits != 4)
    q.error("bits", llvm::Twine(*bits) + "-bit weights are not read: attnc "
                                         "reads 4-bit GPTQ and AWQ");
  std::optional<int64_t> group = q.getInt("group_size", true, -1, kMaxInt);
  if (group && !::attn::isInt4Group(*group))
    q.error("group_size", llvm::Twine("group_size must be ") +
                              ::attn::kInt4Groups + ", got " +
                              llvm::Twine(*group));
  ::attn::Int4Format format = ::attn::Int4Format::Awq;
  if (*method == "gptq") {
    const char *gptq = ::attn::int4FormatName(::attn::Int4Format::Gptq),
               *gptqV2 = ::attn::int4FormatName(::attn::Int4Format::GptqV2);
    format = q.optionalEnum("checkpoint_format", {gptq, gptqV2}, gptq) ==
                     gptqV2
                 ? ::attn::Int4Format::GptqV2
                 : ::attn::Int4Format::Gptq;
    q.optionalBool("desc_act");
    q.optionalBool("sym"); // asymmetric or not: the zero points say
    if (q.optionalBool("lm_head").value_or(false))
      q.error("lm_head", "a GPTQ-quantized output head is not read yet");
  } else {
    q.optionalEnum("version", {"gemm"}, "gemm");
    if (!q.optionalBool("zero_point").value_or(true))
      q.error("zero_point", "AWQ without zero points is not read");
    eachUnconverted([&](llvm::StringRef module) {
      if (module != "lm_head")
        q.error("modules_to_not_convert",
                "modules left unquantized (besides lm_head) are not read");
    });
  }
  if (!q.ok() || !config.ok())
    return false;
  result = QuantizedWeights{format, *group};
  return true;
}

/// Whether attention layers of `headDim` channels take bf16 products when
/// --attention-compute does not say: for a bf16 or f16 checkpoint (whose
/// weights are 16-bit already), head sizes bf16 pairs can split. The
/// kernels use them where the CPU has bf16 dot products (AMX, AVX512-BF16)
/// and fp32 elsewhere (HalideBackend.cpp).
bool bf16ComputeFor(ConfigReader &config, MLIRContext &context,
                    int64_t headDim, const ImportOptions &options) {
  if (options.bf16Compute)
    return *options.bf16Compute;
  return weightDtype(config, context).getIntOrFloatBitWidth() == 16 &&
         headDim % 2 == 0;
}

/// transformers' layer_types (one entry per layer, "full_attention" or
/// "sliding_attention"): which layers slide, into `sliding`. False after an
/// error at the key.
bool readLayerTypes(ConfigReader &config, int64_t layers,
                    std::vector<bool> &sliding) {
  JsonPath path;
  const json::Array *types = config.getArray("layer_types", false, path);
  if (!types)
    return config.ok();
  if (int64_t(types->size()) != layers) {
    config.error("layer_types", "layer_types lists " +
                                    llvm::Twine(types->size()) +
                                    " layers, num_hidden_layers is " +
                                    llvm::Twine(layers));
    return false;
  }
  for (const json::Value &type : *types) {
    std::optional<llvm::StringRef> name = type.getAsString();
    if (name != "full_attention" && name != "sliding_attention") {
      config.error("layer_types",
                   "layer_types entries must be \"full_attention\" or "
                   "\"sliding_attention\"");
      return false;
    }
    sliding.push_back(*name == "sliding_attention");
  }
  return true;
}

/// What sets one decoder family importDecoderOnly reads apart from
/// Llama's, as transformers' config class and modeling file for it do: one
/// row per model_type.
struct DecoderFamily {
  llvm::StringRef modelType, weightNaming;
  /// How `sliding_window` applies: ignored (transformers' Llama, OLMo 2,
  /// GPT-2 have none), to every layer (Mistral, Phi-3), or Qwen's way:
  /// only with use_sliding_window, from max_window_layers on, or as
  /// layer_types says; or gpt-oss's: on the layers layer_types calls
  /// sliding_attention, or every other layer from the first where it lists
  /// none.
  enum class Window { Ignored, Every, Qwen, LayerTypes } window;
  bool qkvBiases; ///< Q/K/V biases and none on o_proj (Qwen2)
  std::optional<mlir::attn::QkNormScope> qkNorm; ///< with rms_norm_eps
  double rmsEps;        ///< rms_norm_eps when the config leaves it out
  bool partialRotary;   ///< partial_rotary_factor honoured (else refused)
  bool outputNormsOnly; ///< OLMo 2: each sublayer's output normalized, then
                        ///< added; no norm before a sublayer
  /// Which FFNs are mixtures of experts, and the keys that say so: none;
  /// Mixtral's (every layer: num_local_experts, num_experts_per_tok, the
  /// chosen weights renormalized); Qwen3-MoE's (num_experts,
  /// num_experts_per_tok, moe_intermediate_size, norm_topk_prob, and
  /// decoder_sparse_step and mlp_only_layers choosing the sparse layers);
  /// Qwen2-MoE's (Qwen3-MoE's keys, with other defaults, and a shared
  /// expert of shared_expert_intermediate_size behind a sigmoid gate);
  /// DeepSeek's (n_routed_experts from first_k_dense_replace on, every
  /// moe_layer_freq-th layer; topk_method and scoring_func choosing the
  /// router's rule; n_shared_experts as one shared FFN); gpt-oss's (every
  /// layer: num_local_experts, num_experts_per_tok, the router and experts
  /// with biases, swiglu_alpha and swiglu_limit's clamped product).
  enum class Moe { None, Mixtral, Qwen, Qwen2, DeepSeek, GptOss } moe = Moe::None;
  /// DeepSeek's multi-head latent attention (#attn.latent).
  bool latent = false;
  /// gpt-oss's: a learned sink logit per query head, attention_bias true,
  /// rope_theta 150000 and YaRN (factor 32 over 4096 positions, betas 32
  /// and 1, not truncated) where the config leaves them out.
  bool sinks = false, attentionBias = false;
  double ropeTheta = 10000.0;
  bool defaultYarn = false;
};

using mlir::attn::QkNormScope;
using Window = DecoderFamily::Window;
// clang-format off
const DecoderFamily kDecoderFamilies[] = {
    // type     naming   sliding_window   Q/K/V   QK-norm                  eps   partial output
    //                                    biases                                 rotary  norms only
    {"llama",   "llama", Window::Ignored, false, {},                      1e-6, false,  false},
    {"mistral", "llama", Window::Every,   false, {},                      1e-6, false,  false},
    {"qwen2",   "llama", Window::Qwen,    true,  {},                      1e-6, false,  false},
    {"qwen3",   "llama", Window::Qwen,    false, QkNormScope::Head,       1e-6, false,  false},
    {"phi3",    "phi3",  Window::Every,   false, {},                      1e-6, true,   false},
    // OLMo 2's output norms are named as Gemma's.
    {"olmo2",   "gemma", Window::Ignored, false, QkNormScope::Projection, 1e-5, false,  true},
    {"gpt2",    "gpt2",  Window::Ignored, false, {},                      1e-5, false,  false},
    {"mixtral", "mixtral", Window::Every, false, {},                      1e-5, false,  false, DecoderFamily::Moe::Mixtral},
    {"qwen3_moe", "llama", Window::Qwen,  false, QkNormScope::Head,       1e-6, false,  false, DecoderFamily::Moe::Qwen},
    {"qwen2_moe", "llama", Window::Qwen,  true,  {},                      1e-6, false,  false, DecoderFamily::Moe::Qwen2},
    {"deepseek_v2", "deepseek", Window::Ignored, false, {},               1e-6, false,  false, DecoderFamily::Moe::DeepSeek, true},
    {"deepseek_v3", "deepseek", Window::Ignored, false, {},               1e-6, false,  false, DecoderFamily::Moe::DeepSeek, true},
    {"gpt_oss", "gpt_oss", Window::LayerTypes, false, {},                 1e-5, false,  false, DecoderFamily::Moe::GptOss, false, true, true, 150000.0, true},
};
// clang-format on

const DecoderFamily *decoderFamily(llvm::StringRef type) {
  for (const DecoderFamily &family : kDecoderFamilies)
    if (family.modelType == type)
      return &family;
  return nullptr;
}

OwningOpRef<ModuleOp>
importDecoderOnly(ConfigReader &config, const json::Object &root,
                  const DecoderFamily &family, const JsonLocator &locator,
                  MLIRContext &context, const ImportOptions &options,
                  llvm::StringRef name,
                  const std::optional<QuantizedWeights> &quantized) {
  const llvm::StringRef type = family.modelType;
  const bool gpt2 = type == "gpt2";
  const bool qwen = family.window == Window::Qwen;
  const bool outputNormsOnly = family.outputNormsOnly;
  std::optional<int64_t> hidden =
      config.getInt(gpt2 ? "n_embd" : "hidden_size", true, 1, kMaxInt);
  std::optional<int64_t> heads =
      config.getInt(gpt2 ? "n_head" : "num_attention_heads", true, 1, kMaxInt);
  std::optional<int64_t> layers =
      config.getInt(gpt2 ? "n_layer" : "num_hidden_layers", true, 1, 4096);
  std::optional<int64_t> positions = config.getInt(
      gpt2 ? "n_positions" : "max_position_embeddings", true, 1, kMaxInt);
  if (!hidden || !heads || !layers || !positions)
    return nullptr;

  LayerConfig layer;
  int64_t firstWindowedLayer = 0; // Qwen2: earlier layers attend fully
  // From layer_types, when the config lists them: which layers slide.
  std::vector<bool> slidingLayers;
  layer.queryHeads = *heads;
  layer.kvHeads = *heads;
  layer.headDim = *hidden / *heads;
  layer.mask = MaskKind::Causal;
  layer.projectionBias = gpt2; // GPT-2's c_attn and c_proj have biases
  if (!gpt2) {
    if (!config.isNull("num_key_value_heads", root))
      layer.kvHeads =
          config.getInt("num_key_value_heads", false, 1, kMaxInt, *heads)
              .value_or(0);
    if (!config.isNull("head_dim", root))
      layer.headDim =
          config.getInt("head_dim", false, 1, kMaxInt, layer.headDim)
              .value_or(0);
    layer.ropeTheta = float(
        config.optionalPositiveNumber("rope_theta").value_or(family.ropeTheta));
    JsonPath scalingPath;
    if (!config.isNull("rope_scaling", root))
      if (const json::Object *scaling =
              config.getObject("rope_scaling", false, scalingPath)) {
        layer.ropeScaling =
            jsonToDictionary(*scaling, scalingPath, locator, context);
        if (!layer.ropeScaling)
          return nullptr;
        // transformers' yarn: the pretrained context is the config's
        // max_position_embeddings unless the rule names its own; its
        // dynamic NTK always takes max_position_embeddings.
        StringRef rule = ropeScalingType(layer.ropeScaling);
        if ((rule == "yarn" &&
             !layer.ropeScaling.get("original_max_position_embeddings")) ||
            rule == "dynamic") {
          NamedAttrList entries(layer.ropeScaling);
          entries.set("original_max_position_embeddings",
                      Builder(&context).getI64IntegerAttr(*positions));
          layer.ropeScaling = entries.getDictionary(&context);
        }
        // LongRoPE (Phi-3.5, Phi-4-mini), as transformers reads it: the
        // pretrained context is the config's original_max_position_
        // embeddings (else max_position_embeddings), and where the config
        // names it the factor is max_position_embeddings over it.
        if (rule == "longrope") {
          Builder b(&context);
          NamedAttrList entries(layer.ropeScaling);
          if (std::optional<int64_t> original = config.getInt(
                  "original_max_position_embeddings", false, 1, kMaxInt)) {
            entries.set("original_max_position_embeddings",
                        b.getI64IntegerAttr(*original));
            entries.set("factor", b.getF32FloatAttr(float(
                                      double(*positions) / double(*original))));
          } else if (config.ok()) {
            entries.set("original_max_position_embeddings",
                        b.getI64IntegerAttr(*positions));
          }
          layer.ropeScaling = entries.getDictionary(&context);
        }
        if (std::string problem = ropeScalingProblem(layer.ropeScaling);
            !problem.empty()) {
          emitError(locator.at(scalingPath)) << problem;
          return nullptr;
        }
      }
    // GptOssConfig's rule where the config gives none (absent or null).
    if (family.defaultYarn && !layer.ropeScaling && config.ok()) {
      Builder b(&context);
      layer.ropeScaling = b.getDictionaryAttr(
          {b.getNamedAttr("rope_type", b.getStringAttr("yarn")),
           b.getNamedAttr("factor", b.getF32FloatAttr(32.0f)),
           b.getNamedAttr("beta_fast", b.getF32FloatAttr(32.0f)),
           b.getNamedAttr("beta_slow", b.getF32FloatAttr(1.0f)),
           b.getNamedAttr("truncate", b.getBoolAttr(false)),
           b.getNamedAttr("original_max_position_embeddings",
                          b.getI64IntegerAttr(4096))});
    }
    // Qwen2 always has Q/K/V biases and none on o_proj; Llama and Mistral
    // say so explicitly, for all four.
    // Qwen3: attention_bias for all four, as Llama.
    layer.projectionBias =
        family.qkvBiases ||
        config.optionalBool("attention_bias").value_or(family.attentionBias);
    layer.sinks = family.sinks;
    if (family.qkvBiases)
      layer.outputBias = false;
    // Mistral: sliding_window (int or null); Qwen2 and Qwen3: only with
    // use_sliding_window, and then only from layer max_window_layers on,
    // or on the layers layer_types calls sliding_attention where the config
    // lists them (transformers >= 4.53, which takes the list over the
    // older keys). transformers' Llama and OLMo 2 have no window: the key
    // is ignored there, as it is.
    bool windowed =
        !config.isNull("sliding_window", root) &&
        family.window != Window::Ignored &&
        (!qwen || config.optionalBool("use_sliding_window").value_or(false));
    if (windowed) {
      layer.window = config.getInt("sliding_window", false, 1, kMaxInt);
      if (layer.window)
        layer.mask = MaskKind::SlidingWindow;
      if (qwen)
        firstWindowedLayer =
            config.getInt("max_window_layers", false, 0, 4096, 28).value_or(0);
    }
    const bool layerTypes = family.window == Window::LayerTypes;
    if ((qwen || layerTypes) && !config.isNull("layer_types", root) &&
        !readLayerTypes(config, *layers, slidingLayers))
      return nullptr;
    // GptOssConfig's default pattern: layers 0, 2, 4, ... slide.
    if (layerTypes && slidingLayers.empty())
      for (int64_t i = 0; i < *layers; i++)
        slidingLayers.push_back(i % 2 == 0);
    // Phi-3's partial rotary: the first int(head_dim · factor) channels of
    // each head rotate (transformers' Phi3Attention). The Llama family's
    // attention rotates every channel whatever the key says: refused there.
    if (std::optional<double> partial =
            config.optionalPositiveNumber("partial_rotary_factor");
        partial && *partial != 1.0) {
      const int64_t rotary = int64_t(double(layer.headDim) * *partial);
      if (!family.partialRotary)
        config.error("partial_rotary_factor",
                     "attnc rotates every channel of a " + type.str() +
                         " head; partial_rotary_factor other than 1 is "
                         "supported for phi3");
      else if (*partial > 1.0 || rotary < 2 || rotary % 2 != 0)
        config.error("partial_rotary_factor",
                     "partial_rotary_factor must leave an even number of "
                     "rotating channels, at most head_dim (" +
                         llvm::Twine(layer.headDim) + "), got " +
                         llvm::Twine(rotary));
      else
        layer.ropeDim = rotary;
    }
  }
  // The rest of a block. Llama family: RMS norms, a SiLU-gated MLP, the
  // output head. GPT-2: layer norms, a GELU (tanh) MLP of n_inner (default
  // 4·n_embd) with biases, learned positions, the head tied to wte.
  std::optional<int64_t> vocabulary, intermediate;
  float rmsEps = 1e-6f;
  bool mlpBias = false, scaleByLayer = false, tied = false;
  std::optional<Activation> activation;
  if (gpt2) {
    vocabulary = config.getInt("vocab_size", true, 1, kMaxInt);
    intermediate = *hidden * 4;
    if (!config.isNull("n_inner", root))
      intermediate = config.getInt("n_inner", false, 1, kMaxInt, *intermediate);
    rmsEps = float(config.optionalPositiveNumber("layer_norm_epsilon")
                       .value_or(family.rmsEps));
    activation = readActivation(config, "activation_function", "gelu_new");
    // GPT2Attention: scores / sqrt(head_dim) unless scale_attn_weights is
    // false, and also / (layer index + 1) with
    // scale_attn_by_inverse_layer_idx.
    if (!config.optionalBool("scale_attn_weights").value_or(true))
      layer.scale = 1.0f;
    scaleByLayer =
        config.optionalBool("scale_attn_by_inverse_layer_idx").value_or(false);
  } else {
    vocabulary = config.getInt("vocab_size", true, 1, kMaxInt);
    intermediate = config.getInt("intermediate_size", true, 1, kMaxInt);
    // The config classes' defaults: Olmo2Config's 1e-5, the others' 1e-6.
    rmsEps = float(
        config.optionalPositiveNumber("rms_norm_eps").value_or(family.rmsEps));
    mlpBias = config.optionalBool("mlp_bias").value_or(false);
    // gpt-oss's experts compute their own product whatever hidden_act says
    // (GptOssExperts never reads it): not read there.
    activation = family.moe == DecoderFamily::Moe::GptOss
                     ? Activation::Silu
                     : readActivation(config, "hidden_act", "silu");
    tied = config.optionalBool("tie_word_embeddings").value_or(false);
    // Qwen3's q_norm and k_norm: RMS norms of each head, rms_norm_eps.
    if (family.qkNorm)
      layer.qkNorm = makeQkNorm(context, *family.qkNorm, rmsEps);
    // OLMo (1)'s clamp of Q, K and V, which Olmo2Config drops: a config
    // that still sets it asks for math attnc does not do.
    if (type == "olmo2" && !config.isNull("clip_qkv", root) &&
        config.has("clip_qkv"))
      config.error("clip_qkv", "attnc does not clamp Q, K and V (OLMo 1's "
                               "clip_qkv); OLMo 2 has no clip_qkv");
  }
  // DeepSeek's multi-head latent attention: one key head of the cache rows
  // [rotated shared key, latent], the logits scaled over the query's nope +
  // rope channels, times YaRN's mscale(factor, mscale_all_dim)² where the
  // config scales RoPE so (DeepseekV3Attention); the config classes'
  // defaults where a key is left out.
  if (family.latent) {
    std::optional<int64_t> rank =
        config.getInt("kv_lora_rank", false, 1, kMaxInt, 512);
    std::optional<int64_t> rope =
        config.getInt("qk_rope_head_dim", false, 1, kMaxInt, 64);
    std::optional<int64_t> nope =
        config.getInt("qk_nope_head_dim", false, 1, kMaxInt, 128);
    std::optional<int64_t> value =
        config.getInt("v_head_dim", false, 1, kMaxInt, 128);
    std::optional<int64_t> queryRank = 0;
    if (!config.isNull("q_lora_rank", root))
      queryRank = config.getInt("q_lora_rank", false, 1, kMaxInt, 1536);
    if (!config.optionalBool("rope_interleave").value_or(true))
      config.error("rope_interleave",
                   "attnc reads DeepSeek's RoPE channels as interleaved "
                   "pairs, as its checkpoints store them; rope_interleave "
                   "false is not supported");
    if (layer.projectionBias)
      config.error("attention_bias", "attnc's latent attention has no "
                                     "projection biases; attention_bias "
                                     "true is not supported");
    if (!config.ok() || !rank || !rope || !nope || !value || !queryRank)
      return nullptr;
    layer.latent = makeLatent(context,
                              locator.at(JsonPath{std::string("kv_lora_rank")}),
                              *rank, *rope, *nope, *value, *queryRank, rmsEps);
    if (!layer.latent)
      return nullptr;
    layer.kvHeads = 1;
    layer.headDim = *rope + *rank;
    double scale = 1.0 / std::sqrt(double(*nope + *rope));
    if (layer.ropeScaling && ropeScalingType(layer.ropeScaling) == "yarn") {
      const double factor = *ropeScalingNumber(layer.ropeScaling, "factor");
      if (std::optional<double> all =
              ropeScalingNumber(layer.ropeScaling, "mscale_all_dim");
          all && *all != 0 && factor > 1) {
        const double mscale = 0.1 * *all * std::log(factor) + 1.0;
        scale *= mscale * mscale;
      }
    }
    layer.scale = float(scale);
  }
  // A mixture of experts: which layers, how many experts, how many a token
  // runs (the config classes' defaults where a key is left out).
  using Moe = DecoderFamily::Moe;
  mlir::attn::RouterKind router = mlir::attn::RouterKind::SoftmaxTopK;
  ExpertRouting routing;
  std::optional<int64_t> expertCount, expertsPerToken, expertSize,
      sharedSize = 0;
  bool normalizeExperts = true, expertBiases = false;
  FfnForm form; // gpt-oss's product and MXFP4 experts
  std::vector<bool> sparseLayers(size_t(*layers), family.moe != Moe::None);
  if (family.moe == Moe::Mixtral) {
    expertCount = config.getInt("num_local_experts", false, 2, 4096, 8);
    expertsPerToken = config.getInt("num_experts_per_tok", false, 1, 4096, 2);
    expertSize = intermediate;
  } else if (family.moe == Moe::GptOss) {
    // GptOssConfig's defaults (gpt-oss-120b's count). The router's top-k
    // logits through a softmax: the softmax over all of them, renormalized
    // over the chosen.
    expertCount = config.getInt("num_local_experts", false, 2, 4096, 128);
    expertsPerToken = config.getInt("num_experts_per_tok", false, 1, 4096, 4);
    expertSize = intermediate;
    expertBiases = true;
    form.swigluAlpha =
        float(config.optionalPositiveNumber("swiglu_alpha").value_or(1.702));
    form.swigluLimit =
        float(config.optionalPositiveNumber("swiglu_limit").value_or(7.0));
  } else if (family.moe == Moe::Qwen || family.moe == Moe::Qwen2) {
    // num_experts 0: every layer dense (Qwen3MoeDecoderLayer). The config
    // classes' defaults: Qwen3-30B-A3B's, Qwen1.5-MoE-A2.7B's.
    const bool qwen2 = family.moe == Moe::Qwen2;
    expertCount = config.getInt("num_experts", false, 0, 4096, qwen2 ? 60 : 128);
    expertsPerToken =
        config.getInt("num_experts_per_tok", false, 1, 4096, qwen2 ? 4 : 8);
    expertSize = config.getInt("moe_intermediate_size", false, 1, kMaxInt,
                               qwen2 ? 1408 : 768);
    if (qwen2)
      sharedSize = config.getInt("shared_expert_intermediate_size", false, 1,
                                 kMaxInt, 5632);
    normalizeExperts = config.optionalBool("norm_topk_prob").value_or(false);
    std::optional<int64_t> step =
        config.getInt("decoder_sparse_step", false, 1, 4096, 1);
    std::vector<bool> denseOnly(size_t(*layers), false);
    JsonPath onlyPath;
    if (!config.isNull("mlp_only_layers", root))
      if (const json::Array *only =
              config.getArray("mlp_only_layers", false, onlyPath))
        for (const json::Value &entry : *only) {
          std::optional<int64_t> index = entry.getAsInteger();
          if (!index || *index < 0 || *index >= *layers) {
            config.error("mlp_only_layers",
                         "mlp_only_layers must list layer indices below "
                         "num_hidden_layers (" +
                             llvm::Twine(*layers) + ")");
            break;
          }
          denseOnly[size_t(*index)] = true;
        }
    for (int64_t i = 0; i < *layers && step; i++)
      sparseLayers[size_t(i)] = !denseOnly[size_t(i)] && expertCount &&
                                *expertCount > 0 && (i + 1) % *step == 0;
  } else if (family.moe == Moe::DeepSeek) {
    // DeepseekV2Config's and DeepseekV3Config's defaults (V2-Lite's,
    // V3's); n_routed_experts null: every layer dense.
    const bool v3 = type == "deepseek_v3";
    expertCount = 0;
    if (!config.isNull("n_routed_experts", root))
      expertCount =
          config.getInt("n_routed_experts", false, 1, 4096, v3 ? 256 : 64);
    expertsPerToken =
        config.getInt("num_experts_per_tok", false, 1, 4096, v3 ? 8 : 6);
    expertSize = config.getInt("moe_intermediate_size", false, 1, kMaxInt,
                               v3 ? 2048 : 1407);
    std::optional<int64_t> sharedCount = 0;
    if (!config.isNull("n_shared_experts", root))
      sharedCount =
          config.getInt("n_shared_experts", false, 0, 4096, v3 ? 1 : 2);
    if (sharedCount && expertSize)
      sharedSize = *sharedCount * *expertSize;
    std::optional<int64_t> firstSparse =
        config.getInt("first_k_dense_replace", false, 0, 4096, v3 ? 3 : 0);
    std::optional<int64_t> frequency =
        config.getInt("moe_layer_freq", false, 1, 4096, 1);
    // The rule: V3's noaux_tc (sigmoid scores, a selection bias, groups by
    // their two best), V2's greedy and group_limited_greedy (softmax,
    // groups by their best); the weights normalized with norm_topk_prob,
    // V2's only for more than one expert a token and then not scaled.
    llvm::StringRef method = config.optionalEnum(
        "topk_method", {"greedy", "group_limited_greedy", "noaux_tc"},
        v3 ? "noaux_tc" : "greedy");
    llvm::StringRef scoring = config.optionalEnum(
        "scoring_func", {"softmax", "sigmoid"}, v3 ? "sigmoid" : "softmax");
    if (config.ok() && (method == "noaux_tc") != (scoring == "sigmoid"))
      config.error("scoring_func",
                   "attnc routes noaux_tc with sigmoid scores and greedy / "
                   "group_limited_greedy with softmax ones, as DeepSeek's "
                   "models do; topk_method " +
                       method + " with scoring_func " + scoring +
                       " is not supported");
    normalizeExperts = config.optionalBool("norm_topk_prob").value_or(v3);
    routing.scale = config.optionalPositiveNumber("routed_scaling_factor")
                        .value_or(v3 ? 2.5 : 1.0);
    if (method == "noaux_tc") {
      router = mlir::attn::RouterKind::SigmoidTopK;
    } else {
      normalizeExperts = normalizeExperts && expertsPerToken &&
                         *expertsPerToken > 1;
      if (normalizeExperts)
        routing.scale = 1.0;
    }
    if (method != "greedy") {
      if (!config.isNull("n_group", root))
        routing.groups =
            config.getInt("n_group", false, 1, 4096, v3 ? 8 : 1).value_or(1);
      if (!config.isNull("topk_group", root))
        routing.groupTopK =
            config.getInt("topk_group", false, 1, 4096, v3 ? 4 : 1).value_or(1);
    }
    for (int64_t i = 0; i < *layers && firstSparse && frequency; i++)
      sparseLayers[size_t(i)] = *expertCount > 0 && i >= *firstSparse &&
                                i % *frequency == 0;
  }
  if (family.moe != Moe::None && config.ok() && expertCount && expertsPerToken &&
      *expertCount > 0 && *expertsPerToken > *expertCount)
    config.error("num_experts_per_tok",
                 "num_experts_per_tok (" + llvm::Twine(*expertsPerToken) +
                     ") exceeds " +
                     (family.moe == Moe::Mixtral ||
                              family.moe == Moe::GptOss
                          ? "num_local_experts"
                      : family.moe == Moe::DeepSeek ? "n_routed_experts"
                                                    : "num_experts") +
                     " (" + llvm::Twine(*expertCount) + ")");
  if (!config.ok() || !activation || !sharedSize)
    return nullptr;
  // Layers point at the key that makes them what they are: the window when
  // there is one, else the layer count.
  Location loc =
      locator.at(JsonPath{std::string(layer.window ? "sliding_window"
                                      : gpt2       ? "n_layer"
                                                   : "num_hidden_layers")});
  layer.cache =
      makeKvCache(context, loc, "paged", 16, "f32", *positions, options);
  if (!layer.cache)
    return nullptr;
  // The config's window is the model's; the cache length is this
  // deployment's (--max-length). A window no shorter than the cache sees
  // every cached key: plain causal attention.
  if (layer.window && *layer.window >= layer.cache.getMaxLength()) {
    layer.window.reset();
    layer.mask = MaskKind::Causal;
  }
  layer.bf16Compute = bf16ComputeFor(config, context, layer.headDim, options);
  ModelBuilder builder(context, locator.at(JsonPath{}), name, "decoder-only",
                       *hidden, options.maxBatch.value_or(1));
  // MXFP4 experts: the experts' own type, the model's weights in floats.
  const bool mxfp4Experts = quantized && quantized->mxfp4Experts;
  if (quantized && !mxfp4Experts)
    builder.setWeightDtype(Builder(&context).getIntegerType(4),
                           quantized->group, quantized->format);
  else
    builder.setWeightDtype(weightDtype(config, context));
  if (mxfp4Experts)
    form.expertWeights = mlir::attn::Mxfp4Type::get(&context);
  builder.setWeightNaming(family.weightNaming);
  Location at = locator.at(JsonPath{});
  NormKind norm = gpt2 ? NormKind::LayerNorm : NormKind::RmsNorm;
  builder.addEmbedding("embedding", *vocabulary,
                       gpt2 ? PositionKind::Learned : PositionKind::None,
                       *positions, "", at);
  for (int64_t i = 0; i < *layers; i++) {
    const std::string index = std::to_string(i);
    if (!outputNormsOnly)
      builder.addNorm("layer" + index + "_norm", norm, rmsEps, "", at);
    LayerConfig thisLayer = layer;
    if (slidingLayers.empty() ? i < firstWindowedLayer
                              : !slidingLayers[size_t(i)]) {
      thisLayer.window.reset();
      thisLayer.mask = MaskKind::Causal;
    }
    if (scaleByLayer)
      thisLayer.scale = layer.scale.value_or(
                            float(1.0 / std::sqrt(double(layer.headDim)))) /
                        float(i + 1);
    builder.addLayer(thisLayer, loc);
    if (outputNormsOnly)
      builder.addNorm("layer" + index + "_output_norm", norm, rmsEps, "", at,
                      NormPlacement::ResidualAdd);
    std::string block = "block" + index;
    if (!outputNormsOnly)
      builder.addNorm(block + "_ffn_norm", norm, rmsEps, "", at);
    if (sparseLayers[size_t(i)])
      builder.addFfn(block + "_ffn", *activation, *expertSize, expertBiases,
                     /*gated=*/true, "", at,
                     builder.experts(router, *expertCount, *expertsPerToken,
                                     normalizeExperts, *sharedSize,
                                     /*sharedGate=*/*sharedSize > 0 &&
                                         family.moe == Moe::Qwen2,
                                     routing),
                     form);
    else
      builder.addFfn(block + "_ffn", *activation, *intermediate,
                     gpt2 || mlpBias, /*gated=*/!gpt2, "", at);
    if (outputNormsOnly)
      builder.addNorm(block + "_ffn_output_norm", norm, rmsEps, "", at,
                      NormPlacement::ResidualAdd);
  }
  builder.addNorm("final_norm", norm, rmsEps, "", at);
  // GPT-2's head is always wte (tied by its naming); the Llama family's is
  // when tie_word_embeddings says so (LlamaConfig's default: false). A GPTQ
  // or AWQ checkpoint keeps its head (or the embedding it is tied to) in
  // torch_dtype, and so does its head kernel.
  builder.addOutputHead(*vocabulary, false, at, tied, std::nullopt,
                        quantized && !mxfp4Experts ? weightDtype(config, context)
                                                   : Type());
  return builder.finish();
}

/// A number as a checkpoint of `dtype` holds it (round to nearest even):
/// transformers computes Gemma's embedding normalizer √hidden_size in the
/// hidden states' dtype.
float roundToDtype(double value, Type dtype) {
  llvm::APFloat number(value);
  bool lost = false;
  if (dtype.isBF16())
    number.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
                   &lost);
  else if (dtype.isF16())
    number.convert(llvm::APFloat::IEEEhalf(),
                   llvm::APFloat::rmNearestTiesToEven, &lost);
  number.convert(llvm::APFloat::IEEEsingle(),
                 llvm::APFloat::rmNearestTiesToEven, &lost);
  return number.convertToFloat();
}

/// Gemma 2 and Gemma 3's text stack (gemma3_text): RMS norms applied as
/// (1 + w) on each side of each sublayer, token rows scaled by
/// √hidden_size (in the checkpoint's dtype), the query scaled by
/// query_pre_attn_scalar^-½, logits of attention and of the head capped
/// (Gemma 2), sliding and global layers by their pattern or layer_types,
/// and, in Gemma 3, QK-norm and a RoPE base of the sliding layers' own
/// (rope_local_base_freq; rope_scaling applies to the global layers).
/// `multimodal`: the text_config of a gemma3 checkpoint, whose absent keys
/// take Gemma3TextConfig's defaults (a published config lists few) and
/// whose dtype may be stated beside it (`outer`).
OwningOpRef<ModuleOp> importGemma(ConfigReader &config,
                                  const json::Object &root,
                                  llvm::StringRef type,
                                  const JsonLocator &locator,
                                  MLIRContext &context,
                                  const ImportOptions &options,
                                  llvm::StringRef name,
                                  ConfigReader *outer = nullptr) {
  const bool multimodal = outer != nullptr;
  const bool gemma3 = type == "gemma3_text" || multimodal;
  // Gemma3TextConfig's defaults, for a multimodal checkpoint's text_config.
  auto size = [&](llvm::StringRef key, int64_t max, int64_t fallback) {
    return config.getInt(key, !multimodal, 1, max,
                         multimodal ? std::optional<int64_t>(fallback)
                                    : std::nullopt);
  };
  std::optional<int64_t> hidden = size("hidden_size", kMaxInt, 2304);
  std::optional<int64_t> heads = size("num_attention_heads", kMaxInt, 8);
  std::optional<int64_t> layers = size("num_hidden_layers", 4096, 26);
  std::optional<int64_t> positions =
      size("max_position_embeddings", kMaxInt, 131072);
  std::optional<int64_t> vocabulary = size("vocab_size", kMaxInt, 262208);
  std::optional<int64_t> intermediate =
      size("intermediate_size", kMaxInt, 9216);
  if (!hidden || !heads || !layers || !positions || !vocabulary ||
      !intermediate)
    return nullptr;
  LayerConfig layer;
  layer.queryHeads = *heads;
  layer.kvHeads = config
                      .getInt("num_key_value_heads", false, 1, kMaxInt,
                              multimodal ? 4 : *heads)
                      .value_or(0);
  layer.headDim = config.getInt("head_dim", false, 1, kMaxInt, 256).value_or(0);
  layer.mask = MaskKind::Causal;
  layer.projectionBias = config.optionalBool("attention_bias").value_or(false);
  const double queryScalar =
      config.optionalPositiveNumber("query_pre_attn_scalar").value_or(256.0);
  layer.scale = float(1.0 / std::sqrt(queryScalar));
  // The caps: Gemma2Config's defaults (50 and 30) where a key is absent,
  // none where it is null (and none by default in Gemma 3).
  auto cap = [&](llvm::StringRef key,
                 std::optional<double> fallback) -> std::optional<float> {
    if (config.isNull(key, root))
      return std::nullopt;
    std::optional<double> value = config.optionalPositiveNumber(key);
    if (!value && !config.has(key))
      value = fallback;
    return value ? std::optional<float>(float(*value)) : std::nullopt;
  };
  layer.softcap = cap("attn_logit_softcapping",
                      gemma3 ? std::nullopt : std::optional<double>(50.0));
  std::optional<float> headCap =
      cap("final_logit_softcapping",
          gemma3 ? std::nullopt : std::optional<double>(30.0));
  const float rmsEps =
      float(config.optionalPositiveNumber("rms_norm_eps").value_or(1e-6));
  std::optional<Activation> activation =
      readActivation(config, "hidden_activation", "gelu_pytorch_tanh");
  const bool tied = config.optionalBool("tie_word_embeddings").value_or(true);
  if (gemma3 && config.optionalBool("use_bidirectional_attention")
                    .value_or(false))
    config.error("use_bidirectional_attention",
                 "bidirectional Gemma 3 (an embedding model) is not "
                 "supported: attnc runs Gemma 3 as a causal decoder");
  // RoPE: Gemma 2's one base for all layers; Gemma 3's global layers take
  // rope_theta and rope_scaling, its sliding layers rope_local_base_freq
  // without scaling.
  const float globalTheta = float(
      config.optionalPositiveNumber("rope_theta")
          .value_or(gemma3 ? 1000000.0 : 10000.0));
  const float localTheta =
      gemma3 ? float(config.optionalPositiveNumber("rope_local_base_freq")
                         .value_or(10000.0))
             : globalTheta;
  DictionaryAttr globalScaling;
  JsonPath scalingPath;
  if (!config.isNull("rope_scaling", root))
    if (const json::Object *scaling =
            config.getObject("rope_scaling", false, scalingPath)) {
      globalScaling = jsonToDictionary(*scaling, scalingPath, locator, context);
      if (!globalScaling)
        return nullptr;
      if (std::string problem = ropeScalingProblem(globalScaling);
          !problem.empty()) {
        emitError(locator.at(scalingPath)) << problem;
        return nullptr;
      }
    }
  std::optional<int64_t> window; // the config classes' default: 4096
  if (!config.isNull("sliding_window", root))
    window = config.getInt("sliding_window", false, 1, kMaxInt, 4096);
  // Which layers slide: layer_types where the config lists them, else
  // Gemma 2's alternation (even layers) or Gemma 3's pattern (all but
  // every sliding_window_pattern-th).
  std::vector<bool> sliding;
  if (!config.isNull("layer_types", root) &&
      !readLayerTypes(config, *layers, sliding))
    return nullptr;
  if (sliding.empty()) {
    const int64_t pattern =
        gemma3 ? config.getInt("sliding_window_pattern", false, 1, 4096, 6)
                     .value_or(6)
               : 2;
    for (int64_t i = 0; i < *layers; i++)
      sliding.push_back(gemma3 ? (i + 1) % pattern != 0 : i % 2 == 0);
  }
  if (!config.ok() || !activation)
    return nullptr;
  Location loc = locator.at(JsonPath{std::string("num_hidden_layers")});
  layer.cache =
      makeKvCache(context, loc, "paged", 16, "f32", *positions, options);
  if (!layer.cache)
    return nullptr;
  // The checkpoint's dtype: text_config's, else the one stated beside it.
  ConfigReader &dtypeConfig =
      multimodal && !config.has("torch_dtype") ? *outer : config;
  layer.bf16Compute =
      bf16ComputeFor(dtypeConfig, context, layer.headDim, options);
  if (gemma3)
    layer.qkNorm = makeQkNorm(context, mlir::attn::QkNormScope::Head, rmsEps);
  const Type dtype = weightDtype(dtypeConfig, context);
  ModelBuilder builder(context, locator.at(JsonPath{}), name, "decoder-only",
                       *hidden, options.maxBatch.value_or(1));
  builder.setWeightDtype(dtype);
  builder.setWeightNaming(multimodal ? "gemma3" : "gemma");
  builder.setNormWeightOffset(1.0f);
  Location at = locator.at(JsonPath{});
  builder.addEmbedding("embedding", *vocabulary, PositionKind::None,
                       *positions, "", at,
                       roundToDtype(std::sqrt(double(*hidden)), dtype));
  for (int64_t i = 0; i < *layers; i++) {
    LayerConfig thisLayer = layer;
    const bool slides = sliding[size_t(i)];
    // A window no shorter than the cache sees every cached key.
    if (slides && window && *window < layer.cache.getMaxLength()) {
      thisLayer.window = window;
      thisLayer.mask = MaskKind::SlidingWindow;
    }
    thisLayer.ropeTheta = slides ? localTheta : globalTheta;
    if (!slides || !gemma3)
      thisLayer.ropeScaling = globalScaling;
    const std::string index = std::to_string(i);
    builder.addNorm("layer" + index + "_norm", NormKind::RmsNorm, rmsEps, "",
                    at);
    builder.addLayer(thisLayer, loc);
    builder.addNorm("layer" + index + "_output_norm", NormKind::RmsNorm, rmsEps,
                    "", at, NormPlacement::ResidualAdd);
    builder.addNorm("block" + index + "_ffn_norm", NormKind::RmsNorm, rmsEps,
                    "", at);
    builder.addFfn("block" + index + "_ffn", *activation, *intermediate,
                   /*bias=*/false, /*gated=*/true, "", at);
    builder.addNorm("block" + index + "_ffn_output_norm", NormKind::RmsNorm,
                    rmsEps, "", at, NormPlacement::ResidualAdd);
  }
  builder.addNorm("final_norm", NormKind::RmsNorm, rmsEps, "", at);
  builder.addOutputHead(*vocabulary, false, at, tied, headCap);
  return builder.finish();
}

/// Marian and BART: post-norm encoder and decoder stacks (attention, then
/// its layer norm; FFN, then its layer norm), positions (BART's learned
/// table starts 2 rows in; Marian's static sinusoids, sin in the first half
/// of the channels, are computed),
/// token rows scaled by √d_model with scale_embedding, BART's
/// layernorm_embedding, and an output head with a bias (final_logits_bias).
/// Keys a config leaves out take the config class's defaults, as in
/// transformers.
OwningOpRef<ModuleOp>
importEncoderDecoder(ConfigReader &config, llvm::StringRef type,
                     const JsonLocator &locator, MLIRContext &context,
                     const ImportOptions &options, llvm::StringRef name) {
  const bool bart = type == "bart";
  std::optional<int64_t> dModel = config.getInt("d_model", true, 1, kMaxInt);
  std::optional<int64_t> encoderLayers =
      config.getInt("encoder_layers", true, 1, 4096);
  std::optional<int64_t> decoderLayers =
      config.getInt("decoder_layers", true, 1, 4096);
  std::optional<int64_t> encoderHeads =
      config.getInt("encoder_attention_heads", true, 1, kMaxInt);
  std::optional<int64_t> decoderHeads =
      config.getInt("decoder_attention_heads", true, 1, kMaxInt);
  std::optional<int64_t> positions =
      config.getInt("max_position_embeddings", true, 1, kMaxInt);
  std::optional<int64_t> vocabulary =
      config.getInt("vocab_size", true, 1, kMaxInt);
  std::optional<int64_t> encoderFfn =
      config.getInt("encoder_ffn_dim", false, 1, kMaxInt, 4096);
  std::optional<int64_t> decoderFfn =
      config.getInt("decoder_ffn_dim", false, 1, kMaxInt, 4096);
  bool scaleEmbedding = config.optionalBool("scale_embedding").value_or(false);
  std::optional<Activation> activation =
      readActivation(config, "activation_function", "gelu");
  if (!config.ok() || !activation)
    return nullptr;
  // Marian may give the decoder its own vocabulary.
  std::optional<int64_t> decoderVocabulary = vocabulary;
  if (!bart)
    decoderVocabulary =
        config.getInt("decoder_vocab_size", false, 1, kMaxInt, *vocabulary);
  if (!config.ok())
    return nullptr;
  Location loc = locator.at(JsonPath{});
  ModelBuilder builder(context, loc, name, "encoder-decoder", *dModel,
                       options.maxBatch.value_or(1));
  builder.setWeightDtype(weightDtype(config, context));
  builder.setWeightNaming("bart"); // Marian's tensors are named as BART's
  const float embedScale =
      scaleEmbedding ? float(std::sqrt(double(*dModel))) : 1.0f;
  const int64_t positionOffset = bart ? 2 : 0;
  const float eps = 1e-5f; // nn.LayerNorm's default, which both use
  // Marian's positions are its frozen sinusoid table (sines in the first
  // half of the channels), computed by the kernel: checkpoints saved
  // without embed_positions load too.
  auto embedding = [&](llvm::StringRef stack, int64_t vocab) {
    builder.addEmbedding((stack + "_embedding").str(), vocab,
                         bart ? PositionKind::Learned
                              : PositionKind::SinusoidalHalves,
                         *positions, stack, loc, embedScale, positionOffset);
    if (bart)
      builder.addNorm((stack + "_embedding_norm").str(), NormKind::LayerNorm,
                      eps, stack, loc, NormPlacement::Post);
  };
  int block = 0;
  auto postNormLayer = [&](const LayerConfig &layer) {
    int index = builder.addLayer(layer, loc);
    builder.addNorm("layer" + std::to_string(index) + "_norm",
                    NormKind::LayerNorm, eps, layer.stack, loc,
                    NormPlacement::Post);
  };
  auto postNormFfn = [&](llvm::StringRef stack, int64_t size) {
    std::string ffn = "block" + std::to_string(block++) + "_ffn";
    builder.addFfn(ffn, *activation, size, /*bias=*/true, /*gated=*/false,
                   stack, loc);
    builder.addNorm(ffn + "_norm", NormKind::LayerNorm, eps, stack, loc,
                    NormPlacement::Post);
  };

  LayerConfig encoder;
  encoder.queryHeads = encoder.kvHeads = *encoderHeads;
  encoder.headDim = *dModel / *encoderHeads;
  encoder.bf16Compute =
      bf16ComputeFor(config, context, encoder.headDim, options);
  encoder.stack = "encoder";
  encoder.projectionBias = true; // Marian and BART projections have biases
  embedding("encoder", *vocabulary);
  for (int64_t i = 0; i < *encoderLayers; i++) {
    postNormLayer(encoder);
    postNormFfn("encoder", *encoderFfn);
  }
  // Each decoder layer: masked self-attention over its growing cache, then
  // cross-attention over the encoder output (computed once per input).
  LayerConfig self, cross;
  self.queryHeads = self.kvHeads = *decoderHeads;
  self.headDim = *dModel / *decoderHeads;
  self.bf16Compute = bf16ComputeFor(config, context, self.headDim, options);
  self.mask = MaskKind::Causal;
  self.stack = "decoder";
  self.projectionBias = true;
  self.cache =
      makeKvCache(context, loc, "paged", 16, "f32", *positions, options);
  cross = self;
  cross.kind = LayerKind::Cross;
  cross.mask = MaskKind::None;
  cross.cache = makeKvCache(context, loc, "contiguous", *positions, "f32",
                            *positions, options);
  if (!self.cache || !cross.cache)
    return nullptr;
  embedding("decoder", *decoderVocabulary);
  for (int64_t i = 0; i < *decoderLayers; i++) {
    postNormLayer(self);
    postNormLayer(cross);
    postNormFfn("decoder", *decoderFfn);
  }
  builder.addOutputHead(*decoderVocabulary, /*bias=*/true, loc);
  return builder.finish();
}

} // namespace

std::string modelNameOf(llvm::StringRef fileName) {
  // "config.json" names nothing; use its directory (the model's name).
  llvm::StringRef stem = llvm::sys::path::stem(fileName);
  llvm::StringRef dir =
      llvm::sys::path::filename(llvm::sys::path::parent_path(fileName));
  std::string name = (stem == "config" && !dir.empty() ? dir : stem).str();
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = "model_" + name;
  return name;
}

OwningOpRef<ModuleOp> importHuggingFaceConfig(const json::Object &root,
                                              const JsonLocator &locator,
                                              MLIRContext &context,
                                              const ImportOptions &options,
                                              llvm::StringRef fileName) {
  ConfigReader config(root, {}, locator);
  std::optional<llvm::StringRef> type = config.requiredString("model_type");
  if (!type)
    return nullptr;
  std::string name =
      options.modelName.empty() ? modelNameOf(fileName) : options.modelName;
  if (!isCIdentifier(name)) {
    emitError(locator.at(JsonPath{}))
        << "model name '" << name << "' must be a C identifier";
    return nullptr;
  }
  // transformers v5 saves RoPE's base and rule as rope_parameters (in place
  // of rope_theta and rope_scaling, which the importers read): a rule that
  // would otherwise be silently the default, refused by name.
  if (!config.isNull("rope_parameters", root) && config.has("rope_parameters")) {
    config.error("rope_parameters",
                 "rope_parameters (transformers v5's form) is not read yet; "
                 "give the same rule as rope_theta and rope_scaling");
    return nullptr;
  }
  // A checkpoint quantized by another tool stores other tensors and other
  // math: GPTQ and AWQ int4 are read as they are, the rest refused.
  std::optional<QuantizedWeights> quantized;
  if (!readQuantization(config, locator, quantized))
    return nullptr;
  // Phi-3's fused Q|K|V and gate|up would need their packed tensors split.
  if (quantized && quantized->mxfp4Experts && *type != "gpt_oss") {
    config.error("quantization_config",
                 "MXFP4 checkpoints are read for gpt_oss (its experts), not " +
                     type->str());
    return nullptr;
  }
  if (quantized && !quantized->mxfp4Experts && *type != "llama" &&
      *type != "mistral" && *type != "qwen2" && *type != "qwen3" &&
      *type != "olmo2") {
    config.error("quantization_config",
                 "GPTQ and AWQ checkpoints are read for llama, mistral, "
                 "qwen2, qwen3 and olmo2, not " + type->str());
    return nullptr;
  }
  if (const DecoderFamily *family = decoderFamily(*type))
    return importDecoderOnly(config, root, *family, locator, context, options,
                             name, quantized);
  if (*type == "gemma2" || *type == "gemma3_text")
    return importGemma(config, root, *type, locator, context, options, name);
  // Gemma 3's multimodal checkpoints (4B and up): the text stack their
  // text_config describes; the vision tower is not read (text in, text out).
  if (*type == "gemma3") {
    JsonPath textPath;
    const json::Object *text = config.getObject("text_config", false, textPath);
    static const json::Object kNone;
    if (!config.ok())
      return nullptr;
    ConfigReader textConfig(text ? *text : kNone, textPath, locator);
    return importGemma(textConfig, text ? *text : kNone, "gemma3_text", locator,
                       context, options, name, &config);
  }
  if (*type == "marian" || *type == "bart")
    return importEncoderDecoder(config, *type, locator, context, options, name);
  emitError(locator.at(JsonPath{std::string("model_type")}))
      << "unsupported model_type '" << *type
      << "' (attnc imports llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, "
         "deepseek_v2, deepseek_v3, gpt_oss, gemma2, gemma3_text, gemma3, phi3, "
         "olmo2, gpt2, marian and bart)";
  return nullptr;
}

} // namespace attnc
