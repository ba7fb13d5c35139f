//===- DescriptionImport.cpp - JSON model descriptions to attn IR ---------===//
//
// The native description format (see docs/description-format.md):
//
//   { "name": "hello",
//     "attention": { "num_query_heads": 8, "num_kv_heads": 2, "head_dim": 64,
//                    "mask": "causal", "scale": 0.125 } }
//
// llvm::json parses the text; llvm::json values carry no source positions, so
// a diagnostic about a value re-finds it by its path with llvm's YAML parser
// (JSON is YAML flow syntax), which reports source ranges.
//
//===----------------------------------------------------------------------===//

#include "DescriptionImport.h"

#include "attn/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <variant>

using namespace mlir;
namespace json = llvm::json;

namespace attnc {
namespace {

/// A position in the JSON document: object keys and array indices from the
/// root.
using JsonPath = llvm::SmallVector<std::variant<std::string, size_t>, 4>;

std::string describe(const JsonPath &path) {
  std::string text;
  for (const auto &element : path) {
    if (const auto *key = std::get_if<std::string>(&element))
      text += (text.empty() ? "" : ".") + *key;
    else
      text += "[" + std::to_string(std::get<size_t>(element)) + "]";
  }
  return text.empty() ? "the description" : "'" + text + "'";
}

/// Turns JSON paths and byte offsets into MLIR locations in the source file.
class SourceLocator {
public:
  SourceLocator(llvm::SourceMgr &sourceMgr, MLIRContext &context)
      : sourceMgr(sourceMgr), context(context),
        buffer(sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())) {}

  Location at(const char *pointer) const {
    auto [line, column] =
        sourceMgr.getLineAndColumn(llvm::SMLoc::getFromPointer(pointer));
    return FileLineColLoc::get(&context, buffer->getBufferIdentifier(), line,
                               column);
  }
  Location atOffset(size_t offset) const {
    return at(buffer->getBufferStart() +
              std::min<size_t>(offset, buffer->getBufferSize()));
  }
  /// The location of the value at `path`, or of its key when `atKey` (the
  /// start of the text if the path is empty or cannot be found, which cannot
  /// happen for text llvm::json accepted).
  Location at(const JsonPath &path, bool atKey = false) const {
    llvm::StringRef text = buffer->getBuffer();
    Location start =
        atOffset(std::min(text.find_first_not_of(" \t\r\n"), text.size()));
    llvm::SourceMgr scratch; // YAML diagnostics are not ours to print
    scratch.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
    llvm::yaml::Stream stream(buffer->getMemBufferRef(), scratch);
    llvm::yaml::document_iterator document = stream.begin();
    if (path.empty() || document == stream.end() || !document->getRoot())
      return start;
    // The YAML parser streams: a node must be entered before its parent's
    // iteration moves past it, hence the breaks.
    llvm::yaml::Node *node = document->getRoot(), *key = nullptr;
    for (const auto &element : path) {
      llvm::yaml::Node *next = nullptr;
      if (const auto *name = std::get_if<std::string>(&element)) {
        if (auto *mapping = llvm::dyn_cast<llvm::yaml::MappingNode>(node))
          for (llvm::yaml::KeyValueNode &entry : *mapping) {
            auto *scalar =
                llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(entry.getKey());
            llvm::SmallString<32> storage;
            if (scalar && scalar->getValue(storage) == *name) {
              key = scalar;
              next = entry.getValue();
              break;
            }
          }
      } else if (auto *sequence =
                     llvm::dyn_cast<llvm::yaml::SequenceNode>(node)) {
        size_t index = 0;
        for (llvm::yaml::Node &item : *sequence)
          if (index++ == std::get<size_t>(element)) {
            key = next = &item;
            break;
          }
      }
      if (!next)
        return start;
      node = next;
    }
    return at((atKey ? key : node)->getSourceRange().Start.getPointer());
  }

private:
  llvm::SourceMgr &sourceMgr;
  MLIRContext &context;
  const llvm::MemoryBuffer *buffer;
};

/// Reads the keys of one JSON object against a schema, reporting each problem
/// at the offending value and, at the end, any key the schema does not know.
class ObjectReader {
public:
  ObjectReader(const json::Object &object, JsonPath path,
               const SourceLocator &locator)
      : object(object), path(std::move(path)), locator(locator) {}

