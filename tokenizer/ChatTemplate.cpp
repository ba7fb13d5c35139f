//===- ChatTemplate.cpp - chat templates evaluated ------------------------===//
//
// The parsed tree (ChatTemplateSyntax.cpp) evaluated over JSON values with a
// stack of scopes (a for loop's `set` stays in the loop, which is why
// templates use namespace()), with Python's and Jinja2's semantics where
// they show: str() of values, json.dumps for tojson, slices, floor division.
// Work and output are bounded, as Jinja2's sandbox bounds range().
//
//===----------------------------------------------------------------------===//

#include "ChatTemplateEval.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
namespace attn::runtime::tokenizer {

namespace jinja {

bool truthy(const Value &v) {
  if (isUndefined(v) || v.is_null())
    return false;
  if (v.is_boolean())
    return v.get<bool>();
  if (v.is_number_integer())
    return v.get<int64_t>() != 0;
  if (v.is_number())
    return v.get<double>() != 0;
  if (v.is_string())
    return !v.get_ref<const std::string &>().empty();
  return !v.empty(); // arrays, objects
}

// --- evaluation ------------------------------------------------------------

std::string pythonRepr(const Value &v) {
  if (v.is_string()) {
    std::string out = "'";
    for (char c : v.get_ref<const std::string &>())
      out += c == '\''   ? std::string("\\'")
             : c == '\n' ? "\\n"
                         : std::string(1, c);
    return out + "'";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); i++)
      out += (i ? ", " : "") + pythonRepr(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto &[key, value] : v.items()) {
      out += (first ? "'" : ", '") + key + "': " + pythonRepr(value);
      first = false;
    }
    return out + "}";
  }
  return show(v);
}

std::string show(const Value &v) {
  if (isUndefined(v))
    return "";
  if (v.is_null())
    return "None";
  if (v.is_boolean())
    return v.get<bool>() ? "True" : "False";
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_number_integer())
    return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    char buffer[64];
    double d = v.get<double>();
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d);
    std::string text(buffer, end);
    if (text.find_first_of(".en") == std::string::npos)
      text += ".0";
    return text;
  }
  return pythonRepr(v);
}

/// Python's json.dumps(v, ensure_ascii=False) with its default separators,
/// or with `indent`: what transformers' tojson filter writes.
void dumpJson(const Value &v, int indent, int depth, std::string &out) {
  auto newline = [&](int level) {
    if (indent > 0)
      out += "\n" + std::string(size_t(indent * level), ' ');
  };
  if (v.is_array()) {
    if (v.empty()) {
      out += "[]";
      return;
    }
    out += "[";
    for (size_t i = 0; i < v.size(); i++) {
      if (i)
        out += indent > 0 ? "," : ", ";
      newline(depth + 1);
      dumpJson(v[i], indent, depth + 1, out);
    }
    newline(depth);
    out += "]";
  } else if (v.is_object()) {
    if (v.empty()) {
      out += "{}";
      return;
    }
    out += "{";
    bool first = true;
    for (const auto &[key, value] : v.items()) {
      if (!first)
        out += indent > 0 ? "," : ", ";
      first = false;
      newline(depth + 1);
      out += Value(key).dump(-1, ' ', false) + ": ";
      dumpJson(value, indent, depth + 1, out);
    }
    newline(depth);
    out += "}";
  } else if (isUndefined(v)) {
    out += "null";
  } else if (v.is_number_float()) {
    out += show(v);
  } else {
    out += v.dump(-1, ' ', false, Value::error_handler_t::replace);
  }
}
std::string stripChars(const std::string &s, const std::string &chars,
                       bool left, bool right) {
  auto strip = [&](char c) {
    return chars.empty() ? isSpace(c) : chars.find(c) != std::string::npos;
  };
  size_t begin = 0, end = s.size();
  while (left && begin < end && strip(s[begin]))
    begin++;
  while (right && end > begin && strip(s[end - 1]))
    end--;
  return s.substr(begin, end - begin);
}

/// Python's index normalization: negative counts from the end.
int64_t normalizeIndex(int64_t i, int64_t size) { return i < 0 ? i + size : i; }

