//===- TensorNames.cpp - which checkpoint tensor feeds which op
//------------===//

#include "TensorNames.h"

#include "attn/runtime/Int4Checkpoint.h"

#include <cctype>
#include <map>
#include <set>

namespace attn::runtime {

namespace {

/// How one family of checkpoints names an encoder-decoder's or a decoder's
/// tensors. In patterns, {stack} is the op's stack ("encoder", "decoder")
/// and {n} its block; norms, attention, projections and FFN names follow
/// the block's prefix.
struct FamilyNames {
  WeightNaming naming;
  const char *name; ///< the plan's weight_naming
  const char *block, *embedding, *positions, *embeddingNorm, *finalNorm;
  /// The norm before self attention, cross attention, the FFN.
  const char *selfNorm, *crossNorm, *ffnNorm;
  /// The residual_add norms of a self attention's and an FFN's output
  /// (Gemma's); "" where the family has none.
  const char *selfOutputNorm, *ffnOutputNorm;
  const char *selfAttention, *crossAttention;
  const char *query, *key, *value, *output;
  /// QK-norm's weights (Qwen3: self_attn.q_norm, self_attn.k_norm).
  const char *queryNorm, *keyNorm;
  const char *up, *gate, *down;
  /// Phi-3's fusions: Q|K|V rows in one tensor named `query`, gate|up rows
  /// in one named `gate` ("" where separate).
  bool fusedQkv = false, fusedGateUp = false;
  /// Where a checkpoint with tied embeddings stores the table [vocab][d].
  const char *sharedEmbedding;
  /// A tied head is the embedding (Llama); else lm_head.weight, or the
  /// shared table where the checkpoint saved it once (BART, Marian).
  bool tiedHeadIsEmbedding;
  /// Tensors that change nothing: names ending so, and whole names.
  std::vector<const char *> harmlessSuffixes, harmlessNames;
  /// ... and names starting so (a multimodal checkpoint's other towers).
  std::vector<const char *> harmlessPrefixes = {};
  /// Blocks past the model's (`block` with {n} beyond the last) are not
  /// run: DeepSeek-V3's multi-token-prediction layers.
  bool laterBlocksHarmless = false;
  /// A mixture of experts, after the block's prefix: the router, and
  /// expert {e}'s gate, up and down projections (Qwen3-MoE's names).
  const char *router = "mlp.gate";
  const char *expertGate = "mlp.experts.{e}.gate_proj",
             *expertUp = "mlp.experts.{e}.up_proj",
             *expertDown = "mlp.experts.{e}.down_proj";
  /// Or every expert in one tensor [E][in][out], multiplied as x·W
  /// (gpt-oss): gate and up interleaved by column (gate 2j, up 2j + 1),
  /// down; their biases [E][out] named with a "_bias" suffix. "": none.
  const char *stackedGateUp = "", *stackedDown = "";
  /// A latent attention layer's tensors, after the attention's prefix
  /// (DeepSeek's names): the low-rank query's down projection, its norm and
  /// its up projection (or the direct one, `query`), the shared key and
  /// latent, the latent's norm, the heads' key and value up projections.
  const char *queryDown = "q_a_proj", *queryDownNorm = "q_a_layernorm",
             *queryUp = "q_b_proj", *keyLatent = "kv_a_proj_with_mqa",
             *latentNorm = "kv_a_layernorm", *latentUp = "kv_b_proj";
  /// Its shared experts' FFN, `{r}` the role's gate, up or down, and their
  /// output's gate vector (Qwen2-MoE's names).
  const char *sharedExpert = "mlp.shared_expert.{r}_proj",
             *sharedExpertGate = "mlp.shared_expert_gate";
  /// A GGUF file's block names of this family's own (llama.cpp's
  /// converter), before the shared ones (ggufName's kGgufBlockStems).
  std::vector<std::pair<const char *, const char *>> ggufBlockStems = {};

