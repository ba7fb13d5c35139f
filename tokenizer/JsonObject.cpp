//===- JsonObject.cpp - checked reads of tokenizer.json objects -----------===//

#include "TokenizerParts.h"

namespace attn::runtime::tokenizer {

JsonObject::JsonObject(const json &value, std::string at)
    : value(value), at(std::move(at)) {
  if (!value.is_object())
    throw TokenizerError(this->at + ": expected an object");
}

void JsonObject::fail(const std::string &key, const std::string &why) const {
  throw TokenizerError((at.empty() ? key : at + "." + key) + ": " + why);
}

void JsonObject::unknownType(const std::string &type, const char *known) const {
  fail("type", "'" + type + "' is not supported (attnc reads " + known + ")");
}

bool JsonObject::has(const char *key) const {
  auto it = value.find(key);
  return it != value.end() && !it->is_null();
}

JsonObject JsonObject::object(const char *key) const {
  if (!has(key))
    fail(key, "missing");
  return JsonObject(value.at(key), at.empty() ? key : at + "." + key);
}

std::vector<JsonObject> JsonObject::objects(const char *key) const {
  if (!has(key) || !value.at(key).is_array())
    fail(key, "expected an array");
  std::vector<JsonObject> out;
  const json &array = value.at(key);
  for (size_t i = 0; i < array.size(); i++)
    out.emplace_back(array[i], (at.empty() ? "" : at + ".") + key + "[" +
                                   std::to_string(i) + "]");
  return out;
}

std::string JsonObject::string(const char *key) const {
  if (!has(key) || !value.at(key).is_string())
    fail(key, "expected a string");
  return value.at(key).get<std::string>();
}

std::string JsonObject::string(const char *key,
                               const std::string &otherwise) const {
  return has(key) ? string(key) : otherwise;
}

bool JsonObject::boolean(const char *key, bool otherwise) const {
  if (!has(key))
    return otherwise;
  if (!value.at(key).is_boolean())
    fail(key, "expected true or false");
  return value.at(key).get<bool>();
}

int64_t JsonObject::integer(const char *key) const {
  if (!has(key) || !value.at(key).is_number_integer())
    fail(key, "expected an integer");
  return value.at(key).get<int64_t>();
}

} // namespace attn::runtime::tokenizer
