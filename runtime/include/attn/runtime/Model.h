//===- Model.h - running a whole generated model --------------*- C++ -*-===//
//
// A Model is a plan (which ops, in which order, with which generated
// kernels) plus weights loaded from a checkpoint (Checkpoint.h: one
// safetensors file, shards and their index, or a model folder), laid out
// for those kernels: linear weights in panels of output features, in the
// plan's weight dtype, Q/K/V concatenated where attnc fused the
// projections. It runs the encoder, one decoder step for a
// batch of sequences over KV caches, or the decoder without any cache (the
// reference a cache must reproduce).
//
// Buffers are C arrays of float unless stated; shapes in comments. A Model
// is immutable after load and may be shared by threads; each thread uses
// its own caches and ExecutionContext.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODEL_H
#define ATTN_RUNTIME_MODEL_H

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/DeviceApi.h"
#include "attn/runtime/attnc_library.h"
#include "attn/runtime/KvCache.h"
#include "attn/runtime/ModelLibrary.h"
#include "attn/runtime/ModelPlan.h"
#include "attn/runtime/Safetensors.h"

#include <memory>
#include <new>
#include <string>
#include <vector>

namespace attn::runtime {

/// How a checkpoint names its tensors.
enum class WeightNaming {
  /// Hugging Face BART / mBART / Marian encoder-decoders:
  /// model.{encoder,decoder}.embed_tokens, .layers.N.{self_attn,
  /// encoder_attn}.{q,k,v,out}_proj, ..._layer_norm, fc1, fc2,
  /// .layer_norm (final), lm_head.
  Bart,
  /// Hugging Face Llama / Mistral / Qwen2 decoders: model.embed_tokens,
  /// model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
  /// post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm,
  /// lm_head.
  Llama,
  /// Hugging Face GPT-2: transformer.{wte, wpe}, transformer.h.N.{ln_1,
  /// attn.c_attn (Q|K|V fused), attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj},
  /// transformer.ln_f; Conv1D weights stored [in][out]; the output head is
  /// wte (tied).
  Gpt2,
  /// Hugging Face Gemma 2 / Gemma 3 text decoders: Llama's names with a
  /// norm on each side of each sublayer: model.layers.N.{input_layernorm,
  /// self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm (Gemma 3),
  /// post_attention_layernorm, pre_feedforward_layernorm,
  /// mlp.{gate,up,down}_proj, post_feedforward_layernorm}.
  Gemma,
  /// Hugging Face Phi-3 / Phi-3.5 / Phi-4-mini: Llama's names with Q|K|V
  /// fused in self_attn.qkv_proj and gate|up in mlp.gate_up_proj.
  Phi3,
  /// Hugging Face Gemma 3 multimodal checkpoints (Gemma3ForConditionalGeneration,
  /// model_type gemma3): Gemma's names under language_model.model.* (as
  /// published) or model.language_model.* (as transformers >= 4.52 saves
  /// them); the vision tower and its projector are not read.
  Gemma3,
  /// Hugging Face Mixtral: Llama's names with the mixture of experts under
  /// model.layers.N.block_sparse_moe.{gate (the router), experts.E.{w1
  /// (gate), w3 (up), w2 (down)}}.
  Mixtral,
  /// Hugging Face DeepSeek-V2 / V3: Llama's names with latent attention
  /// (self_attn.{q_proj or q_a_proj, q_a_layernorm, q_b_proj},
  /// kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj}) and the shared
  /// experts under mlp.shared_experts.{gate,up,down}_proj.
  DeepSeek,
  /// Hugging Face gpt-oss: Llama's names with self_attn.sinks and the
  /// mixture under mlp.{router (with a bias), experts.{gate_up_proj
  /// [E][d][2f] (gate and up columns interleaved), gate_up_proj_bias,
  /// down_proj [E][f][d], down_proj_bias}}, every expert in one tensor
  /// multiplied as x·W.
  GptOss,
};

/// What the last cross-attention layer attended to in a decode step: per
/// sequence of the batch, the attention weights over its encoder tokens,
/// averaged over heads (each row sums to 1). For pictures, not for speed:
/// recomputed from the cached keys in plain C++.
struct CrossAttentionTrace {
  std::vector<std::vector<float>> weights; // [batch][encoder tokens]
};

class Model;

/// What one thread of work needs to run a model's forward passes: the
/// activation buffers, each sized from the model's plan (its widest op) and
/// grown to the tokens of a pass, and, for a model on a GPU, their device
/// copies, which stay there between passes. Made for one model and used
/// with it only (a call with another is refused), by one thread at a time;
/// what a Generator holds for its requests. Opaque: the runtime's forward
/// pass names the buffers it uses (ContextBuffers.h).
class ExecutionContext {
public:
  explicit ExecutionContext(const Model &model);
  ExecutionContext(const ExecutionContext &) = delete;
  ExecutionContext &operator=(const ExecutionContext &) = delete;
  ~ExecutionContext();