  std::string normBefore(const PlanOp &sublayer) const {
    return sublayer.kind == OpKind::Ffn ? ffnNorm
           : sublayer.cross             ? crossNorm
                                        : selfNorm;
  }
  std::string ffn(const std::string &role) const {
    return role == "up" ? up : role == "down" ? down : gate;
  }
  std::string expert(const std::string &role, int e) const {
    std::string name = role == "up"     ? expertUp
                       : role == "down" ? expertDown
                                        : expertGate;
    const size_t at = name.find("{e}");
    return name.replace(at, 3, std::to_string(e));
  }
  std::string shared(const std::string &role) const {
    std::string name = sharedExpert;
    return name.replace(name.find("{r}"), 3, role);
  }
};

/// Llama, Mistral and Qwen2 (transformers' LlamaForCausalLM naming; older
/// Llama uploads carry the recomputed rotary frequencies).
const FamilyNames kLlama = {WeightNaming::Llama,
                            "llama",
                            "model.layers.{n}.",
                            "model.embed_tokens",
                            "",
                            "",
                            "model.norm",
                            "input_layernorm",
                            "",
                            "post_attention_layernorm",
                            "",
                            "",
                            "self_attn.",
                            "",
                            "q_proj",
                            "k_proj",
                            "v_proj",
                            "o_proj",
                            "q_norm",
                            "k_norm",
                            "mlp.up_proj",
                            "mlp.gate_proj",
                            "mlp.down_proj",
                            false,
                            false,
                            "model.embed_tokens.weight",
                            true,
                            {".self_attn.rotary_emb.inv_freq"},
                            {}};

/// Phi-3 / Phi-3.5 / Phi-4-mini: Llama's names with Q|K|V in
/// self_attn.qkv_proj and gate|up in mlp.gate_up_proj.
const FamilyNames kPhi3 = {WeightNaming::Phi3,
                           "phi3",
                           "model.layers.{n}.",
                           "model.embed_tokens",
                           "",
                           "",
                           "model.norm",
                           "input_layernorm",
                           "",
                           "post_attention_layernorm",
                           "",
                           "",
                           "self_attn.",
                           "",
                           "qkv_proj",
                           "",
                           "",
                           "o_proj",
                           "",
                           "",
                           "",
                           "mlp.gate_up_proj",
                           "mlp.down_proj",
                           true,
                           true,
                           "model.embed_tokens.weight",
                           true,
                           {},
                           {}};

/// Mixtral: Llama's names, the experts under block_sparse_moe.
const FamilyNames kMixtral = [] {
  FamilyNames names = kLlama;
  names.naming = WeightNaming::Mixtral;
  names.name = "mixtral";
  names.router = "block_sparse_moe.gate";
  names.expertGate = "block_sparse_moe.experts.{e}.w1";
  names.expertUp = "block_sparse_moe.experts.{e}.w3";
  names.expertDown = "block_sparse_moe.experts.{e}.w2";
  return names;
}();

/// DeepSeek-V2 / V3: Llama's names (the latent attention's are its own,
/// tensorNames), the shared experts as one FFN under mlp.shared_experts.
const FamilyNames kDeepSeek = [] {
  FamilyNames names = kLlama;
  names.naming = WeightNaming::DeepSeek;
  names.name = "deepseek";
  names.sharedExpert = "mlp.shared_experts.{r}_proj";
  names.laterBlocksHarmless = true;
  return names;
}();

/// gpt-oss: Llama's names, the router mlp.router, every expert in
/// mlp.experts.{gate_up_proj, down_proj} (the sinks: tensorNames).
const FamilyNames kGptOss = [] {
  FamilyNames names = kLlama;
  names.naming = WeightNaming::GptOss;
  names.name = "gpt_oss";
  names.router = "mlp.router";
  names.stackedGateUp = "mlp.experts.gate_up_proj";
  names.stackedDown = "mlp.experts.down_proj";
  return names;
}();

/// Gemma 2 and Gemma 3 text: Llama's names, a norm on each side of each
/// sublayer, the head tied to the embedding. OLMo 2 names its norms of the
/// sublayers' outputs (its only block norms) the same way.
const FamilyNames kGemma = [] {
  FamilyNames names = {WeightNaming::Gemma,
                            "gemma",
                            "model.layers.{n}.",
                            "model.embed_tokens",
                            "",
                            "",
                            "model.norm",
                            "input_layernorm",
                            "",
                            "pre_feedforward_layernorm",
                            "post_attention_layernorm",
                            "post_feedforward_layernorm",
                            "self_attn.",
                            "",
                            "q_proj",
                            "k_proj",
                            "v_proj",
                            "o_proj",
                            "q_norm",
                            "k_norm",
                            "mlp.up_proj",
                            "mlp.gate_proj",
                            "mlp.down_proj",
                            false,
                            false,
                            "model.embed_tokens.weight",
                            true,
                            {},
                            {}};
  // The norm after attention is post_attention_norm (Llama's
  // post_attention_layernorm is the FFN's input norm, ffn_norm).
  names.ggufBlockStems = {{"post_attention_layernorm", "post_attention_norm"},
                          {"pre_feedforward_layernorm", "ffn_norm"},
                          {"post_feedforward_layernorm", "post_ffw_norm"}};
  return names;
}();

/// Gemma 3's multimodal checkpoints: Gemma's names under the language
/// model's prefix (tensorNames moves them); the vision tower, its projector
/// and a saved copy of the tied head are not read.
const FamilyNames kGemma3 = [] {
  FamilyNames names = kGemma;
  names.naming = WeightNaming::Gemma3;
  names.name = "gemma3";
  names.harmlessNames = {"language_model.lm_head.weight"};
  names.harmlessPrefixes = {"vision_tower.", "multi_modal_projector.",
                            "model.vision_tower.",
                            "model.multi_modal_projector."};
  return names;
}();

/// BART, mBART and Marian encoder-decoders.
const FamilyNames kBart = {WeightNaming::Bart,
                           "bart",
                           "model.{stack}.layers.{n}.",
                           "model.{stack}.embed_tokens",
                           "model.{stack}.embed_positions",
                           "model.{stack}.layernorm_embedding",
                           "model.{stack}.layer_norm",
                           "self_attn_layer_norm",
                           "encoder_attn_layer_norm",
                           "final_layer_norm",
                           "",
                           "",
                           "self_attn.",
                           "encoder_attn.",
                           "q_proj",
                           "k_proj",
                           "v_proj",
                           "out_proj",
                           "",
                           "",
                           "fc1",
                           "fc1_gate",
                           "fc2",
                           false,
                           false,
                           "model.shared.weight",
                           false,
                           {},
                           {}};

/// GPT-2: its structure differs (Conv1D [in][out] tensors, Q|K|V fused, the
/// head tied to wte), so gpt2Names walks it; the table holds what is data.
/// transformers ties lm_head.weight to wte (an upload that saved both has
/// two equal copies) and keeps causal-mask buffers.
const FamilyNames kGpt2 = {WeightNaming::Gpt2,
                           "gpt2",
                           "transformer.h.{n}.",
                           "transformer.wte",
                           "transformer.wpe",
                           "",
                           "transformer.ln_f",
                           "ln_1",
                           "",
                           "ln_2",
                           "",
                           "",
                           "attn.",
                           "",
                           "",
                           "",
                           "",
                           "c_proj",
                           "",
                           "",
                           "mlp.c_fc",
                           "",
                           "mlp.c_proj",
                           false,
                           false,
                           "transformer.wte.weight",
                           true,
                           {".attn.bias", ".attn.masked_bias"},
                           {"lm_head.weight"}};

const FamilyNames &family(WeightNaming naming) {
  switch (naming) {
  case WeightNaming::Llama:
    return kLlama;
  case WeightNaming::Gemma:
    return kGemma;
  case WeightNaming::Gemma3:
    return kGemma3;
  case WeightNaming::Phi3:
    return kPhi3;
  case WeightNaming::Mixtral:
    return kMixtral;
  case WeightNaming::DeepSeek:
    return kDeepSeek;
  case WeightNaming::GptOss:
    return kGptOss;
  case WeightNaming::Gpt2:
    return kGpt2;
  case WeightNaming::Bart:
    break;
  }
  return kBart;
}

/// `pattern` with {stack} and {n} filled in.
std::string expand(const std::string &pattern, const std::string &stack,
                   int block = 0) {
  std::string result = pattern;
  for (auto [key, value] :
       {std::pair<std::string, std::string>{"{stack}", stack},
        {"{n}", std::to_string(block)}})
    for (size_t at; (at = result.find(key)) != std::string::npos;)
      result.replace(at, key.size(), value);
  return result;
}

/// GPT-2's tensors of op `i` (a family of its own: Conv1D, fused, tied).
void gpt2Names(const ModelPlan &plan, size_t i, int block, OpTensorNames &n) {
  const PlanOp &op = plan.ops[i];
  const int64_t d = plan.dModel;
  const FamilyNames &names = kGpt2;
  const std::string prefix = expand(names.block, "", block);
  switch (op.kind) {
  case OpKind::Embedding:
    n.add("table", std::string(names.embedding) + ".weight", {op.vocabSize, d});
    if (op.positions == "learned")
      n.add("positions", std::string(names.positions) + ".weight",
            {op.maxPositions, d});
    break;
  case OpKind::Norm: {
    const PlanOp *next = i + 1 < plan.ops.size() ? &plan.ops[i + 1] : nullptr;
    std::string base = !next || next->kind == OpKind::OutputHead ||
                               next->kind == OpKind::Embedding
                           ? names.finalNorm
                           : prefix + names.normBefore(*next);
    n.add("weight", base + ".weight", {d});
    n.add("bias", base + ".bias", {d});
    break;
  }
  case OpKind::Attention: {
    const int64_t q = int64_t(op.queryHeads) * op.headDim,
                  kv = int64_t(op.kvHeads) * op.headDim, width = q + 2 * kv;
    std::string qkv = prefix + names.selfAttention + "c_attn.";
    for (auto [role, begin, count] :
         {std::tuple{"q", int64_t(0), q}, std::tuple{"k", q, kv},
          std::tuple{"v", q + kv, kv}}) {
      n.addConv1D(std::string(role) + ".weight", qkv + "weight", {d, width},
                  begin, count);
      n.addConv1D(std::string(role) + ".bias", qkv + "bias", {width}, begin,
                  count);
    }
    const std::string out = prefix + names.selfAttention + names.output;
    n.addConv1D("out.weight", out + ".weight", {q, d}, 0, 0);
    n.addConv1D("out.bias", out + ".bias", {d}, 0, 0);
    break;
  }
  case OpKind::Ffn: {
    const int64_t f = op.intermediateSize;
    n.addConv1D("up.weight", prefix + names.up + ".weight", {d, f}, 0, 0);
    n.addConv1D("up.bias", prefix + names.up + ".bias", {f}, 0, 0);
    n.addConv1D("down.weight", prefix + names.down + ".weight", {f, d}, 0, 0);
    n.addConv1D("down.bias", prefix + names.down + ".bias", {d}, 0, 0);
    break;
  }
  case OpKind::OutputHead:
    n.add("weight", names.sharedEmbedding, {op.vocabSize, d}); // tied
    break;
  }
}

/// Hugging Face's names (Llama's family) and GGUF's, by stem: whole stems,
/// then a block's ({n} its number) after "model.layers.{n}.".
constexpr std::pair<const char *, const char *> kGgufStems[] = {
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"}};
constexpr std::pair<const char *, const char *> kGgufBlockStems[] = {
    {"input_layernorm", "attn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.qkv_proj", "attn_qkv"}, // Phi-3: Q|K|V rows
    {"mlp.gate_up_proj", "ffn_up"},     // Phi-3: gate|up rows
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"}};
/// GGUF's name of the Hugging Face tensor `name` of a `names` family's
/// checkpoint; empty where it has none.
std::string ggufName(const std::string &name, const FamilyNames &names) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos)
    return "";
  const std::string stem = name.substr(0, dot), suffix = name.substr(dot);
  for (const auto &[hf, gguf] : kGgufStems)
    if (stem == hf)
      return gguf + suffix;
  const std::string blocks = "model.layers.";
  if (stem.compare(0, blocks.size(), blocks) != 0)
    return "";
  const size_t end = stem.find('.', blocks.size());
  if (end == std::string::npos)
    return "";
  const std::string block = stem.substr(blocks.size(), end - blocks.size()),
                    rest = stem.substr(end + 1);
  for (const auto &[hf, gguf] : names.ggufBlockStems)
    if (rest == hf)
      return "blk." + block + "." + gguf + suffix;
  for (const auto &[hf, gguf] : kGgufBlockStems)
    if (rest == hf)
      return "blk." + block + "." + gguf + suffix;
  return "";
}

} // namespace

const char *name(WeightNaming naming) { return family(naming).name; }

Status ggufNames(const ModelPlan &plan, WeightNaming naming,
                 const std::string &architecture,
                 std::vector<OpTensorNames> &names) {
  if (naming != WeightNaming::Llama && naming != WeightNaming::Gemma &&
      naming != WeightNaming::Phi3)
    return Status(StatusCode::InvalidArgument,
                  std::string("weights named as ") + name(naming) +
                      " checkpoints are not read from GGUF files yet");
  // llama.cpp's converter pairs Q's and K's rows for Llama and Mistral
  // (its LlamaModel.permute), not for Qwen2 or Qwen3.
  const bool paired = architecture == "llama";
  for (size_t i = 0; i < names.size(); i++)
    for (OpTensorNames::Entry &entry : names[i].entries) {
      const std::string renamed = ggufName(entry.tensor, family(naming));
      // (Rows of a fused tensor, Phi-3's, keep their place: llama.cpp's
      // converter writes the tensor as the checkpoint has it.)
      if (renamed.empty() || entry.conv1d || entry.stackIndex >= 0 ||
          (entry.rowCount && paired))
        return Status(StatusCode::InvalidArgument,
                      "tensor " + entry.tensor +
                          " has no GGUF name attnc reads yet");
      entry.tensor = renamed;
      std::vector<std::pair<std::string, std::vector<int64_t>>> alternatives;
      for (auto &[alternative, shape] : entry.alternatives) {
        const std::string other = ggufName(alternative, family(naming));
        if (!other.empty() && other != renamed)
          alternatives.push_back({other, shape});
      }
      entry.alternatives = std::move(alternatives);
      if (paired && (entry.role == "q.weight" || entry.role == "k.weight"))
        entry.pairedRopeHeadRows = plan.ops[i].headDim;
      if (paired && (entry.role == "q.bias" || entry.role == "k.bias"))
        return Status(StatusCode::InvalidArgument,
                      "tensor " + renamed +
                          ": biases of paired Q and K rows are not read");
    }
  return Status::ok();
}

std::string expertRole(int expert, const std::string &role) {
  return "experts." + std::to_string(expert) + "." + role;
}

std::vector<OpTensorNames> tensorNames(const ModelPlan &plan,
                                       WeightNaming namingKind) {
  if (namingKind == WeightNaming::Gpt2) {
    std::vector<OpTensorNames> names(plan.ops.size());
    int block = 0;
    for (size_t i = 0; i < plan.ops.size(); i++) {
      gpt2Names(plan, i, block, names[i]);
      block += plan.ops[i].kind == OpKind::Ffn;
    }
    // A bare GPT2Model's checkpoint names them without "transformer.".
    const std::string prefix = "transformer.";
    for (OpTensorNames &op : names)
      for (OpTensorNames::Entry &entry : op.entries)
        if (entry.tensor.compare(0, prefix.size(), prefix) == 0)
          entry.alternatives.push_back(
              {entry.tensor.substr(prefix.size()), entry.shape});
    return names;
  }
  if (namingKind == WeightNaming::Gemma3) {
    // Gemma's model.* names as the published checkpoints nest them, or as
    // transformers >= 4.52 saves them.
    std::vector<OpTensorNames> names = tensorNames(plan, WeightNaming::Gemma);
    const std::string model = "model.";
    auto nested = [&](const std::string &name, const char *prefix) {
      return name.compare(0, model.size(), model) == 0
                 ? prefix + name.substr(model.size())
                 : name;
    };
    for (OpTensorNames &op : names)
      for (OpTensorNames::Entry &entry : op.entries) {
        auto alternatives = std::move(entry.alternatives);
        entry.alternatives = {
            {nested(entry.tensor, "model.language_model."), entry.shape}};
        entry.tensor = nested(entry.tensor, "language_model.model.");
        for (const auto &[name, shape] : alternatives)
          for (const char *prefix :
               {"language_model.model.", "model.language_model."})
            entry.alternatives.push_back({nested(name, prefix), shape});
      }
    return names;
  }
  const FamilyNames &naming = family(namingKind);
  // A linear layer's weight: `role`.weight, or the tensors of a checkpoint
  // that holds it quantized (Int4Checkpoint.h), `role`.qweight and so on.
  auto addLinear = [&](OpTensorNames &n, const std::string &role,
                       const std::string &base, int64_t out, int64_t in) {
    if (!plan.weightFormat) {
      n.add(role + ".weight", base + ".weight", {out, in});
      return;
    }
    for (const Int4TensorSpec &tensor :
         int4Tensors(*plan.weightFormat, out, in, plan.weightGroup)) {
      n.add(role + tensor.suffix, base + tensor.suffix, tensor.shape);
      n.entries.back().type = tensor.type;
    }
  };
  std::vector<OpTensorNames> names(plan.ops.size());
  std::map<std::string, int> blockOfStack; // FFNs seen per stack
  const int64_t d = plan.dModel;
  for (size_t i = 0; i < plan.ops.size(); i++) {
    const PlanOp &op = plan.ops[i];
    OpTensorNames &n = names[i];
    std::string stack = op.stack.empty() ? "decoder" : op.stack;
    std::string prefix = expand(naming.block, stack, blockOfStack[stack]);
    switch (op.kind) {
    case OpKind::Embedding:
      n.add("table", expand(naming.embedding, stack) + ".weight",
            {op.vocabSize, d}, {{naming.sharedEmbedding, {op.vocabSize, d}}});
      if (op.positions == "learned")
        n.add("positions", expand(naming.positions, stack) + ".weight",
              {op.maxPositions + op.positionOffset, d});
      break;
    case OpKind::Norm: {
      // A pre norm is named after the sublayer it feeds, a post norm after
      // the one it follows (whose block an FFN has already counted).
      const PlanOp *next = i + 1 < plan.ops.size() ? &plan.ops[i + 1] : nullptr;
      const PlanOp *sublayer =
          op.post ? (i > 0 ? &plan.ops[i - 1] : nullptr) : next;
      bool named = sublayer && sublayer->stack == op.stack &&
                   (sublayer->kind == OpKind::Attention ||
                    sublayer->kind == OpKind::Ffn);
      std::string base = expand(naming.finalNorm, stack);
      if (op.residualAdd && i > 0) { // of the sublayer before it
        const PlanOp &before = plan.ops[i - 1];
        base = before.kind == OpKind::Ffn
                   ? expand(naming.block, stack, blockOfStack[stack] - 1) +
                         naming.ffnOutputNorm
                   : prefix + naming.selfOutputNorm;
        n.add("weight", base + ".weight", {d});
        break;
      }
      if (op.post && sublayer && sublayer->kind == OpKind::Embedding)
        base = expand(naming.embeddingNorm, stack);
      else if (named && op.post && sublayer->kind == OpKind::Ffn)
        base = expand(naming.block, stack, blockOfStack[stack] - 1) +
               naming.normBefore(*sublayer);
      else if (named)
        base = prefix + naming.normBefore(*sublayer);
      n.add("weight", base + ".weight", {d});
      if (op.layerNorm)
        n.add("bias", base + ".bias", {d});
      break;
    }
    case OpKind::Attention: {
      std::string base =
          prefix + (op.cross ? naming.crossAttention : naming.selfAttention);
      if (const PlanOp::Latent &l = op.latent; l.rank) {
        // Latent attention: the query (directly, or down, normed, up), the
        // shared key and latent ([latent | key], then the latent's norm),
        // the up projection (each head's W_uk rows, then its W_uv rows),
        // the output.
        const int64_t heads = op.queryHeads,
                      query = heads * (l.nopeDim + l.ropeDim);
        if (l.queryRank) {
          addLinear(n, "q_a", base + naming.queryDown, l.queryRank, d);
          n.add("q_a_norm.weight",
                base + naming.queryDownNorm + ".weight", {l.queryRank});
          addLinear(n, "q", base + naming.queryUp, query, l.queryRank);
        } else {
          addLinear(n, "q", base + naming.query, query, d);
        }
        addLinear(n, "kv_a", base + naming.keyLatent, l.rank + l.ropeDim, d);
        n.add("kv_a_norm.weight", base + naming.latentNorm + ".weight",
              {l.rank});
        addLinear(n, "kv_b", base + naming.latentUp,
                  heads * (l.nopeDim + l.valueDim), l.rank);
        addLinear(n, "out", base + naming.output, d, heads * l.valueDim);
        break;
      }
      const int64_t q = int64_t(op.queryHeads) * op.headDim,
                    kv = int64_t(op.kvHeads) * op.headDim;
      if (naming.fusedQkv) // Q | K | V rows of one tensor
        for (auto [role, begin, rows] :
             {std::tuple{"q.weight", int64_t(0), q},
              std::tuple{"k.weight", q, kv},
              std::tuple{"v.weight", q + kv, kv}})
          n.addRows(role, base + naming.query + ".weight", {q + 2 * kv, d},
                    begin, rows);
      for (auto [role, proj, rows, cols] :
           {std::tuple{"q", naming.query, q, d},
            std::tuple{"k", naming.key, kv, d},
            std::tuple{"v", naming.value, kv, d},
            std::tuple{"out", naming.output, d, q}}) {
        if (naming.fusedQkv && std::string(role) != "out")
          continue;
        addLinear(n, role, base + proj, rows, cols);
        if (std::string(role) == "out" ? op.outputBias : op.bias)
          n.add(std::string(role) + ".bias", base + proj + ".bias", {rows});
      }
      if (op.qkNorm != PlanOp::QkNorm::None) {
        // One [head_dim] weight for every query head and one for every
        // key head, or one over all query heads and one over all key heads.
        const bool whole = op.qkNorm == PlanOp::QkNorm::Projection;
        n.add("q_norm.weight", base + naming.queryNorm + ".weight",
              {whole ? q : op.headDim});
        n.add("k_norm.weight", base + naming.keyNorm + ".weight",
              {whole ? kv : op.headDim});
      }
      if (op.sinks) // gpt-oss: self_attn.sinks, a logit per query head
        n.add("sinks", base + "sinks", {op.queryHeads});
      break;
    }
    case OpKind::Ffn: {
      const int64_t f = op.intermediateSize;
      std::vector<std::pair<std::string, std::vector<int64_t>>> roles = {
          {"up", {f, d}}, {"down", {d, f}}};
      if (op.gated)
        roles.insert(roles.begin(), {"gate", {f, d}});
      if (op.experts.count) {
        // The router's logits (with a bias where the experts have them:
        // gpt-oss), then each expert's FFN.
        n.add("router.weight", prefix + naming.router + ".weight",
              {op.experts.count, d});
        if (op.bias)
          n.add("router.bias", prefix + naming.router + ".bias",
                {op.experts.count});
        // A sigmoid router's selection bias (DeepSeek-V3's).
        if (op.experts.rule == PlanOp::Experts::Rule::SigmoidTopK)
          n.add("router.selection_bias",
                prefix + naming.router + ".e_score_correction_bias",
                {op.experts.count});
        // Stacked experts (gpt-oss): expert e's gate, up and down are
        // slices of two tensors (and their biases of two more).
        const int64_t count = op.experts.count;
        if (*naming.stackedGateUp)
          for (int e = 0; e < count; e++)
            for (const auto &[role, shape] : roles) {
              const bool down = role == "down";
              const std::string tensor =
                  prefix + (down ? naming.stackedDown : naming.stackedGateUp);
              // Columns begin, begin + step, ... of the slice.
              const int64_t step = op.gated && !down ? 2 : 1,
                            begin = role == "up" && op.gated ? 1 : 0,
                            out = shape[0], in = shape[1];
              // MXFP4 as published: [E][rows][in / 32][16] codes (two a
              // byte) and [E][rows][in / 32] exponents, rows not
              // transposed (gate and up interleaved by row).
              if (op.experts.weightType == DType::MXFP4) {
                const int64_t blocks = (in + kMxBlock - 1) / kMxBlock;
                n.addStackedRows(expertRole(e, role) + ".blocks",
                                 tensor + "_blocks",
                                 {count, out * step, blocks, kMxBlock / 2}, e,
                                 begin, out, step);
                n.addStackedRows(expertRole(e, role) + ".scales",
                                 tensor + "_scales", {count, out * step, blocks},
                                 e, begin, out, step);
              } else {
                n.addStacked(expertRole(e, role) + ".weight", tensor,
                             {count, in, out * step}, e, begin, out, step);
              }
              if (op.bias)
                n.addStacked(expertRole(e, role) + ".bias", tensor + "_bias",
                             {count, out * step}, e, begin, out, step);
            }
        for (int e = 0; e < count && !*naming.stackedGateUp; e++)
          for (const auto &[role, shape] : roles) {
            const std::string base = prefix + naming.expert(role, e);
            addLinear(n, expertRole(e, role), base, shape[0], shape[1]);
            if (op.bias)
              n.add(expertRole(e, role) + ".bias", base + ".bias", {shape[0]});
          }
        // The shared experts' FFN, its roles "shared.gate" ... and the gate
        // of its output, "shared_gate.weight" [1][d].
        if (const int64_t s = op.experts.shared.intermediateSize) {
          for (const auto &[role, shape] : roles) {
            const int64_t rows = role == "down" ? d : s,
                          cols = role == "down" ? s : d;
            const std::string base = prefix + naming.shared(role);
            addLinear(n, "shared." + role, base, rows, cols);
            if (op.bias)
              n.add("shared." + role + ".bias", base + ".bias", {rows});
          }
          if (op.experts.shared.gate)
            n.add("shared_gate.weight",
                  prefix + naming.sharedExpertGate + ".weight", {1, d});
        }
        blockOfStack[stack]++;
        break;
      }
      for (const auto &[role, shape] : roles) {
        const std::string base = prefix + naming.ffn(role);
        if (naming.fusedGateUp && op.gated && role != "down") {
          // gate | up rows of one tensor
          n.addRows(role + ".weight", prefix + naming.ffn("gate") + ".weight",
                    {2 * f, d}, role == "gate" ? 0 : f, f);
          continue;
        }
        addLinear(n, role, base, shape[0], shape[1]);
        if (op.bias)
          n.add(role + ".bias", base + ".bias", {shape[0]});
      }
      blockOfStack[stack]++;
      break;
    }
    case OpKind::OutputHead:
      // A tied Llama-family head is the embedding, whatever lm_head.weight
      // a checkpoint also holds (harmlessTensors), and an untied one must
      // have its own. BART and Marian heads are tied to the embeddings in
      // most checkpoints (saved once, under the embedding's name), and keep
      // the head's bias as the buffer final_logits_bias [1][vocab].
      if (naming.tiedHeadIsEmbedding && op.tied)
        n.add("weight", expand(naming.embedding, stack) + ".weight",
              {op.vocabSize, d});
      else if (naming.tiedHeadIsEmbedding)
        n.add("weight", "lm_head.weight", {op.vocabSize, d});
      else
        n.add("weight", "lm_head.weight", {op.vocabSize, d},
              {{naming.sharedEmbedding, {op.vocabSize, d}}});
      if (op.bias)
        n.add("bias", "lm_head.bias", {op.vocabSize},
              {{"final_logits_bias", {1, op.vocabSize}}});
      break;
    }
  }
  return names;
}

std::vector<ExpectedTensor>
distinctTensors(const std::vector<OpTensorNames> &names) {
  std::vector<ExpectedTensor> expected;
  std::set<std::string> seen;
  for (const OpTensorNames &op : names)
    for (const OpTensorNames::Entry &entry : op.entries)
      if (seen.insert(entry.tensor).second)
        expected.push_back({entry.tensor, entry.type, entry.shape});
  return expected;
}

Status checkSharedShapes(const ModelPlan &plan,
                         const std::vector<OpTensorNames> &names) {
  std::map<std::string, std::pair<const std::vector<int64_t> *, size_t>> first;
  auto text = [](const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); i++)
      s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  };
  for (size_t i = 0; i < names.size(); i++)
    for (const OpTensorNames::Entry &entry : names[i].entries) {
      auto [at, inserted] = first.try_emplace(entry.tensor, &entry.shape, i);
      if (!inserted && *at->second.first != entry.shape)
        return Status(StatusCode::InvalidArgument,
                      "the plan's ops '" + plan.ops[at->second.second].name +
                          "' and '" + plan.ops[i].name + "' expect tensor '" +
                          entry.tensor + "' as " + text(*at->second.first) +
                          " and " + text(entry.shape));
    }
  return Status::ok();
}

