//===- ModelPlan.cpp - the plan attnc writes, as the runtime reads it -----===//

#include "attn/runtime/ModelPlan.h"

#include <nlohmann/json.hpp>

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

  ModelPlan result;
  Fields model(root, "model");
  result.name = model.string("model");
  result.kind = model.string("kind");
  result.dModel = model.integer("d_model");
  result.maxBatch = model.integer("max_batch");
  if (root.contains("kv_bytes") && root["kv_bytes"].is_number_integer())
    result.kvBytes = root["kv_bytes"].get<int64_t>();
  result.weightPanel = model.integer("weight_panel", 1, 1024);
  if (root.contains("weight_naming") && root["weight_naming"].is_string())
    result.weightNaming = root["weight_naming"].get<std::string>();
  // Plans from before weight dtypes hold f32 weights.
  if (root.contains("weight_dtype")) {
    std::string weights = model.string("weight_dtype");
    if (weights != "f32" && weights != "f16" && weights != "bf16" &&
        weights != "i8")
      return planError("weight_dtype must be f32, f16, bf16 or i8, got '" +
                       weights + "'");
    result.weightType = weights == "f16"    ? DType::F16
                        : weights == "bf16" ? DType::BF16
                        : weights == "i8"   ? DType::I8
                                            : DType::F32;
  }
  // The kernel sets the library holds (plans before GPU targets had only
  // CPU ones): the one asked for must be among them.
  bool hasDevice = device == "cpu" && !root.contains("devices");
  if (root.contains("devices") && root["devices"].is_array())
    for (const json &listed : root["devices"])
      hasDevice |= listed.is_string() && listed.get<std::string>() == device;
  if (!hasDevice)
    return planError(
        device == "cpu"
            ? "the library holds no CPU kernels (attnc --target=cuda alone); "
              "generate it with a CPU target too (e.g. "
              "--target=x86-64-dispatch,cuda)"
            : "the library holds no " + device +
                  " kernels; generate it with --target=...," + device);
  const std::string suffix = device == "cpu" ? "" : "_" + device;
  if (!model.status())
    return model.status();
  auto layers = root.find("layers"), ops = root.find("ops");
  if (layers == root.end() || !layers->is_array() || ops == root.end() ||
      !ops->is_array())
    return planError("missing 'layers' or 'ops' arrays");
  std::map<std::string, const json *> layerByName;
  for (const json &layer : *layers)
    if (layer.is_object() && layer.contains("name") &&
        layer["name"].is_string())
      layerByName[layer["name"].get<std::string>()] = &layer;

  for (const json &entry : *ops) {
    if (!entry.is_object())
      return planError("an op is not an object");
    PlanOp op;
    Fields fields(entry, "op");
    std::string kind = fields.string("op");
    op.name = fields.string("name");
    op.stack = fields.string("stack", /*required=*/false);
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
      if (it != kernels.end()) {
        kernel.function = it->second->function;
        kernel.metadata = it->second->metadata;
      }
      auto gemv = kernels.find(name + "_gemv");
      if (gemv != kernels.end()) {
        kernel.fewTokens = gemv->second->function;
        kernel.fewTokensMetadata = gemv->second->metadata;
      }
    };
    if (kind == "embedding") {
      op.kind = OpKind::Embedding;
      op.vocabSize = at.integer("vocab_size");
      op.positions = at.string("positions");
      op.maxPositions = at.integer("max_positions");
      if (entry.contains("position_offset"))
        op.positionOffset = at.integer("position_offset", 0);
      resolve(at, "kernel", op.kernel);
    } else if (kind == "norm") {
      op.kind = OpKind::Norm;
      op.layerNorm = at.string("kind") == "layer_norm";
      op.post = at.boolean("post");
      resolve(at, "kernel", op.kernel);
    } else if (kind == "ffn") {
      op.kind = OpKind::Ffn;
      op.intermediateSize = at.integer("intermediate_size");
      op.bias = at.boolean("bias");
      op.gated = at.boolean("gated");
      resolve(at, "up_kernel", op.up);
      resolve(at, "down_kernel", op.down);
    } else if (kind == "output_head") {
      op.kind = OpKind::OutputHead;
      op.vocabSize = at.integer("vocab_size");
      op.bias = at.boolean("bias");
      op.argmax = at.boolean("argmax");
      op.tied = at.boolean("tied");
      resolve(at, "kernel", op.kernel);
    } else if (kind == "attention") {
      op.kind = OpKind::Attention;
      auto it = layerByName.find(op.name);
      if (it == layerByName.end())
        return planError("op '" + op.name + "' has no entry in 'layers'");
      const json &layer = *it->second;
      Fields l(layer, "layer '" + op.name + "'");
      op.cross = l.string("kind") == "cross";
      op.queryHeads = l.integer("num_query_heads");
      op.kvHeads = l.integer("num_kv_heads");
      op.headDim = l.integer("head_dim");
      if (layer.contains("scale") && layer["scale"].is_number())
        op.scale = layer["scale"].get<float>();
      op.bias = l.boolean("projection_bias");
      op.outputBias = layer.contains("output_bias") ? l.boolean("output_bias")
                                                    : op.bias;
      op.fusedProjections = l.boolean("fused_projections");
      op.fusedCacheAppend = l.boolean("fused_cache_append");
      op.rope = layer.contains("rope_theta");
      op.keyPadding = l.boolean("key_padding");
      resolve(l, "prefill_kernel", op.prefill);
      resolve(l, "query_kernel", op.query);
      if (!op.fusedProjections)
        resolve(l, "key_value_kernel", op.keyValue);
      resolve(l, "output_kernel", op.output);
      if (layer.contains("kv_cache")) {
        op.cached = true;
        resolve(l, "decode_kernel", op.decode);
        Fields cache(layer["kv_cache"], "layer '" + op.name + "' kv_cache");
        op.pageSize = cache.integer("page_size");
        op.maxLength = cache.integer("max_length");
        std::string dtype = cache.string("dtype");
        op.cacheType = dtype == "f16"    ? DType::F16
                       : dtype == "bf16" ? DType::BF16
                       : dtype == "i8"   ? DType::I8
                                         : DType::F32;
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
  for (const PlanOp &op : result.ops)
    hasProjections |= op.kind == OpKind::Attention && bool(op.query);
  if (!hasProjections)
    return planError("the model describes attention layers alone; running a "
                     "whole model needs a description of stacks of blocks");
  plan = std::move(result);
  return Status::ok();
}

} // namespace attn::runtime