Value Evaluator::item(const Value &object, const Value &key) {
  if (object.is_object() && key.is_string()) {
    auto it = object.find(key.get<std::string>());
    return it == object.end() ? undefined() : *it;
  }
  if ((object.is_array() || object.is_string()) && key.is_number_integer()) {
    int64_t size = object.is_array()
                       ? int64_t(object.size())
                       : int64_t(object.get_ref<const std::string &>().size());
    int64_t i = normalizeIndex(key.get<int64_t>(), size);
    if (i < 0 || i >= size)
      return undefined();
    return object.is_array()
               ? object[size_t(i)]
               : Value(std::string(
                     1, object.get_ref<const std::string &>()[size_t(i)]));
  }
  return undefined();
}

Value Evaluator::binary(const std::string &op, const Value &a, const Value &b,
                        int line) {
  if (op == "==")
    return (isUndefined(a) && isUndefined(b)) || a == b;
  if (op == "!=")
    return !((isUndefined(a) && isUndefined(b)) || a == b);
  if (op == "~")
    return show(a) + show(b);
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string() && a.is_string())
      found = b.get_ref<const std::string &>().find(a.get<std::string>()) !=
              std::string::npos;
    else if (b.is_array())
      found = std::find(b.begin(), b.end(), a) != b.end();
    else if (b.is_object() && a.is_string())
      found = b.contains(a.get<std::string>());
    else if (!isUndefined(b) && !b.is_null())
      fail(line, "'in' needs a string, list or mapping on its right");
    return op == "in" ? found : !found;
  }
  if (op == "+") {
    if (a.is_string() && b.is_string())
      return a.get<std::string>() + b.get<std::string>();
    if (a.is_array() && b.is_array()) {
      Value joined = a;
      joined.insert(joined.end(), b.begin(), b.end());
      return joined;
    }
  }
  if (op == "*" && a.is_string() && b.is_number_integer()) {
    if (b.get<int64_t>() > 0 &&
        a.get_ref<const std::string &>().size() * uint64_t(b.get<int64_t>()) >
            (uint64_t(16) << 20))
      fail(line, "a repeated string longer than 16 MiB");
    std::string repeated;
    for (int64_t i = 0; i < b.get<int64_t>(); i++)
      repeated += a.get<std::string>();
    return repeated;
  }
  if (a.is_number() && b.is_number() && !a.is_boolean() && !b.is_boolean()) {
    bool integers = a.is_number_integer() && b.is_number_integer();
    double x = a.get<double>(), y = b.get<double>();
    if (op == "<")
      return x < y;
    if (op == "<=")
      return x <= y;
    if (op == ">")
      return x > y;
    if (op == ">=")
      return x >= y;
    if ((op == "/" || op == "//" || op == "%") && y == 0)
      fail(line, "division by zero");
    if (integers) {
      // Python's integers do not overflow; these do, and say so.
      int64_t i = a.get<int64_t>(), j = b.get<int64_t>(), r = 0;
      bool overflow = (op == "+" && __builtin_add_overflow(i, j, &r)) ||
                      (op == "-" && __builtin_sub_overflow(i, j, &r)) ||
                      (op == "*" && __builtin_mul_overflow(i, j, &r)) ||
                      ((op == "//" || op == "%") && i == INT64_MIN && j == -1);
      if (overflow)
        fail(line, "integer overflow in '" + op + "'");
      if (op == "+" || op == "-" || op == "*")
        return r;
      // Floor division and a remainder with the divisor's sign, as Python.
      int64_t quotient = i / j, remainder = i % j;
      if (remainder != 0 && (remainder < 0) != (j < 0)) {
        quotient -= 1;
        remainder += j;
      }
      if (op == "//")
        return quotient;
      if (op == "%")
        return remainder;
    }
    if (op == "+")
      return x + y;
    if (op == "-")
      return x - y;
    if (op == "*")
      return x * y;
    if (op == "/")
      return x / y;
    if (op == "//")
      return std::floor(x / y);
    if (op == "%")
      return x - y * std::floor(x / y);
  }
  if ((op == "<" || op == "<=" || op == ">" || op == ">=") && a.is_string() &&
      b.is_string()) {
    int c = a.get<std::string>().compare(b.get<std::string>());
    return op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
  }
  fail(line, "cannot apply '" + op + "' to " + pythonRepr(a) + " and " +
                 pythonRepr(b));
}