  struct Buffers; // runtime-private

private:
  friend class Model;
  friend class ModelRunner;
  const Model &model_;
  std::unique_ptr<Buffers> buffers_;
};

/// How Model::load(library, ...) runs a model and keeps its weights.
struct LoadOptions {
  /// The library's GPU kernels (the library must have them).
  bool onDevice = false;
  /// A packed-weights file: the weights as laid out for the kernels, written
  /// once and memory-mapped on later loads (shared by every process that
  /// maps it), every checksum verified. A file for another checkpoint or
  /// plan, or one truncated or corrupt, is replaced after the checkpoint is
  /// laid out again; one that cannot be written costs nothing but the time.
  /// Empty: none.
  std::string packedWeights;
};

class Model {
public:
  /// Parses the plan, resolves its kernels in `table`, opens `weightsPath`
  /// (a .safetensors file, a model.safetensors.index.json, or a folder
  /// holding either) and checks that it holds exactly the tensors the plan
  /// needs, F32, F16 or BF16 (every problem named), then lays the weights
  /// out for the kernels, converted to the plan's weight dtype.
  static Status load(const std::string &planJson, const KernelEntry *table,
                     size_t tableSize, const std::string &weightsPath,
                     WeightNaming naming, std::unique_ptr<Model> &model);

  /// As load, with the tensor naming the plan states (`weight_naming`:
  /// plans of Hugging Face configs); InvalidArgument for a plan without
  /// one (native descriptions: pass the naming).
  static Status load(const std::string &planJson, const KernelEntry *table,
                     size_t tableSize, const std::string &weightsPath,
                     std::unique_ptr<Model> &model);

  /// As load, for the library's GPU kernels: `device` is the generated
  /// `<model>_device_api` of a library attnc built with a GPU target
  /// (--target=...,cuda or ...,opencl). The weights are copied to the device
  /// once; KV caches and execution contexts get device copies when a
  /// call first uses them and stay there, so a call copies only token ids,
  /// positions, cache slots and block tables in, and logits (or greedy
  /// tokens) out; K/V appends (self and cross, every dtype) and
  /// copy-on-write stay on the device too. Host paths that remain (traces,
  /// plans without a fused append) copy a layer's whole pool between host
  /// and device. Fails when the driver or device is
  /// missing, naming why.
  static Status load(const std::string &planJson, const KernelEntry *table,
                     size_t tableSize, const std::string &weightsPath,
                     WeightNaming naming, const DeviceApi &device,
                     std::unique_ptr<Model> &model);
  /// As load, from a model library (ModelLibrary::open for one attnc
  /// --shared wrote, ModelLibrary::linked for <name>_library), with the
  /// tensor naming its plan states, as `options` say. The model keeps the
  /// library loaded.
  static Status load(std::shared_ptr<const ModelLibrary> library,
                     const std::string &weightsPath,
                     std::unique_ptr<Model> &model,
                     const LoadOptions &options = {});
  ~Model();

  /// The GPU API the model runs on ("cuda", "opencl"), or "cpu".
  std::string device() const { return device_ ? device_->name : "cpu"; }
  /// Where the weights came from, for a log: "laid out from '<checkpoint>'"
  /// or "mapped from '<packed weights>'", with what happened to the packed
  /// weights file when one was asked for and not used.
  const std::string &weightSource() const { return weightSource_; }

  /// The tensor naming `plan` states (`weight_naming`: plans of Hugging Face
  /// configs); InvalidArgument when it states none.
  static Status namingOf(const ModelPlan &plan, WeightNaming &naming);

  /// The tensors (names, f32, shapes) a checkpoint needs for `plan` under
  /// `naming`: what load() checks a weight file against.
  static std::vector<ExpectedTensor> requiredTensors(const ModelPlan &plan,
                                                     WeightNaming naming);

  /// Writes seeded random weights for `plan` under `naming` to `path`: norm
  /// weights 1 and biases 0, everything else uniform in ±1/sqrt(the tensor's
  /// last extent), stored as `stored` (F32, F16 or BF16). For running a
  /// compiled model without a checkpoint.
  static Status writeRandomWeights(const ModelPlan &plan, WeightNaming naming,
                                   uint64_t seed, const std::string &path,
                                   TensorType stored = TensorType::F32);

  const ModelPlan &plan() const { return plan_; }
  int dModel() const { return plan_.dModel; }
  /// Vocabulary of the encoder's and decoder's embeddings, of the head.
  int sourceVocabulary() const;
  int targetVocabulary() const;

  /// Cache geometry for `maxSequences` sequences: the decoder's cached
  /// self-attention layers, and its cross-attention layers (their K and V
  /// of the encoder output, computed once per input). Sliding-window layers
  /// get a pool of each sequence's window and, for the one sequence a pass
  /// may grow by more than a token, `passRows` rows (a prompt's chunk given
  /// to append; prefill needs none).
  Status selfCacheConfig(int maxSequences, KvCacheConfig &config,
                         int passRows = kPassRows) const;
  static constexpr int kPassRows = 512;
  Status crossCacheConfig(int maxSequences, KvCacheConfig &config) const;