std::vector<std::string>
harmlessTensors(const ModelPlan &plan, WeightNaming naming,
                const std::vector<std::string> &present) {
  const FamilyNames &names = family(naming);
  std::set<std::string> harmless(names.harmlessNames.begin(),
                                 names.harmlessNames.end());
  for (const PlanOp &op : plan.ops) {
    if (op.kind == OpKind::OutputHead && op.tied) // transformers ties over it
      harmless.insert("lm_head.weight");
    // Marian's sinusoids are a frozen table transformers fills itself: the
    // kernel computes them, whether or not the checkpoint saved them.
    if (op.kind == OpKind::Embedding && op.positions == "sinusoidal_halves")
      harmless.insert(
          expand(names.positions, op.stack.empty() ? "decoder" : op.stack) +
          ".weight");
  }
  // The decoder's blocks: its attention layers (one a block).
  int blocks = 0;
  for (const PlanOp &op : plan.ops)
    blocks += op.kind == OpKind::Attention && op.stack != "encoder";
  const std::string blockPattern = names.block;
  const size_t number = blockPattern.find("{n}");
  std::vector<std::string> result;
  for (const std::string &tensor : present) {
    bool suffix = false;
    // "model.layers.<n>." with n at or past the decoder's blocks.
    if (names.laterBlocksHarmless && number != std::string::npos &&
        tensor.compare(0, number, blockPattern, 0, number) == 0) {
      size_t end = number;
      while (end < tensor.size() && std::isdigit((unsigned char)tensor[end]))
        end++;
      suffix |= end > number && end < tensor.size() && tensor[end] == '.' &&
                end - number < 9 &&
                std::stoi(tensor.substr(number, end - number)) >= blocks;
    }
    for (std::string end : names.harmlessSuffixes)
      suffix |=
          tensor.size() >= end.size() &&
          tensor.compare(tensor.size() - end.size(), end.size(), end) == 0;
    for (std::string start : names.harmlessPrefixes)
      suffix |= tensor.compare(0, start.size(), start) == 0;
    if (suffix || harmless.count(tensor))
      result.push_back(tensor);
  }
  return result;
}