Value Evaluator::eval(const Expr &e) {
  // A chat template formats a conversation; one that computes for longer
  // (nested ranges, fuzzed input) is stopped, as Jinja2's sandbox bounds
  // range() for the same reason.
  if (++steps_ > kMaxSteps)
    fail(e.line, "the template computes too long (over " +
                     std::to_string(kMaxSteps) + " steps)");
  switch (e.kind) {
  case Expr::Literal:
    return e.literal;
  case Expr::Name:
    return lookup(e.name);
  case Expr::List: {
    Value list = Value::array();
    for (const ExprPtr &arg : e.args)
      list.push_back(eval(*arg));
    return list;
  }
  case Expr::Dict: {
    Value dict = Value::object();
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      Value key = eval(*e.args[i]);
      dict[show(key)] = eval(*e.args[i + 1]);
    }
    return dict;
  }
  case Expr::Attr: {
    Value object = eval(*e.args[0]);
    if (isUndefined(object)) // as Jinja2's Undefined
      fail(e.line, "an undefined value has no attribute '" + e.name + "'");
    if (object.is_object())
      return item(object, e.name);
    return undefined(); // methods are resolved by Call
  }
  case Expr::Index: {
    Value object = eval(*e.args[0]);
    if (isUndefined(object))
      fail(e.line, "an undefined value cannot be indexed");
    return item(object, eval(*e.args[1]));
  }
  case Expr::Slice: {
    Value object = eval(*e.args[0]);
    bool isString = object.is_string();
    if (!object.is_array() && !isString)
      fail(e.line, "only lists and strings can be sliced");
    int64_t size = isString
                       ? int64_t(object.get_ref<const std::string &>().size())
                       : int64_t(object.size());
    auto bound = [&](const ExprPtr &p, int64_t otherwise) -> int64_t {
      if (!p)
        return otherwise;
      Value v = eval(*p);
      if (v.is_null())
        return otherwise;
      if (!v.is_number_integer())
        fail(e.line, "slice bounds must be integers");
      return v.get<int64_t>();
    };
    int64_t step = bound(e.args[3], 1);
    if (step == 0)
      fail(e.line, "a slice step cannot be zero");
    int64_t begin, end;
    auto clamp = [&](int64_t i, int64_t low, int64_t high) {
      i = normalizeIndex(i, size);
      return std::max(low, std::min(high, i));
    };
    if (step > 0) {
      begin = clamp(bound(e.args[1], 0), 0, size);
      end = clamp(bound(e.args[2], size), 0, size);
    } else {
      begin = clamp(bound(e.args[1], size - 1), -1, size - 1);
      end = e.args[2] ? clamp(bound(e.args[2], -1), -1, size - 1) : -1;
    }
    Value result = isString ? Value("") : Value::array();
    for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) {
      if (isString)
        result.get_ref<std::string &>() +=
            object.get_ref<const std::string &>()[size_t(i)];
      else
        result.push_back(object[size_t(i)]);
    }
    return result;
  }
  case Expr::Call:
    return call(e);
  case Expr::Filter:
    return filter(e);
  case Expr::Test:
    return test(e);
  case Expr::Not:
    return !truthy(eval(*e.args[0]));
  case Expr::Negate: {
    Value v = eval(*e.args[0]);
    if (v.is_number_integer()) {
      if (v.get<int64_t>() == INT64_MIN)
        fail(e.line, "integer overflow in '-'");
      return -v.get<int64_t>();
    }
    if (v.is_number())
      return -v.get<double>();
    fail(e.line, "cannot negate " + pythonRepr(v));
  }
  case Expr::Binary:
    return binary(e.name, eval(*e.args[0]), eval(*e.args[1]), e.line);
  case Expr::And: {
    Value left = eval(*e.args[0]);
    return truthy(left) ? eval(*e.args[1]) : left;
  }
  case Expr::Or: {
    Value left = eval(*e.args[0]);
    return truthy(left) ? left : eval(*e.args[1]);
  }
  case Expr::Ternary:
    if (truthy(eval(*e.args[0])))
      return eval(*e.args[1]);
    return e.args[2] ? eval(*e.args[2]) : undefined();
  }
  return undefined();
}

