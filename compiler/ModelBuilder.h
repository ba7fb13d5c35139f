//===- ModelBuilder.h - building attn.model ops for the importers -*- C++
//-*-===//

#ifndef ATTNC_MODELBUILDER_H
#define ATTNC_MODELBUILDER_H

#include "DescriptionImport.h"

#include "attn/AttnOps.h"
#include "attn/JsonReader.h"

#include "attn/runtime/Int4Weights.h"
#include "mlir/IR/Builders.h"

namespace attnc {

/// One attention layer as the importers see it.
struct LayerConfig {
  mlir::attn::LayerKind kind = mlir::attn::LayerKind::Self;
  int64_t queryHeads = 0, kvHeads = 0, headDim = 0;
  mlir::attn::MaskKind mask = mlir::attn::MaskKind::None;
  std::optional<int64_t> window;
  std::optional<float> scale, softcap, ropeTheta;
  bool alibi = false;
  bool keyPadding = false;  ///< prefill over padded batches masks by length
  bool sinks = false;       ///< a learned sink logit per query head
  bool bf16Compute = false; ///< prefill products on bf16 operands
  bool projectionBias = false;
  std::optional<bool> outputBias; ///< absent: as projectionBias
  mlir::DictionaryAttr ropeScaling; ///< null: none
  mlir::attn::QkNormAttr qkNorm;    ///< null: none
  std::optional<int64_t> ropeDim;   ///< partial rotary; absent: all
  mlir::attn::LatentAttr latent;    ///< null: not a latent layer
  mlir::attn::KvCacheAttr cache;    ///< null: the layer never decodes
  std::string stack;                ///< "encoder", "decoder" or empty
};

/// Where a norm sits in a block: before its sublayer (which reads it),
/// after it normalizing the residual stream (post-norm blocks), or after it
/// normalizing the sublayer's output before it joins the stream
/// (residual_add: Gemma's post-attention and post-feedforward norms).
enum class NormPlacement { Pre, Post, ResidualAdd };

/// Creates `module { attn.model @name {...} }` and appends layers named
/// layer0, layer1, ... in execution order.
/// What an FFN adds to its kind (FfnOp): gpt-oss's gated product
/// (swiglu_alpha and swiglu_limit: the gate's SiLU with a gain, gate and up
/// clamped; absent: SwiGLU's) and its experts' own weight type
/// (expert_weight_dtype, a checkpoint's MXFP4; null: the model's).
struct FfnForm {
  std::optional<float> swigluAlpha, swigluLimit;
  mlir::Type expertWeights;
};

/// How a mixture's router limits and scales its choice (ExpertsAttr): the
/// experts in `groups` groups, the `groupTopK` best eligible; the weights
/// times `scale`.
struct ExpertRouting {
  int64_t groups = 1, groupTopK = 1;
  double scale = 1.0;
};

class ModelBuilder {
public:
  ModelBuilder(mlir::MLIRContext &context, mlir::Location loc,
               llvm::StringRef name, llvm::StringRef kind, int64_t dModel,
               int64_t maxBatch);

