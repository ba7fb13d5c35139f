//===- ModelPlan.cpp - the plan attnc writes, as the runtime reads it -----===//

#include "attn/runtime/ModelPlan.h"

#include "attn/runtime/Int4Weights.h"
#include "attn/runtime/PlanSchema.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include <cstring>
#include <map>

namespace attn::runtime {

namespace {
using json = nlohmann::json;

Status planError(const std::string &message) {
  return Status(StatusCode::InvalidArgument, "model plan: " + message);
}

/// Reads fields of one JSON object, remembering the first problem.
class Fields {
public:
  Fields(const json &object, std::string where)
      : object(object), where(std::move(where)) {}

  /// An integer in [min, max] (a size: positive unless said otherwise;
  /// 2^30 bounds what any extent of a generated kernel can be).
  int integer(const char *key, int64_t min = 1, int64_t max = 1 << 30) {
    const json *value = find(key);
    if (value && (!value->is_number_integer() || value->get<int64_t>() < min ||
                  value->get<int64_t>() > max)) {
      fail(std::string("'") + key + "' must be an integer in [" +
           std::to_string(min) + ", " + std::to_string(max) + "]");
      return int(min);
    }
    return value ? int(value->get<int64_t>()) : int(min);
  }
  std::string string(const char *key, bool required = true) {
    const json *value = required ? find(key) : findOptional(key);
    if (value && !value->is_string())
      fail(std::string("'") + key + "' must be a string");
    return value && value->is_string() ? value->get<std::string>() : "";
  }
  bool boolean(const char *key) {
    const json *value = findOptional(key);
    return value && value->is_boolean() && value->get<bool>();
  }
  /// A number (required); 0 when it is missing or not a number.
  double number(const char *key) {
    const json *value = find(key);
    if (value && !value->is_number())
      fail(std::string("'") + key + "' must be a number");
    return value && value->is_number() ? value->get<double>() : 0.0;
  }
  const Status &status() const { return status_; }
  void fail(const std::string &message) {
    if (status_)
      status_ = planError(where + ": " + message);
  }

private:
  const json *findOptional(const char *key) {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  const json *find(const char *key) {
    const json *value = findOptional(key);
    if (!value)
      fail(std::string("missing '") + key + "'");
    return value;
  }
  const json &object;
  std::string where;
  Status status_;
};
} // namespace

Status parsePlan(const std::string &text, const KernelEntry *table,
                 size_t tableSize, ModelPlan &plan, const std::string &device) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object())
    return planError("not a JSON object");
  std::map<std::string, const KernelEntry *> kernels;
  for (size_t i = 0; i < tableSize; i++)
    if (table[i].name && table[i].function)
      kernels[table[i].name] = &table[i];