/// The evaluated arguments of a Call, Filter or Test from index `first`.
Arguments arguments(Evaluator &evaluator, const Expr &e, size_t first) {
  Arguments a{evaluator, e, {}};
  for (size_t i = first; i < e.args.size(); i++)
    a.args.push_back(evaluator.eval(*e.args[i]));
  return a;
}

/// The builtin `name` of `table`, or the template's error at `line`: a
/// `kind` ("filter", "test", "function") the interpreter lacks.
template <class Table>
typename Table::mapped_type builtin(const Table &table, const std::string &name,
                                    const char *kind, int line) {
  auto found = table.find(name);
  if (found == table.end())
    fail(line, std::string("the ") + kind + " '" + name + "' is not supported");
  return found->second;
}

Value Evaluator::call(const Expr &e) {
  const Expr &callee = *e.args[0];
  Arguments a = arguments(*this, e, 1);
  if (callee.kind == Expr::Attr)
    return method(eval(*callee.args[0]), callee.name, a);
  if (callee.kind != Expr::Name)
    fail(e.line, "only functions and methods can be called");
  return builtin(functions(), callee.name, "function", e.line)(a);
}

Value Evaluator::method(const Value &object, const std::string &name,
                        Arguments &a) {
  const auto &table = object.is_string()   ? stringMethods()
                      : object.is_object() ? mappingMethods()
                                           : std::map<std::string, Method>();
  auto found = table.find(name);
  if (found == table.end())
    fail(a.e.line, "no method '" + name + "' on " + pythonRepr(object));
  return found->second(object, name, a);
}

Value Evaluator::filter(const Expr &e) {
  Value v = eval(*e.args[0]);
  Arguments a = arguments(*this, e, 1);
  return builtin(filters(), e.name, "filter", e.line)(v, e.name, a);
}

bool Evaluator::test(const Expr &e) {
  Value v = eval(*e.args[0]);
  Arguments a = arguments(*this, e, 1);
  return builtin(tests(), e.name, "test", e.line)(v, e.name, a) != e.negated;
}

Evaluator::Flow Evaluator::render(const Node &node, std::string &out) {
  switch (node.kind) {
  case Node::Sequence:
    for (const auto &child : node.children)
      if (Flow flow = render(*child, out); flow != Flow::Next)
        return flow;
    return Flow::Next;
  case Node::Break:
    return Flow::Break;
  case Node::Continue:
    return Flow::Continue;
  case Node::Text:
    emit(out, node.text, node.line);
    return Flow::Next;
  case Node::Output:
    emit(out, show(eval(*node.value)), node.line);
    return Flow::Next;
  case Node::If:
    for (size_t i = 0; i < node.children.size(); i++)
      if (!node.conditions[i] || truthy(eval(*node.conditions[i])))
        return render(*node.children[i], out);
    return Flow::Next;
  case Node::Set: {
    Value value = eval(*node.value);
    const std::string &target = node.targets[0];
    size_t dot = target.find('.');
    if (dot == std::string::npos) {
      scopes_.back()[target] = value;
      return Flow::Next;
    }
    Value *object = find(target.substr(0, dot));
    if (!object || !object->is_object())
      fail(node.line, "'" + target.substr(0, dot) +
                          "' is not a namespace to set attributes on");
    (*object)[target.substr(dot + 1)] = value;
    return Flow::Next;
  }
  case Node::For: {
    Value iterable = eval(*node.value);
    Value items = Value::array();
    if (iterable.is_array())
      items = iterable;
    else if (iterable.is_object())
      for (const auto &[key, value] : iterable.items())
        items.push_back(key);
    else if (iterable.is_string())
      for (char c : iterable.get_ref<const std::string &>())
        items.push_back(std::string(1, c));
    else if (!isUndefined(iterable) && !iterable.is_null())
      fail(node.line, "cannot loop over " + pythonRepr(iterable));
    else if (iterable.is_null())
      fail(node.line, "cannot loop over None");
    // The "if" clause filters before loop.* counts.
    std::vector<Value> kept;
    for (const Value &element : items) {
      scopes_.push_back(Value::object());
      if (node.targets.size() == 1) {
        scopes_.back()[node.targets[0]] = element;
      } else {
        for (size_t t = 0; t < node.targets.size(); t++)
          scopes_.back()[node.targets[t]] =
              element.is_array() && t < element.size() ? element[t]
                                                       : undefined();
      }
      bool keep = !node.filter || truthy(eval(*node.filter));
      scopes_.pop_back();
      if (keep)
        kept.push_back(element);
    }
    if (kept.empty())
      return node.otherwise ? render(*node.otherwise, out) : Flow::Next;
    for (size_t i = 0; i < kept.size(); i++) {
      scopes_.push_back(Value::object());
      Value &scope = scopes_.back();
      if (node.targets.size() == 1)
        scope[node.targets[0]] = kept[i];
      else
        for (size_t t = 0; t < node.targets.size(); t++)
          scope[node.targets[t]] = kept[i].is_array() && t < kept[i].size()
                                       ? kept[i][t]
                                       : undefined();
      int64_t n = int64_t(kept.size()), k = int64_t(i);
      scope["loop"] = {{"index0", k},
                       {"index", k + 1},
                       {"revindex0", n - k - 1},
                       {"revindex", n - k},
                       {"first", k == 0},
                       {"last", k == n - 1},
                       {"length", n},
                       {"previtem", k > 0 ? kept[i - 1] : undefined()},
                       {"nextitem", k + 1 < n ? kept[i + 1] : undefined()}};
      Flow flow = render(*node.body, out);
      scopes_.pop_back();
      if (flow == Flow::Break)
        break;
    }
    return Flow::Next;
  }
  }
  return Flow::Next;
}

} // namespace jinja