  /// Runs the encoder over `tokens` [length]:
  ///   memory [length][dModel], the final norm's output.
  Status encode(const int32_t *tokens, int length, std::vector<float> &memory,
                ExecutionContext &context) const;

  /// Computes every cross-attention layer's K and V of `memory`
  /// [length][dModel] and stores them as the `length` tokens of `sequence`
  /// (which must be empty) in `crossCache`.
  Status storeCrossKeyValues(const float *memory, int length,
                             KvCache &crossCache, SequenceId sequence,
                             ExecutionContext &context) const;

  /// One decoder step for `batch` sequences: token `tokens[b]` is appended
  /// at the end of `selfSequences[b]` in `selfCache` (its position is the
  /// sequence's length before the step) and attends to everything cached
  /// there, and, through cross-attention, to `crossSequences[b]` of
  /// `crossCache` (null for decoder-only models).
  ///   logits [batch][targetVocabulary]
  ///   greedyTokens [batch] (optional): each sequence's greedy token, the
  ///     lowest id of its largest logit, or -1 where a logit is NaN; from
  ///     the head kernel's fused argmax when the plan has one
  /// On failure no sequence has grown.
  /// With `trace`, also records the last cross-attention layer's weights.
  Status decodeStep(const SequenceId *selfSequences,
                    const SequenceId *crossSequences, const int32_t *tokens,
                    int batch, KvCache &selfCache, const KvCache *crossCache,
                    float *logits, ExecutionContext &context,
                    CrossAttentionTrace *trace = nullptr,
                    int32_t *greedyTokens = nullptr) const;

  /// Prompt processing of a decoder-only model: the prefill kernels over
  /// `tokens` [length], storing every cached layer's K/V as the tokens of
  /// `sequence` (which must be empty) in `selfCache`.
  ///   logits [targetVocabulary]: the next token's, after the last one
  ///   greedyToken (optional): its greedy choice, as decodeStep's
  /// On failure the sequence stays empty.
  Status prefill(const int32_t *tokens, int length, KvCache &selfCache,
                 SequenceId sequence, float *logits, ExecutionContext &context,
                 int32_t *greedyToken = nullptr) const;

  /// Decoder-only models: appends `tokens` [rows] to the ends of their
  /// `sequences` [rows] in `selfCache`. A sequence may take several rows (a
  /// prompt's chunk, in order, after the tokens it already caches) beside
  /// other sequences' one (their decode steps); every row attends to its
  /// sequence's cache up to its own position. Leading rows of one sequence
  /// (a chunk) are attended by the prefill kernels on the CPU, the other
  /// rows by the decode kernels. The head
  /// runs on the rows `headRows` [headRowCount] (ascending; none: no head):
  ///   logits [headRowCount][targetVocabulary]
  ///   greedyTokens [headRowCount] (optional), as decodeStep's
  /// On failure no sequence has grown.
  Status append(const SequenceId *sequences, const int32_t *tokens, int rows,
                KvCache &selfCache, const int32_t *headRows, int headRowCount,
                float *logits, ExecutionContext &context,
                int32_t *greedyTokens = nullptr) const;

  /// The decoder over a whole prefix `tokens` [length] with no cache
  /// (prefill kernels, causal), cross-attending to `memory`
  /// [memoryLength][dModel] (ignored without cross layers):
  ///   logits [length][targetVocabulary]
  Status decodeWithoutCache(const int32_t *tokens, int length,
                            const float *memory, int memoryLength,
                            float *logits, ExecutionContext &context) const;

private:
  struct Weights; // per op, laid out for its kernels
  friend class ModelRunner;
  friend class PackedWeights;
  friend struct ExecutionContext::Buffers; // sized from the plan
  Model() = default;

  /// Every load(): `device` null for the CPU; `packedPath` empty for none.
  static Status load(const std::string &planJson, const KernelEntry *table,
                     size_t tableSize, const std::string &weightsPath,
                     WeightNaming naming, const DeviceApi *device,
                     const std::string &packedPath,
                     std::unique_ptr<Model> &model);
  /// Lays the checkpoint `file` (opened from `weightsPath`) out for `plan`'s
  /// kernels: `weights` parallel to its ops.
  static Status layOut(const ModelPlan &plan, WeightNaming naming,
                       const std::string &weightsPath, const Checkpoint &file,
                       std::vector<std::shared_ptr<const Weights>> &weights);

  ModelPlan plan_;
  std::vector<std::shared_ptr<const Weights>> weights_; // parallel to ops
  const DeviceApi *device_ = nullptr;                   ///< null: CPU kernels
  std::shared_ptr<const ModelLibrary> library_; ///< keeps its kernels loaded
  std::string weightSource_;
};

const char *name(WeightNaming naming);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODEL_H