void OpTensorNames::add(
    const std::string &role, const std::string &tensor,
    std::vector<int64_t> shape,
    std::vector<std::pair<std::string, std::vector<int64_t>>> alternatives) {
  Entry entry{role, tensor, std::move(shape)};
  entry.alternatives = std::move(alternatives);
  entries.push_back(std::move(entry));
}

void OpTensorNames::addConv1D(const std::string &role,
                              const std::string &tensor,
                              std::vector<int64_t> shape, int64_t columnBegin,
                              int64_t columnCount) {
  entries.push_back(
      {role, tensor, std::move(shape), true, columnBegin, columnCount});
}

void OpTensorNames::addRows(const std::string &role,
                            const std::string &tensor,
                            std::vector<int64_t> shape, int64_t begin,
                            int64_t count) {
  Entry entry{role, tensor, std::move(shape)};
  entry.rowBegin = begin;
  entry.rowCount = count;
  entries.push_back(std::move(entry));
}

void OpTensorNames::addStacked(const std::string &role,
                               const std::string &tensor,
                               std::vector<int64_t> shape, int64_t index,
                               int64_t begin, int64_t count, int64_t step) {
  Entry entry{role, tensor, std::move(shape)};
  entry.stackIndex = index;
  entry.columnBegin = begin;
  entry.columnCount = count;
  entry.columnStep = step;
  entries.push_back(std::move(entry));
}

void OpTensorNames::addStackedRows(const std::string &role,
                                   const std::string &tensor,
                                   std::vector<int64_t> shape, int64_t index,
                                   int64_t begin, int64_t count,
                                   int64_t step) {
  Entry entry{role, tensor, std::move(shape)};
  entry.stackIndex = index;
  entry.rowBegin = begin;
  entry.rowCount = count;
  entry.rowStep = step;
  entry.type = TensorType::U8;
  entries.push_back(std::move(entry));
}

const OpTensorNames::Entry *OpTensorNames::find(const std::string &role) const {
  for (const Entry &entry : entries)
    if (entry.role == role)
      return &entry;
  return nullptr;
}

} // namespace attn::runtime
