//===- JsonReader.cpp - schema-checked JSON with source locations ---------===//

#include "attn/JsonReader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <cmath>

namespace json = llvm::json;

namespace mlir::attn {

std::string describeJsonPath(const JsonPath &path) {
  std::string text;
  for (const auto &element : path) {
    if (const auto *key = std::get_if<std::string>(&element))
      text += (text.empty() ? "" : ".") + *key;
    else
      text += "[" + std::to_string(std::get<size_t>(element)) + "]";
  }
  return text.empty() ? "the document" : "'" + text + "'";
}

JsonLocator::JsonLocator(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                         MLIRContext &context)
    : sourceMgr(sourceMgr), context(context),
      buffer(sourceMgr.getMemoryBuffer(bufferId)) {}

Location JsonLocator::at(const char *pointer) const {
  auto [line, column] =
      sourceMgr.getLineAndColumn(llvm::SMLoc::getFromPointer(pointer));
  return FileLineColLoc::get(&context, buffer->getBufferIdentifier(), line,
                             column);
}

Location JsonLocator::atOffset(size_t offset) const {
  return at(buffer->getBufferStart() +
            std::min<size_t>(offset, buffer->getBufferSize()));
}

Location JsonLocator::at(const JsonPath &path, bool atKey) const {
  // The start of the text if the path is empty or cannot be found (which
  // cannot happen for text llvm::json accepted).
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

namespace {
/// One pass over the text's structure (strings skipped, escapes honoured):
/// the offset of the first bracket past kMaxJsonDepth (npos: none), and
/// each object's repeated keys. Keys compare as written (escapes and all).
size_t scanStructure(llvm::StringRef text,
                     std::vector<JsonDuplicateKey> &duplicates) {
  struct Level {
    bool object;
    llvm::StringMap<size_t> keys; // key -> offset of its first statement
  };
  std::vector<Level> levels;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (c == '"') {
      const size_t start = i;
      for (i++; i < text.size() && text[i] != '"'; i++)
        if (text[i] == '\\')
          i++;
      if (levels.empty() || !levels.back().object)
        continue;
      // A key is a string followed by ':'.
      size_t next = text.find_first_not_of(" \t\r\n", i + 1);
      if (next == llvm::StringRef::npos || text[next] != ':')
        continue;
      llvm::StringRef key = text.slice(start + 1, std::min(i, text.size()));
      auto [entry, fresh] = levels.back().keys.try_emplace(key, start);
      if (!fresh)
        duplicates.push_back({key.str(), entry->second, start});
    } else if (c == '{' || c == '[') {
      if (levels.size() == size_t(kMaxJsonDepth))
        return i;
      levels.push_back({c == '{', {}});
    } else if ((c == '}' || c == ']') && !levels.empty()) {
      levels.pop_back();
    }
  }
  return llvm::StringRef::npos;
}
} // namespace

std::optional<json::Value> parseJson(llvm::StringRef text,
                                     const JsonLocator &locator,
                                     std::vector<JsonDuplicateKey> *duplicates) {
  std::vector<JsonDuplicateKey> repeated;
  if (size_t deep = scanStructure(text, repeated);
      deep != llvm::StringRef::npos) {
    emitError(locator.atOffset(deep))
        << "invalid JSON: nested deeper than " << kMaxJsonDepth << " levels";
    return std::nullopt;
  }
  llvm::Expected<json::Value> value = json::parse(text);
  if (value && !duplicates && !repeated.empty()) {
    for (const JsonDuplicateKey &d : repeated) {
      InFlightDiagnostic diagnostic = emitError(locator.atOffset(d.second))
                                      << "duplicate key '" << d.key << "'";
      diagnostic.attachNote(locator.atOffset(d.first)) << "first stated here";
    }
    return std::nullopt;
  }
  if (value) {
    if (duplicates)
      *duplicates = std::move(repeated);
    return std::move(*value);
  }
  // ParseError keeps its position private; its log() text
  // "[line:col, byte=N]: message" is the public form.
  std::string message = llvm::toString(value.takeError());
  llvm::SmallVector<llvm::StringRef, 3> match;
  llvm::Regex pattern("^\\[[0-9]+:[0-9]+, byte=([0-9]+)\\]: (.*)$");
  if (pattern.match(message, &match)) {
    size_t offset = 0;
    match[1].getAsInteger(10, offset);
    emitError(locator.atOffset(offset)) << "invalid JSON: " << match[2];
  } else {
    emitError(locator.atOffset(0)) << "invalid JSON: " << message;
  }
  return std::nullopt;
}

const json::Value *JsonObjectReader::find(llvm::StringRef key, bool required) {
  known.insert(key);
  const json::Value *value = object.get(key);
  if (!value && required) {
    emitError(location()) << "missing required key '" << key << "' in "
                          << describeJsonPath(path);
    failed = true;
  }
  return value;
}

void JsonObjectReader::error(llvm::StringRef key, const llvm::Twine &message) {
  JsonPath at = path;
  at.push_back(key.str());
  emitError(locator.at(at)) << message;
  failed = true;
}

void JsonObjectReader::allow(llvm::ArrayRef<llvm::StringRef> keys) {
  for (llvm::StringRef key : keys)
    known.insert(key);
}

std::optional<int64_t>
JsonObjectReader::getInt(llvm::StringRef key, bool required, int64_t min,
                         int64_t max, std::optional<int64_t> fallback) {
  const json::Value *value = find(key, required);
  if (!value)
    return required ? std::nullopt : fallback;
  std::optional<int64_t> number = value->getAsInteger();
  if (!number || *number < min || *number > max) {
    if (min == 1 && max >= (int64_t(1) << 30))
      error(key, "'" + key + "' must be a positive integer");
    else
      error(key, "'" + key + "' must be an integer in [" + std::to_string(min) +
                     ", " + std::to_string(max) + "]");
    return std::nullopt;
  }
  return number;
}

std::optional<double> JsonObjectReader::optionalNumber(llvm::StringRef key) {
  const json::Value *value = find(key, /*required=*/false);
  if (!value)
    return std::nullopt;
  std::optional<double> number = value->getAsNumber();
  if (!number || !std::isfinite(*number)) {
    error(key, "'" + key + "' must be a number");
    return std::nullopt;
  }
  return number;
}

std::optional<double>
JsonObjectReader::optionalPositiveNumber(llvm::StringRef key) {
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

std::optional<bool> JsonObjectReader::optionalBool(llvm::StringRef key) {
  const json::Value *value = find(key, /*required=*/false);
  if (!value)
    return std::nullopt;
  if (std::optional<bool> flag = value->getAsBoolean())
    return flag;
  error(key, "'" + key + "' must be true or false");
  return std::nullopt;
}

llvm::StringRef
JsonObjectReader::optionalEnum(llvm::StringRef key,
                               llvm::ArrayRef<llvm::StringRef> allowed,
                               llvm::StringRef fallback) {
  const json::Value *value = find(key, /*required=*/false);
  if (!value)
    return fallback;
  if (std::optional<llvm::StringRef> text = value->getAsString())
    for (llvm::StringRef candidate : allowed)
      if (*text == candidate)
        return candidate;
  error(key, "'" + key + "' must be one of: " + llvm::join(allowed, ", "));
  return fallback;
}

std::optional<llvm::StringRef>
JsonObjectReader::optionalString(llvm::StringRef key) {
  const json::Value *value = find(key, /*required=*/false);
  if (!value)
    return std::nullopt;
  if (std::optional<llvm::StringRef> text = value->getAsString())
    return text;
  error(key, "'" + key + "' must be a string");
  return std::nullopt;
}

std::optional<llvm::StringRef>
JsonObjectReader::requiredString(llvm::StringRef key) {
  if (!find(key, /*required=*/true))
    return std::nullopt;
  return optionalString(key);
}

const json::Value *JsonObjectReader::findChild(llvm::StringRef key,
                                               bool required, bool isObject,
                                               JsonPath &childPath) {
  const json::Value *value = find(key, required);
  if (!value)
    return nullptr;
  if (isObject ? !value->getAsObject() : !value->getAsArray()) {
    error(key,
          "'" + key + "' must be " + (isObject ? "an object" : "an array"));
    return nullptr;
  }
  childPath = path;
  childPath.push_back(key.str());
  return value;
}

const json::Object *JsonObjectReader::getObject(llvm::StringRef key,
                                                bool required,
                                                JsonPath &childPath) {
  const json::Value *value = findChild(key, required, true, childPath);
  return value ? value->getAsObject() : nullptr;
}

const json::Array *JsonObjectReader::getArray(llvm::StringRef key,
                                              bool required,
                                              JsonPath &childPath) {
  const json::Value *value = findChild(key, required, false, childPath);
  return value ? value->getAsArray() : nullptr;
}

bool JsonObjectReader::finish() {
  for (const auto &entry : object) {
    llvm::StringRef key = entry.first;
    if (known.contains(key))
      continue;
    std::vector<std::string> expected(known.keys().begin(), known.keys().end());
    llvm::sort(expected);
    JsonPath at = path;
    at.push_back(key.str());
    emitError(locator.at(at, /*atKey=*/true))
        << "unknown key '" << key << "' in " << describeJsonPath(path)
        << " (expected one of: " << llvm::join(expected, ", ") << ")";
    failed = true;
  }
  return ok();
}

} // namespace mlir::attn