using namespace jinja;

namespace {
/// Runs `body`, turning what the standard library or the JSON values throw
/// on a value of the wrong kind into a TemplateError.
template <class Body> auto asTemplateError(Body &&body) {
  try {
    return body();
  } catch (const TemplateError &) {
    throw;
  } catch (const nlohmann::json::exception &error) {
    throw TemplateError(std::string("a value of the wrong type: ") +
                        error.what());
  } catch (const std::logic_error &error) { // out_of_range, invalid_argument
    throw TemplateError(std::string("a value out of range: ") + error.what());
  }
}
} // namespace

namespace {
/// Refuses, with its line, a builtin the tables do not hold: at load, not
/// at the first request whose messages reach it.
void checkBuiltins(const Expr &e) {
  if (e.kind == Expr::Filter)
    (void)builtin(filters(), e.name, "filter", e.line);
  if (e.kind == Expr::Test)
    (void)builtin(tests(), e.name, "test", e.line);
  if (e.kind == Expr::Call && e.args[0]->kind == Expr::Name)
    (void)builtin(functions(), e.args[0]->name, "function", e.line);
  if (e.kind == Expr::Call && e.args[0]->kind == Expr::Attr &&
      !stringMethods().count(e.args[0]->name) &&
      !mappingMethods().count(e.args[0]->name))
    fail(e.line, "no method '" + e.args[0]->name + "' on strings or mappings");
  for (const ExprPtr &arg : e.args)
    if (arg)
      checkBuiltins(*arg);
  for (const auto &[key, value] : e.keywords)
    if (value)
      checkBuiltins(*value);
}

void checkBuiltins(const Node &node) {
  for (const ExprPtr *e : {&node.value, &node.filter})
    if (*e)
      checkBuiltins(**e);
  for (const ExprPtr &condition : node.conditions)
    if (condition)
      checkBuiltins(*condition);
  for (const auto &child : node.children)
    if (child)
      checkBuiltins(*child);
  for (const std::unique_ptr<Node> *child : {&node.body, &node.otherwise})
    if (*child)
      checkBuiltins(**child);
}
} // namespace

ChatTemplate::ChatTemplate(std::string_view source) {
  root_ = asTemplateError([&] {
    auto root = jinja::parse(source);
    checkBuiltins(*root);
    return root;
  });
}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;

std::string
ChatTemplate::render(const nlohmann::ordered_json &variables) const {
  if (!variables.is_object())
    throw TemplateError("the template's variables must be an object");
  return asTemplateError([&] {
    Evaluator evaluator(variables);
    std::string out;
    evaluator.render(*root_, out);
    return out;
  });
}

} // namespace attn::runtime::tokenizer