  // A plan of another schema would be misread: refused by its version.
  auto version = root.find(plan::kPlanVersion);
  if (version == root.end() || !version->is_number_integer() ||
      version->get<int64_t>() != plan::kVersion)
    return planError(
        "plan_version " +
        (version == root.end() ? std::string("missing") : version->dump()) +
        ", this runtime reads version " + std::to_string(plan::kVersion) +
        " (regenerate the model library with this attnc)");
  ModelPlan result;
  Fields model(root, "model");
  result.name = model.string(plan::kModel);
  result.kind = model.string(plan::kKind);
  result.dModel = model.integer(plan::kDModel);
  result.maxBatch = model.integer(plan::kMaxBatch);
  if (root.contains(plan::kKvBytes) && root[plan::kKvBytes].is_number_integer())
    result.kvBytes = root[plan::kKvBytes].get<int64_t>();
  result.weightPanel = model.integer(plan::kWeightPanel, 1, 1024);
  if (root.contains(plan::kWeightNaming) && root[plan::kWeightNaming].is_string())
    result.weightNaming = root[plan::kWeightNaming].get<std::string>();
  if (root.contains(plan::kNormWeightOffset)) {
    const json &offset = root[plan::kNormWeightOffset];
    if (!offset.is_number() || !std::isfinite(offset.get<double>()))
      return planError("norm_weight_offset must be a finite number");
    result.normWeightOffset = offset.get<float>();
  }
  std::string weights = model.string(plan::kWeightDtype);
  if (model.status() && !parseDType(weights, result.weightType))
    return planError("weight_dtype must be f32, f16, bf16, i8 or i4, got '" +
                     weights + "'");
  result.weightGroup = model.integer(plan::kWeightGroup, 0, 128);
  const bool int4 = result.weightType == DType::I4,
             int8 = result.weightType == DType::I8;
  if (model.status() &&
      (int4   ? !isInt4Group(result.weightGroup)
       : int8 ? result.weightGroup != 0 && !isInt8Group(result.weightGroup)
              : result.weightGroup != 0))
    return planError(
        "weight_group " + std::to_string(result.weightGroup) +
        (int4   ? std::string(" must be ") + kInt4Groups + " for i4 weights"
         : int8 ? std::string(" must be 0, ") + kInt8Groups + " for i8 weights"
                : " must be 0 for " + weights + " weights"));
  if (root.contains(plan::kWeightFormat) &&
      root[plan::kWeightFormat].is_string() &&
      !root[plan::kWeightFormat].get<std::string>().empty()) {
    const std::string format = root[plan::kWeightFormat].get<std::string>();
    Int4Format parsed;
    if (!parseInt4Format(format, parsed))
      return planError(std::string("weight_format must be ") + kInt4Formats +
                       ", got '" + format + "'");
    if (!int4)
      return planError("weight_format " + format + " needs i4 weights, not " +
                       weights);
    result.weightFormat = parsed;
  }
  if (root.contains(plan::kWeightMins)) {
    const json &mins = root[plan::kWeightMins];
    if (!mins.is_boolean())
      return planError("weight_mins must be true or false");
    result.weightMins = mins.get<bool>();
    if (result.weightMins && (!int4 || result.weightFormat))
      return planError("weight_mins needs i4 weights without a "
                       "weight_format, not " +
                       weights);
  }
  // The kernel sets the library holds (plans before GPU targets had only
  // CPU ones): the one asked for must be among them.
  bool hasDevice = device == plan::kCpu && !root.contains(plan::kDevices);
  if (root.contains(plan::kDevices) && root[plan::kDevices].is_array())
    for (const json &listed : root[plan::kDevices])
      hasDevice |= listed.is_string() && listed.get<std::string>() == device;
  if (!hasDevice)
    return planError(
        device == plan::kCpu
            ? "the library holds no CPU kernels (attnc --target=cuda alone); "
              "generate it with a CPU target too (e.g. "
              "--target=x86-64-dispatch,cuda)"
            : "the library holds no " + device +
                  " kernels; generate it with --target=...," + device);
  const std::string suffix = device == plan::kCpu ? "" : "_" + device;
  if (!model.status())
    return model.status();
  auto layers = root.find(plan::kLayers), ops = root.find(plan::kOps);
  if (layers == root.end() || !layers->is_array() || ops == root.end() ||
      !ops->is_array())
    return planError("missing 'layers' or 'ops' arrays");
  // How each linear kernel reads its weights, by name.
  std::map<std::string, MatrixLayout> linearKernels;
  if (auto table = root.find(plan::kLinearKernels);
      table == root.end() || !table->is_object())
    return planError("missing the 'linear_kernels' object");
  for (const auto &[name, entry] : root[plan::kLinearKernels].items()) {
    if (!entry.is_object())
      return planError("linear kernel '" + name + "' is not an object");
    Fields f(entry, "linear kernel '" + name + "'");
    MatrixLayout layout;
    const std::string dtype = f.string(plan::kWeightDtype);
    if (f.status() && !parseDType(dtype, layout.type))
      f.fail("weight_dtype must be f32, f16, bf16, i8, i4 or mxfp4, got '" +
             dtype + "'");
    layout.panel = f.integer(plan::kWeightPanel, 1, 1024);
    layout.group = f.integer(plan::kWeightGroup, 0, 1024);
    if (f.status() &&
        (layout.type == DType::I4   ? !isInt4Group(layout.group)
         : layout.type == DType::I8 ? layout.group != 0 &&
                                          !isInt8Group(layout.group)
         : layout.type == DType::MXFP4 ? layout.group != 0 &&
                                             layout.group != 32
                                       : layout.group != 0))
      f.fail("weight_group " + std::to_string(layout.group) +
             " does not suit " + dtype + " weights");
    if (!f.status())
      return f.status();
    linearKernels[name] = layout;
  }
  std::map<std::string, const json *> layerByName;
  for (const json &layer : *layers)
    if (layer.is_object() && layer.contains(plan::kName) &&
        layer[plan::kName].is_string())
      layerByName[layer[plan::kName].get<std::string>()] = &layer;