  bool ok() const { return !failed; }
  /// Where the object is named: its key in the parent.
  Location location() const { return locator.at(path, /*atKey=*/true); }

  std::optional<int64_t> requiredPositiveInt(llvm::StringRef key) {
    const json::Value *value = find(key, /*required=*/true);
    if (!value)
      return std::nullopt;
    std::optional<int64_t> number = value->getAsInteger();
    if (!number || *number <= 0 || *number > (1 << 20)) {
      error(key, "'" + key + "' must be a positive integer");
      return std::nullopt;
    }
    return number;
  }

  /// A positive finite number, or std::nullopt when absent or invalid.
  std::optional<double> optionalPositiveNumber(llvm::StringRef key) {
    const json::Value *value = find(key, /*required=*/false);
    if (!value)
      return std::nullopt;
    std::optional<double> number = value->getAsNumber();
    if (!number || !(*number > 0) || !std::isfinite(*number)) {
      error(key, "'" + key + "' must be a positive number");
      return std::nullopt;
    }
    return number;
  }

  /// One of `allowed`, or `fallback` when absent.
  llvm::StringRef optionalEnum(llvm::StringRef key,
                               llvm::ArrayRef<llvm::StringRef> allowed,
                               llvm::StringRef fallback) {
    const json::Value *value = find(key, /*required=*/false);
    if (!value)
      return fallback;
    std::optional<llvm::StringRef> text = value->getAsString();
    if (text)
      for (llvm::StringRef candidate : allowed)
        if (*text == candidate)
          return candidate;
    error(key, "'" + key + "' must be one of: " + llvm::join(allowed, ", "));
    return fallback;
  }

  std::optional<llvm::StringRef> optionalString(llvm::StringRef key) {
    const json::Value *value = find(key, /*required=*/false);
    if (!value)
      return std::nullopt;
    if (std::optional<llvm::StringRef> text = value->getAsString())
      return text;
    error(key, "'" + key + "' must be a string");
    return std::nullopt;
  }

  const json::Object *requiredObject(llvm::StringRef key, JsonPath &childPath) {
    const json::Value *value = find(key, /*required=*/true);
    if (!value)
      return nullptr;
    const json::Object *child = value->getAsObject();
    if (!child) {
      error(key, "'" + key + "' must be an object");
      return nullptr;
    }
    childPath = path;
    childPath.push_back(key.str());
    return child;
  }

  /// Reports keys that no accessor asked for: likely typos.
  bool finish() {
    for (const auto &entry : object) {
      llvm::StringRef key = entry.first;
      if (known.contains(key))
        continue;
      std::vector<std::string> expected(known.keys().begin(),
                                        known.keys().end());
      llvm::sort(expected);
      JsonPath at = path;
      at.push_back(key.str());
      emitError(locator.at(at, /*atKey=*/true))
          << "unknown key '" << key << "' in " << describe(path)
          << " (expected one of: " << llvm::join(expected, ", ") << ")";
      failed = true;
    }
    return ok();
  }

private:
  const json::Value *find(llvm::StringRef key, bool required) {
    known.insert(key);
    const json::Value *value = object.get(key);
    if (!value && required)
      emitError(location())
          << "missing required key '" << key << "' in " << describe(path);
    failed |= !value && required;
    return value;
  }

  void error(llvm::StringRef key, const llvm::Twine &message) {
    JsonPath at = path;
    at.push_back(key.str());
    emitError(locator.at(at)) << message;
    failed = true;
  }

