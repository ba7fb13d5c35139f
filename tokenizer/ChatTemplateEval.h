//===- ChatTemplateEval.h - evaluating a parsed chat template ----*- C++
//-*-===//
//
// Private to the tokenizer: the evaluator (ChatTemplate.cpp) and the
// builtins it calls by name (ChatTemplateBuiltins.cpp: the tables of
// functions, methods, filters and tests, the one place each is known).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TOKENIZER_CHATTEMPLATEEVAL_H
#define ATTN_RUNTIME_TOKENIZER_CHATTEMPLATEEVAL_H

#include "ChatTemplateSyntax.h"

#include <map>
#include <string>
#include <vector>

namespace attn::runtime::tokenizer::jinja {

using Node = ChatTemplate::Node;

/// Jinja's undefined: a JSON value no JSON text can hold.
inline Value undefined() { return Value(Value::value_t::discarded); }
inline bool isUndefined(const Value &v) { return v.is_discarded(); }
/// Python's truth of a value.
bool truthy(const Value &v);
/// Python's str() of a value, as {{ }} prints it, and its repr().
std::string show(const Value &v);
std::string pythonRepr(const Value &v);
/// Python's json.dumps(v, ensure_ascii=False) with its default separators,
/// or with `indent`: what transformers' tojson filter writes.
void dumpJson(const Value &v, int indent, int depth, std::string &out);
/// Python's str.strip(chars) (whitespace when `chars` is empty), at the
/// ends asked for.
std::string stripChars(const std::string &s, const std::string &chars,
                       bool left, bool right);

class Evaluator;

/// A call's evaluated positional arguments and its keywords (evaluated on
/// demand), for builtins.
struct Arguments {
  Evaluator &evaluator;
  const Expr &e;
  std::vector<Value> args;
  std::string text(size_t i) const {
    return i < args.size() && !args[i].is_null() ? show(args[i]) : "";
  }
  Value keyword(const char *key) const;
};

class Evaluator {
public:
  explicit Evaluator(const Value &variables) { scopes_.push_back(variables); }

  /// What a {% break %} or {% continue %} asks of the loop around it.
  enum class Flow { Next, Break, Continue };
  Flow render(const Node &node, std::string &out);
  Value eval(const Expr &e);

private:
  Value lookup(const std::string &name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto found = it->find(name); found != it->end())
        return *found;
    return undefined();
  }
  Value *find(const std::string &name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto found = it->find(name); found != it->end())
        return &*found;
    return nullptr;
  }
  Value call(const Expr &e);
  Value filter(const Expr &e);
  bool test(const Expr &e);

public: // for the builtins
  Value binary(const std::string &op, const Value &a, const Value &b, int line);
  Value method(const Value &object, const std::string &name, Arguments &a);
  Value item(const Value &object, const Value &key);

private:
  std::vector<Value> scopes_;
  static constexpr int64_t kMaxSteps = 10'000'000;
  static constexpr size_t kMaxText = size_t(16) << 20; ///< bytes of output
  int64_t steps_ = 0;

public:
  /// Appends to the output, within kMaxText.
  static void emit(std::string &out, const std::string &text, int line) {
    if (out.size() + text.size() > kMaxText)
      fail(line, "the template's text grows past 16 MiB");
    out += text;
  }
};

using Function = Value (*)(Arguments &);
using Method = Value (*)(const Value &object, const std::string &name,
                         Arguments &);
using FilterFn = Value (*)(const Value &input, const std::string &name,
                           Arguments &);
using TestFn = bool (*)(const Value &input, const std::string &name,
                        Arguments &);

const std::map<std::string, Function> &functions();
const std::map<std::string, Method> &stringMethods();  ///< Python's str's
const std::map<std::string, Method> &mappingMethods(); ///< Python's dict's
const std::map<std::string, FilterFn> &filters();
const std::map<std::string, TestFn> &tests();

} // namespace attn::runtime::tokenizer::jinja

#endif // ATTN_RUNTIME_TOKENIZER_CHATTEMPLATEEVAL_H