  for (const json &entry : *ops) {
    if (!entry.is_object())
      return planError("an op is not an object");
    PlanOp op;
    Fields fields(entry, "op");
    std::string kind = fields.string(plan::kOp);
    op.name = fields.string(plan::kName);
    op.stack = fields.string(plan::kStack, /*required=*/false);
    Fields at(entry, "op '" + op.name + "'");
    auto resolve = [&](Fields &from, const char *key, Kernel &kernel) {
      std::string name = from.string(key);
      if (!name.empty())
        name += suffix;
      auto it = kernels.find(name);
      if (!name.empty() && it == kernels.end())
        from.fail("kernel '" + name +
                  "' is not in the kernel table (header and library from "
                  "different attnc runs?)");
      kernel.name = name;
      if (it != kernels.end() && !it->second->metadata)
        from.fail("kernel '" + name + "' has no metadata in the kernel table");
      if (it != kernels.end()) {
        kernel.function = it->second->function;
        kernel.metadata = it->second->metadata;
      }
      auto gemv = kernels.find(name + "_gemv");
      if (gemv != kernels.end()) {
        kernel.fewTokens = gemv->second->function;
        kernel.fewTokensMetadata = gemv->second->metadata;
      }
      auto grouped = kernels.find(name + "_experts");
      if (grouped != kernels.end()) {
        kernel.grouped = grouped->second->function;
        kernel.groupedMetadata = grouped->second->metadata;
      }
    };
    // A linear kernel, with how it reads its weights (required).
    auto resolveLinear = [&](Fields &from, const char *key,
                             LinearKernel &kernel) {
      resolve(from, key, kernel);
      const std::string name = from.string(key);
      auto layout = linearKernels.find(name);
      if (layout == linearKernels.end() && !name.empty())
        from.fail("kernel '" + name + "' has no linear_kernels entry");
      else if (layout != linearKernels.end())
        kernel.weights = layout->second;
    };
    if (kind == plan::kOpEmbedding) {
      op.kind = OpKind::Embedding;
      op.vocabSize = at.integer(plan::kVocabSize);
      op.positions = at.string(plan::kPositions);
      op.maxPositions = at.integer(plan::kMaxPositions);
      if (entry.contains(plan::kPositionOffset))
        op.positionOffset = at.integer(plan::kPositionOffset, 0);
      resolve(at, plan::kKernel, op.kernel);
    } else if (kind == plan::kOpNorm) {
      op.kind = OpKind::Norm;
      op.layerNorm = at.string(plan::kKind) == plan::kLayerNorm;
      op.post = at.boolean(plan::kPost);
      op.residualAdd = at.boolean(plan::kResidualAdd);
      resolve(at, plan::kKernel, op.kernel);
    } else if (kind == plan::kOpFfn) {
      op.kind = OpKind::Ffn;
      op.intermediateSize = at.integer(plan::kIntermediateSize);
      op.bias = at.boolean(plan::kBias);
      op.gated = at.boolean(plan::kGated);
      resolveLinear(at, plan::kUpKernel, op.up);
      resolveLinear(at, plan::kDownKernel, op.down);
      if (auto experts = entry.find(plan::kExperts); experts != entry.end()) {
        if (!experts->is_object())
          return planError("op '" + op.name + "': experts must be an object");
        Fields e(*experts, "op '" + op.name + "' experts");
        PlanOp::Experts &x = op.experts;
        const std::string rule = e.string(plan::kRouter);
        if (rule == plan::kRouterSigmoidTopK)
          x.rule = PlanOp::Experts::Rule::SigmoidTopK;
        else if (rule != plan::kRouterSoftmaxTopK)
          e.fail(std::string("router must be \"") + plan::kRouterSoftmaxTopK +
                 "\" or \"" + plan::kRouterSigmoidTopK + "\"");
        x.count = e.integer(plan::kCount, 2, 1 << 16);
        x.perToken = e.integer(plan::kPerToken, 1, x.count);
        x.normalize = e.boolean(plan::kNormalize);
        x.groups = e.integer(plan::kGroups, 1, x.count);
        x.groupTopK = e.integer(plan::kGroupTopK, 1, x.groups);
        x.scale = e.number(plan::kScale);
        if (e.status() && (x.count % x.groups ||
                           x.perToken > x.groupTopK * (x.count / x.groups)))
          e.fail("groups " + std::to_string(x.groups) + " (top " +
                 std::to_string(x.groupTopK) + ") cannot give " +
                 std::to_string(x.perToken) + " of " +
                 std::to_string(x.count) + " experts");
        if (e.status() && x.rule == PlanOp::Experts::Rule::SigmoidTopK &&
            x.groups > 1 && x.count / x.groups < 2)
          e.fail("sigmoid_top_k groups need 2 experts or more");
        if (e.status() && !(std::isfinite(x.scale) && x.scale > 0))
          e.fail("'scale' must be a positive number");
        resolve(e, plan::kRouterKernel, x.router);
        const std::string dtype = e.string(plan::kRouterDtype);
        if (e.status() && (!parseDType(dtype, x.routerType) ||
                           x.routerType == DType::I4 ||
                           x.routerType == DType::I8))
          e.fail("router_dtype must be f32, f16 or bf16, got '" + dtype + "'");
        x.routerPanel = e.integer(plan::kRouterPanel, 1, 1024);
        // The experts' weights: the model's, or a checkpoint's MXFP4.
        const std::string expertDtype = e.string(plan::kWeightDtype);
        if (e.status() && (!parseDType(expertDtype, x.weightType) ||
                           (x.weightType != result.weightType &&
                            x.weightType != DType::MXFP4)))
          e.fail("experts' weight_dtype must be the model's (" +
                 std::string(dtypeName(result.weightType)) +
                 ") or mxfp4, got '" + expertDtype + "'");
        x.weightPanel = e.integer(plan::kWeightPanel, 1, 1024);
        // Each expert's rows of the stacked weights must begin a panel
        // (Experts.h views them in place); attnc's verifier ensures it.
        const int64_t width = int64_t(op.gated ? 2 : 1) * op.intermediateSize;
        if (e.status() && x.weightPanel > 0 &&
            (width % x.weightPanel || result.dModel % x.weightPanel))
          e.fail("an expert's " + std::to_string(width) + " and " +
                 std::to_string(result.dModel) +
                 " outputs are not whole panels of " +
                 std::to_string(x.weightPanel));
        if (!e.status())
          return e.status();
        if (auto shared = experts->find(plan::kShared);
            shared != experts->end()) {
          if (!shared->is_object())
            return planError("op '" + op.name +
                             "': experts shared must be an object");
          Fields s(*shared, "op '" + op.name + "' shared experts");
          x.shared.intermediateSize = s.integer(plan::kIntermediateSize, 1);
          x.shared.gate = s.boolean(plan::kSharedGate);
          resolve(s, plan::kUpKernel, x.shared.up);
          resolve(s, plan::kDownKernel, x.shared.down);
          if (!s.status())
            return s.status();
        }
      }
    } else if (kind == plan::kOpOutputHead) {
      op.kind = OpKind::OutputHead;
      op.vocabSize = at.integer(plan::kVocabSize);
      op.bias = at.boolean(plan::kBias);
      op.argmax = at.boolean(plan::kArgmax);
      op.tied = at.boolean(plan::kTied);
      resolve(at, plan::kKernel, op.kernel);
      // The head's weights: the model's, or a float type of its own.
      const std::string dtype = at.string(plan::kWeightDtype);
      if (at.status() &&
          (!parseDType(dtype, op.headType) ||
           (op.headType != result.weightType && op.headType > DType::I8)))
        at.fail("output head's weight_dtype must be the model's (" +
                std::string(dtypeName(result.weightType)) +
                ") or f32, f16, bf16 or i8, got '" + dtype + "'");
      op.headPanel = at.integer(plan::kWeightPanel, 1, 1024);
      // Its group: int4's is the blocks'; int8's its own (16 or 32) or
      // none (a scale per feature); other types have none.
      op.headGroup = at.integer(plan::kWeightGroup, 0, 1024);
      if (at.status() &&
          (op.headType == DType::I4 ? op.headGroup != result.weightGroup
           : op.headType == DType::I8
               ? op.headGroup != 0 && !isInt8Group(op.headGroup)
               : op.headGroup != 0))
        at.fail("output head's weight_group " +
                std::to_string(op.headGroup) + " does not suit its " +
                dtypeName(op.headType) + " weights");
    } else if (kind == plan::kOpAttention) {
      op.kind = OpKind::Attention;
      auto it = layerByName.find(op.name);
      if (it == layerByName.end())
        return planError("op '" + op.name + "' has no entry in 'layers'");
      const json &layer = *it->second;
      Fields l(layer, "layer '" + op.name + "'");
      op.cross = l.string(plan::kKind) == plan::kCross;
      op.queryHeads = l.integer(plan::kNumQueryHeads);
      op.kvHeads = l.integer(plan::kNumKvHeads);
      op.headDim = l.integer(plan::kHeadDim);
      if (layer.contains(plan::kScale) && layer[plan::kScale].is_number())
        op.scale = layer[plan::kScale].get<float>();
      op.bias = l.boolean(plan::kProjectionBias);
      op.outputBias = layer.contains(plan::kOutputBias) ? l.boolean(plan::kOutputBias)
                                                    : op.bias;
      op.fusedProjections = l.boolean(plan::kFusedProjections);
      op.fusedCacheAppend = l.boolean(plan::kFusedCacheAppend);
      op.rope = layer.contains(plan::kRopeTheta);
      if (layer.contains(plan::kQkNorm)) {
        const std::string scope = l.string(plan::kQkNorm);
        if (scope != plan::kQkNormHead && scope != plan::kQkNormProjection)
          return planError("layer '" + op.name + "': qk_norm must be \"" +
                           plan::kQkNormHead + "\" or \"" +
                           plan::kQkNormProjection + "\"");
        op.qkNorm = scope == plan::kQkNormHead ? PlanOp::QkNorm::Head
                                               : PlanOp::QkNorm::Projection;
      }
      op.sinks = l.boolean(plan::kSinks);
      op.keyPadding = l.boolean(plan::kKeyPadding);
      if (layer.contains(plan::kWindow))
        op.window = l.integer(plan::kWindow);
      resolve(l, plan::kPrefillKernel, op.prefill);
      resolveLinear(l, plan::kQueryKernel, op.query);
      if (!op.fusedProjections)
        resolveLinear(l, plan::kKeyValueKernel, op.keyValue);
      if (layer.contains(plan::kValueKernel))
        resolveLinear(l, plan::kValueKernel, op.value);
      resolveLinear(l, plan::kOutputKernel, op.output);
      // V apart from K: the layer's K/V kernel computes K alone, and the
      // runtime stores K and V into the cache (attnc's verifier).
      if (l.status() && op.value &&
          (op.fusedProjections || op.fusedCacheAppend || op.cross ||
           !op.keyValue))
        l.fail("a value_kernel needs a self layer with a key_value_kernel, "
               "without fused projections or a fused cache append");
      if (layer.contains(plan::kLatent)) {
        Fields x(layer[plan::kLatent], "layer '" + op.name + "' latent");
        PlanOp::Latent &latent = op.latent;
        latent.rank = x.integer(plan::kRank, 1);
        latent.ropeDim = x.integer(plan::kRopeDim, 2);
        latent.nopeDim = x.integer(plan::kNopeDim, 1);
        latent.valueDim = x.integer(plan::kValueDim, 1);
        latent.queryRank = x.integer(plan::kQueryRank, 0);
        if (latent.queryRank) {
          resolve(x, plan::kQueryDownKernel, latent.queryDown);
          resolve(x, plan::kQueryNormKernel, latent.queryNorm);
        }
        resolve(x, plan::kLatentNormKernel, latent.latentNorm);
        resolve(x, plan::kAbsorbKernel, latent.absorb);
        resolve(x, plan::kUnabsorbKernel, latent.unabsorb);
        // What the runtime's latent attention assumes (attnc's verifier).
        if (x.status() &&
            (op.kvHeads != 1 || op.headDim != latent.ropeDim + latent.rank ||
             op.cross || op.fusedProjections || op.fusedCacheAppend ||
             op.bias || op.outputBias || op.qkNorm != PlanOp::QkNorm::None ||
             !latent.absorb.grouped || !latent.unabsorb.grouped))
          x.fail("must be one key head of rope_dim + rank channels, a self "
                 "layer without biases, QK-norm or fused projections, and "
                 "its absorb and unabsorb kernels expert kernels");
        if (!x.status())
          return x.status();
      }
      if (layer.contains(plan::kKvCache)) {
        op.cached = true;
        resolve(l, plan::kDecodeKernel, op.decode);
        Fields cache(layer[plan::kKvCache], "layer '" + op.name + "' kv_cache");
        op.pageSize = cache.integer(plan::kPageSize);
        op.maxLength = cache.integer(plan::kMaxLength);
        std::string dtype = cache.string(plan::kDtype);
        if (cache.status() && !parseCacheDType(dtype, op.cacheType))
          cache.fail("dtype must be f32, f16, bf16 or i8, got '" + dtype + "'");
        if (!cache.status())
          return cache.status();
      }
      if (op.fusedCacheAppend && !op.cached)
        return planError("layer '" + op.name +
                         "' fuses a cache append but has no cache");
      if (!l.status())
        return l.status();
    } else {
      return planError("unknown op '" + kind + "'");
    }
    if (!fields.status())
      return fields.status();
    if (!at.status())
      return at.status();
    result.ops.push_back(std::move(op));
  }
  bool hasProjections = false;
  for (size_t i = 0; i < result.ops.size(); i++) {
    const PlanOp &op = result.ops[i];
    hasProjections |= op.kind == OpKind::Attention && bool(op.query);
    // It normalizes the output the sublayer before it left unadded.
    if (op.residualAdd &&
        (op.post || i == 0 ||
         (result.ops[i - 1].kind != OpKind::Attention &&
          result.ops[i - 1].kind != OpKind::Ffn)))
      return planError("norm '" + op.name +
                       "' is residual_add but follows no attention layer or "
                       "FFN");
  }
  if (!hasProjections)
    return planError("the model describes attention layers alone; running a "
                     "whole model needs a description of stacks of blocks");
  plan = std::move(result);
  return Status::ok();
}

} // namespace attn::runtime
