//===- JsonReader.h - schema-checked JSON with source locations -*- C++ -*-===//
//
// attnc reads JSON (model descriptions, Hugging Face configs, tuning
// databases) with llvm::json and reports every problem as an MLIR diagnostic
// at file:line:col. llvm::json values carry no positions, so a diagnostic
// about a value re-finds it by its path with llvm's YAML parser (JSON is YAML
// flow syntax), which reports source ranges.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_JSONREADER_H
#define ATTN_JSONREADER_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <vector>
#include <string>
#include <variant>

namespace llvm {
class MemoryBuffer;
class SourceMgr;
} // namespace llvm

namespace mlir::attn {

/// A position in a JSON document: object keys and array indices from the
/// root.
using JsonPath = llvm::SmallVector<std::variant<std::string, size_t>, 4>;

/// "'a.b[2]'", or "the document" for the root.
std::string describeJsonPath(const JsonPath &path);

/// Turns JSON paths and byte offsets into locations in one buffer.
class JsonLocator {
public:
  JsonLocator(llvm::SourceMgr &sourceMgr, unsigned bufferId,
              MLIRContext &context);

  Location at(const char *pointer) const;
  Location atOffset(size_t offset) const;
  /// The location of the value at `path`, or of its key when `atKey`.
  Location at(const JsonPath &path, bool atKey = false) const;

private:
  llvm::SourceMgr &sourceMgr;
  MLIRContext &context;
  const llvm::MemoryBuffer *buffer;
};

/// A key an object states twice: the byte offsets of both.
struct JsonDuplicateKey {
  std::string key;
  size_t first, second;
};

/// Objects and arrays nested deeper than this are refused before parsing
/// (llvm::json and the YAML parser behind JsonLocator recurse per level:
/// 10^5 levels overflowed the stack).
constexpr int kMaxJsonDepth = 256;

/// Parses the locator's buffer; a syntax error is reported at its position,
/// so is nesting deeper than kMaxJsonDepth. A key stated twice in one
/// object (llvm::json keeps the last silently) is an error, or, with
/// `duplicates`, collected there for the caller to judge.
std::optional<llvm::json::Value>
parseJson(llvm::StringRef text, const JsonLocator &locator,
          std::vector<JsonDuplicateKey> *duplicates = nullptr);

/// Reads the keys of one JSON object against a schema, reporting each
/// problem at the offending value and, in finish(), any key the schema does
/// not know (likely a typo).
class JsonObjectReader {
public:
  JsonObjectReader(const llvm::json::Object &object, JsonPath path,
                   const JsonLocator &locator)
      : object(object), path(std::move(path)), locator(locator) {}

  bool ok() const { return !failed; }
  const JsonPath &getPath() const { return path; }
  /// Where the object is named: its key in the parent.
  Location location() const { return locator.at(path, /*atKey=*/true); }
  bool has(llvm::StringRef key) const { return object.get(key); }

  /// An integer in [min, max]; `fallback` when absent and not required.
  std::optional<int64_t> getInt(llvm::StringRef key, bool required, int64_t min,
                                int64_t max,
                                std::optional<int64_t> fallback = {});
  /// A positive finite number, or std::nullopt when absent or invalid.
  std::optional<double> optionalPositiveNumber(llvm::StringRef key);
  /// Any finite number, or std::nullopt when absent or invalid.
  std::optional<double> optionalNumber(llvm::StringRef key);
  std::optional<bool> optionalBool(llvm::StringRef key);
  /// One of `allowed`, or `fallback` when absent.
  llvm::StringRef optionalEnum(llvm::StringRef key,
                               llvm::ArrayRef<llvm::StringRef> allowed,
                               llvm::StringRef fallback);
  std::optional<llvm::StringRef> optionalString(llvm::StringRef key);
  std::optional<llvm::StringRef> requiredString(llvm::StringRef key);
  /// A child object (and its path), or null when absent or not an object.
  const llvm::json::Object *getObject(llvm::StringRef key, bool required,
                                      JsonPath &childPath);
  const llvm::json::Array *getArray(llvm::StringRef key, bool required,
                                    JsonPath &childPath);
  /// Marks keys the caller reads without an accessor (or ignores on
  /// purpose) as known.
  void allow(llvm::ArrayRef<llvm::StringRef> keys);

  /// Reports keys that no accessor asked for.
  bool finish();
  /// Reports `message` at the value of `key`.
  void error(llvm::StringRef key, const llvm::Twine &message);

private:
  const llvm::json::Value *find(llvm::StringRef key, bool required);
  /// The value of `key` if it is an object (or an array), with its path.
  const llvm::json::Value *findChild(llvm::StringRef key, bool required,
                                     bool isObject, JsonPath &childPath);

  const llvm::json::Object &object;
  JsonPath path;
  const JsonLocator &locator;
  llvm::StringSet<> known;
  bool failed = false;
};

} // namespace mlir::attn

#endif // ATTN_JSONREADER_H