  const json::Object &object;
  JsonPath path;
  const SourceLocator &locator;
  llvm::StringSet<> known;
  bool failed = false;
};

/// The syntax error llvm::json reports, at its file:line:col. ParseError keeps
/// its position private; its log() text "[line:col, byte=N]: message" is the
/// public form.
void reportSyntaxError(llvm::Error error, const SourceLocator &locator) {
  std::string text = llvm::toString(std::move(error));
  llvm::SmallVector<llvm::StringRef, 3> match;
  llvm::Regex pattern("^\\[[0-9]+:[0-9]+, byte=([0-9]+)\\]: (.*)$");
  if (pattern.match(text, &match)) {
    size_t offset = 0;
    match[1].getAsInteger(10, offset);
    emitError(locator.atOffset(offset)) << "invalid JSON: " << match[2];
    return;
  }
  emitError(locator.atOffset(0)) << "invalid JSON: " << text;
}

bool isCIdentifier(llvm::StringRef name) {
  return llvm::Regex("^[A-Za-z_][A-Za-z0-9_]*$").match(name);
}

} // namespace

OwningOpRef<ModuleOp> importJsonDescription(llvm::SourceMgr &sourceMgr,
                                            MLIRContext &context,
                                            llvm::StringRef modelName) {
  context.loadDialect<attn::AttnDialect, func::FuncDialect>();
  SourceLocator locator(sourceMgr, context);
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());

  llvm::Expected<json::Value> document = json::parse(buffer->getBuffer());
  if (!document) {
    reportSyntaxError(document.takeError(), locator);
    return nullptr;
  }
  const json::Object *root = document->getAsObject();
  if (!root) {
    emitError(locator.at(JsonPath{}))
        << "a model description must be a JSON object";
    return nullptr;
  }

  ObjectReader model(*root, {}, locator);
  std::optional<llvm::StringRef> describedName = model.optionalString("name");
  JsonPath attentionPath;
  const json::Object *attentionObject =
      model.requiredObject("attention", attentionPath);
  if (!model.finish() || !attentionObject)
    return nullptr;

  std::string name = modelName.str();
  if (name.empty())
    name = describedName
               ? describedName->str()
               : llvm::sys::path::stem(buffer->getBufferIdentifier()).str();
  if (!isCIdentifier(name)) {
    emitError(locator.at(JsonPath{std::string("name")}))
        << "model name '" << name
        << "' must be a C identifier: it prefixes the generated functions";
    return nullptr;
  }

  ObjectReader attention(*attentionObject, attentionPath, locator);
  attention.optionalEnum("kind", {"self"}, "self");
  std::optional<int64_t> queryHeads =
      attention.requiredPositiveInt("num_query_heads");
  std::optional<int64_t> kvHeads =
      attention.requiredPositiveInt("num_kv_heads");
  std::optional<int64_t> headDim = attention.requiredPositiveInt("head_dim");
  bool causal =
      attention.optionalEnum("mask", {"none", "causal"}, "none") == "causal";
  std::optional<double> scale = attention.optionalPositiveNumber("scale");
  if (!attention.finish())
    return nullptr;

  // Build: module @name { func.func @attention(q, k, v) { attn.sdpa } }.
  OpBuilder builder(&context);
  Location loc = attention.location();
  OwningOpRef<ModuleOp> module = ModuleOp::create(locator.at(JsonPath{}), name);
  builder.setInsertionPointToEnd(module->getBody());
  Type f32 = builder.getF32Type();
  int64_t dynamic = ShapedType::kDynamic;
  auto queryType =
      RankedTensorType::get({dynamic, dynamic, *queryHeads, *headDim}, f32);
  auto kvType =
      RankedTensorType::get({dynamic, dynamic, *kvHeads, *headDim}, f32);
  auto function = builder.create<func::FuncOp>(
      loc, "attention",
      builder.getFunctionType({queryType, kvType, kvType}, {queryType}));
  Block *body = function.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  auto sdpa = builder.create<attn::SdpaOp>(
      loc, queryType, body->getArgument(0), body->getArgument(1),
      body->getArgument(2), *queryHeads, *kvHeads, *headDim, causal,
      scale ? builder.getF32FloatAttr(static_cast<float>(*scale))
            : FloatAttr());
  builder.create<func::ReturnOp>(loc, sdpa.getResult());

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace attnc