  /// Appends attention layer `layer<N>` (N counts layers) and returns N.
  int addLayer(const LayerConfig &config, mlir::Location loc);
  /// The rest of a block, appended in execution order; `stack` may be empty.
  /// `scale` multiplies the token rows (1: none); learned positions are
  /// read `positionOffset` rows into their table.
  void addEmbedding(llvm::StringRef name, int64_t vocabSize,
                    mlir::attn::PositionKind positions, int64_t maxPositions,
                    llvm::StringRef stack, mlir::Location loc,
                    float scale = 1.0f, int64_t positionOffset = 0);
  void addNorm(llvm::StringRef name, mlir::attn::NormKind kind, float eps,
               llvm::StringRef stack, mlir::Location loc,
               NormPlacement placement = NormPlacement::Pre);
  void addFfn(llvm::StringRef name, mlir::attn::Activation activation,
              int64_t intermediateSize, bool bias, bool gated,
              llvm::StringRef stack, mlir::Location loc,
              mlir::attn::ExpertsAttr experts = {},
              const FfnForm &form = {});
  /// A mixture of experts for addFfn (ExpertsAttr: the router's rule; shared
  /// experts of `shared` hidden features, 0: none, their output gated by
  /// sigmoid(x · g) with `sharedGate`; group-limited choice; the weights'
  /// scale).
  mlir::attn::ExpertsAttr experts(mlir::attn::RouterKind router, int64_t count,
                                  int64_t perToken, bool normalize,
                                  int64_t shared = 0, bool sharedGate = false,
                                  ExpertRouting routing = {});
  /// How the model's linear kernels read their weights (setWeights).
  void setWeightDtype(mlir::Type type,
                      std::optional<int64_t> group = std::nullopt,
                      std::optional<::attn::Int4Format> format = std::nullopt);
  /// How its checkpoints name their tensors: llama, gpt2 or bart.
  void setWeightNaming(llvm::StringRef naming);
  /// `tied`: the head's weight is the embedding's (tie_word_embeddings);
  /// `softcap`: each logit capped to softcap·tanh(logit/softcap);
  /// `weights`: the head's own weight type (null: the model's).
  void addOutputHead(int64_t vocabSize, bool bias, mlir::Location loc,
                     bool tied = false,
                     std::optional<float> softcap = std::nullopt,
                     mlir::Type weights = {});
  /// The checkpoint stores RMS norm weights as w - offset (Gemma: 1).
  void setNormWeightOffset(float offset);
  /// Verifies and hands over the module; null (after diagnostics) if invalid.
  mlir::OwningOpRef<mlir::ModuleOp> finish();

private:
  mlir::OpBuilder builder;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  int layerCount = 0;
};

/// A KV cache attribute from its parts, with `options` applied; emits an
/// error at `loc` and returns null for an unknown layout or dtype.
mlir::attn::KvCacheAttr makeKvCache(mlir::MLIRContext &context,
                                    mlir::Location loc, llvm::StringRef layout,
                                    int64_t pageSize, llvm::StringRef dtype,
                                    int64_t maxLength,
                                    const ImportOptions &options);

/// QK-norm over each head (Qwen3, Gemma 3) or over the whole query and key
/// projections (OLMo 2) with `eps`, as the dialect's attribute.
mlir::attn::QkNormAttr makeQkNorm(mlir::MLIRContext &context,
                                  mlir::attn::QkNormScope scope, float eps);
/// A latent layer's sizes (#attn.latent), or null after reporting at `loc`
/// what its verifier refuses.
mlir::attn::LatentAttr makeLatent(mlir::MLIRContext &context,
                                  mlir::Location loc, int64_t rank,
                                  int64_t ropeDim, int64_t nopeDim,
                                  int64_t valueDim, int64_t queryRank,
                                  float eps);

/// A flat JSON object of numbers, strings and booleans (a RoPE scaling rule)
/// as a DictionaryAttr; reports anything else at its location and returns
/// null.
mlir::DictionaryAttr jsonToDictionary(const llvm::json::Object &object,
                                      const mlir::attn::JsonPath &path,
                                      const mlir::attn::JsonLocator &locator,
                                      mlir::MLIRContext &context);

/// Gives `model`'s output head weights of type `type` of its own (null:
/// the model's) in groups of `group` inputs (0: none; i8's 16 or 32), for
/// the verifier to check.
void setHeadWeights(mlir::attn::ModelOp model, mlir::Type type,
                    uint64_t group = 0);

/// Whether `name` can prefix C symbols.
bool isCIdentifier(llvm::StringRef name);

/// Sets how `model`'s linear kernels read their weights (null or f32:
/// absent) and the group of i4 weights: `group`, or kDefaultWeightGroup for
/// i4, and the format of a checkpoint that holds them quantized (GPTQ,
/// AWQ), or `mins`: i4 with a minimum per group (GGUF's Q4_1, Q4_K). A
/// group, format or minimums with another type stay, for the verifier to
/// refuse. Every projection then reads these: its own weight type
/// (#attn.weights, a GGUF file's mixed blocks) is dropped.
void setWeights(mlir::attn::ModelOp model, mlir::Type type,
                std::optional<int64_t> group,
                std::optional<::attn::Int4Format> format = std::nullopt,
                bool mins = false);

} // namespace attnc

#endif // ATTNC_MODELBUILDER_H
