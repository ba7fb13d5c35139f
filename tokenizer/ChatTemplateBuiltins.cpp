//===- ChatTemplateBuiltins.cpp - a chat template's functions, filters --===//
//
// Each table is the one place a builtin is known: the evaluator looks names
// up in it, and ChatTemplate's constructor refuses a template naming one
// that is not there (with its line) before any request renders it.
//
//===----------------------------------------------------------------------===//

#include "ChatTemplateEval.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>

namespace attn::runtime::tokenizer::jinja {

Value Arguments::keyword(const char *key) const {
  for (const auto &[k, value] : e.keywords)
    if (k == key)
      return evaluator.eval(*value);
  return undefined();
}

namespace {
// Builtins that serve several names (the name tells them apart).

Value changeCase(const Value &o, const std::string &name, Arguments &) {
  // capitalize: the first character up, the rest down; title: each word's
  // first letter up.
  std::string out = o.get<std::string>();
  bool start = true;
  for (char &c : out) {
    const bool up = name == "upper" || (name != "lower" && start);
    c = char(up ? std::toupper(uint8_t(c)) : std::tolower(uint8_t(c)));
    start = name == "title" && !std::isalpha(uint8_t(c));
  }
  return out;
}

Value keysOrValues(const Value &o, const std::string &name, Arguments &) {
  Value list = Value::array();
  for (const auto &[key, value] : o.items())
    list.push_back(name == "keys" ? Value(key) : value);
  return list;
}

Value length(const Value &v, const std::string &, Arguments &) {
  if (v.is_string())
    return int64_t(v.get_ref<const std::string &>().size());
  if (v.is_array() || v.is_object())
    return int64_t(v.size());
  return int64_t(0);
}

/// A filter that is the str method of the same name on str(value).
Value stringFilter(const Value &v, const std::string &name, Arguments &a) {
  return a.evaluator.method(Value(show(v)), name, a);
}

Value defaultFilter(const Value &v, const std::string &, Arguments &a) {
  bool boolean = a.args.size() > 1 && truthy(a.args[1]);
  bool missing = boolean ? !truthy(v) : isUndefined(v);
  return missing ? (a.args.empty() ? Value("") : a.args[0]) : v;
}

Value firstOrLast(const Value &v, const std::string &name, Arguments &a) {
  if (v.is_array())
    return v.empty() ? undefined() : name == "first" ? v.front() : v.back();
  if (v.is_string())
    return a.evaluator.item(v, Value(int64_t(name == "first" ? 0 : -1)));
  return undefined();
}

Value identity(const Value &v, const std::string &, Arguments &) { return v; }

Value selectOrReject(const Value &v, const std::string &name, Arguments &a) {
  Value out = Value::array();
  if (!v.is_array())
    return out;
  if (a.args.empty())
    fail(a.e.line, name + " needs an attribute name");
  for (const Value &element : v) {
    Value attribute = a.evaluator.item(element, a.args[0]);
    bool pass;
    if (a.args.size() == 1) {
      pass = truthy(attribute);
    } else {
      std::string testName = show(a.args[1]);
      Value operand = a.args.size() > 2 ? a.args[2] : undefined();
      if (testName == "equalto" || testName == "==" || testName == "eq")
        pass = attribute == operand;
      else if (testName == "ne" || testName == "!=")
        pass = attribute != operand;
      else if (testName == "defined")
        pass = !isUndefined(attribute);
      else if (testName == "undefined")
        pass = isUndefined(attribute);
      else if (testName == "none")
        pass = attribute.is_null();
      else if (testName == "in")
        pass = truthy(a.evaluator.binary("in", attribute, operand, a.e.line));
      else
        fail(a.e.line,
             "the test '" + testName + "' is not supported in " + name);
    }
    if (pass == (name == "selectattr"))
      out.push_back(element);
  }
  return out;
}

bool evenOrOdd(const Value &v, const std::string &name, Arguments &) {
  return v.is_number_integer() &&
         (v.get<int64_t>() % 2 == 0) == (name == "even");
}

bool equalTo(const Value &v, const std::string &, Arguments &a) {
  return !a.args.empty() && v == a.args[0];
}

} // namespace

const std::map<std::string, Function> &functions() {
  static const std::map<std::string, Function> table = {
      {"raise_exception",
       [](Arguments &a) -> Value {
         throw TemplateError(a.args.empty() ? "raise_exception()"
                                            : show(a.args[0]));
       }},
      {"namespace",
       [](Arguments &a) {
         Value ns = Value::object();
         if (!a.args.empty() && a.args[0].is_object())
           ns = a.args[0];
         for (const auto &[key, value] : a.e.keywords)
           ns[key] = a.evaluator.eval(*value);
         return ns;
       }},
      {"range",
       [](Arguments &a) {
         int64_t begin = 0, end = 0, step = 1;
         for (const Value &arg : a.args)
           if (!arg.is_number_integer())
             fail(a.e.line, "range() takes integers");
         if (a.args.size() == 1)
           end = a.args[0].get<int64_t>();
         else if (a.args.size() >= 2) {
           begin = a.args[0].get<int64_t>();
           end = a.args[1].get<int64_t>();
           if (a.args.size() == 3)
             step = a.args[2].get<int64_t>();
         }
         if (step == 0)
           fail(a.e.line, "range() step cannot be zero");
         // Jinja2's sandbox allows ranges of up to 100000 items.
         if ((double(end) - double(begin)) / double(step) > 100000)
           fail(a.e.line, "range() of more than 100000 items");
         Value list = Value::array();
         for (int64_t i = begin; step > 0 ? i < end : i > end; i += step)
           list.push_back(i);
         return list;
       }},
      {"strftime_now",
       [](Arguments &a) {
         std::time_t now = std::time(nullptr);
         char buffer[128] = "";
         std::tm local;
         localtime_r(&now, &local);
         std::strftime(buffer, sizeof buffer,
                       a.args.empty() ? "%Y-%m-%d" : show(a.args[0]).c_str(),
                       &local);
         return Value(std::string(buffer));
       }},
  };
  return table;
}

/// Python's str methods.
const std::map<std::string, Method> &stringMethods() {
  static const std::map<std::string, Method> table = {
      {"strip",
       [](const Value &o, const std::string &, Arguments &a) {
         return Value(stripChars(o.get<std::string>(), a.text(0), true, true));
       }},
      {"lstrip",
       [](const Value &o, const std::string &, Arguments &a) {
         return Value(stripChars(o.get<std::string>(), a.text(0), true, false));
       }},
      {"rstrip",
       [](const Value &o, const std::string &, Arguments &a) {
         return Value(stripChars(o.get<std::string>(), a.text(0), false, true));
       }},
      {"startswith",
       [](const Value &o, const std::string &, Arguments &a) {
         return Value(o.get_ref<const std::string &>().rfind(a.text(0), 0) ==
                      0);
       }},
      {"endswith",
       [](const Value &o, const std::string &, Arguments &a) {
         const std::string &s = o.get_ref<const std::string &>();
         std::string suffix = a.text(0);
         return Value(
             s.size() >= suffix.size() &&
             s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0);
       }},
      {"upper", changeCase},
      {"lower", changeCase},
      {"title", changeCase},
      {"capitalize", changeCase},
      {"split",
       [](const Value &o, const std::string &, Arguments &a) {
         const std::string &s = o.get_ref<const std::string &>();
         Value parts = Value::array();
         std::string separator = a.text(0);
         if (separator.empty()) { // Python: runs of whitespace
           size_t at = 0;
           while (at < s.size()) {
             while (at < s.size() && isSpace(s[at]))
               at++;
             size_t begin = at;
             while (at < s.size() && !isSpace(s[at]))
               at++;
             if (at > begin)
               parts.push_back(s.substr(begin, at - begin));
           }
           return parts;
         }
         size_t begin = 0;
         for (size_t at = s.find(separator); at != std::string::npos;
              at = s.find(separator, begin)) {
           parts.push_back(s.substr(begin, at - begin));
           begin = at + separator.size();
         }
         parts.push_back(s.substr(begin));
         return parts;
       }},
      {"replace",
       [](const Value &o, const std::string &, Arguments &a) {
         const std::string &s = o.get_ref<const std::string &>();
         std::string out, from = a.text(0), to = a.text(1);
         if (from.empty())
           return Value(s);
         size_t begin = 0;
         for (size_t at = s.find(from); at != std::string::npos;
              at = s.find(from, begin)) {
           out += s.substr(begin, at - begin) + to;
           begin = at + from.size();
         }
         return Value(out + s.substr(begin));
       }},
  };
  return table;
}

/// Python's dict methods.
const std::map<std::string, Method> &mappingMethods() {
  static const std::map<std::string, Method> table = {
      {"items",
       [](const Value &o, const std::string &, Arguments &) {
         Value list = Value::array();
         for (const auto &[key, value] : o.items())
           list.push_back(Value::array({key, value}));
         return list;
       }},
      {"keys", keysOrValues},
      {"values", keysOrValues},
      {"get",
       [](const Value &o, const std::string &, Arguments &a) {
         Value found =
             a.args.empty() ? undefined() : a.evaluator.item(o, a.args[0]);
         return isUndefined(found)
                    ? (a.args.size() > 1 ? a.args[1] : Value(nullptr))
                    : found;
       }},
  };
  return table;
}

const std::map<std::string, FilterFn> &filters() {
  static const std::map<std::string, FilterFn> table = {
      {"trim",
       [](const Value &v, const std::string &, Arguments &a) {
         return Value(stripChars(show(v), a.text(0), true, true));
       }},
      {"length", length},
      {"count", length},
      {"tojson",
       [](const Value &v, const std::string &, Arguments &a) {
         Value indent = a.args.empty() ? a.keyword("indent") : a.args[0];
         std::string out;
         dumpJson(v,
                  indent.is_number_integer() ? int(indent.get<int64_t>()) : 0,
                  0, out);
         return Value(out);
       }},
      {"string", [](const Value &v, const std::string &,
                    Arguments &) { return Value(show(v)); }},
      {"upper", stringFilter},
      {"lower", stringFilter},
      {"capitalize", stringFilter},
      {"title", stringFilter},
      {"replace", stringFilter},
      {"default", defaultFilter},
      {"d", defaultFilter},
      {"first", firstOrLast},
      {"last", firstOrLast},
      {"join",
       [](const Value &v, const std::string &, Arguments &a) {
         std::string out, separator = a.text(0);
         if (v.is_array())
           for (size_t i = 0; i < v.size(); i++)
             out += (i ? separator : "") + show(v[i]);
         return Value(out);
       }},
      {"list",
       [](const Value &v, const std::string &, Arguments &) {
         if (v.is_array())
           return v;
         Value list = Value::array();
         if (v.is_string())
           for (char c : v.get_ref<const std::string &>())
             list.push_back(std::string(1, c));
         else if (v.is_object())
           for (const auto &[key, value] : v.items())
             list.push_back(key);
         return list;
       }},
      {"reverse",
       [](const Value &v, const std::string &, Arguments &) {
         if (v.is_string()) {
           std::string s = v.get<std::string>();
           std::reverse(s.begin(), s.end());
           return Value(s);
         }
         Value list = v.is_array() ? v : Value::array();
         std::reverse(list.begin(), list.end());
         return list;
       }},
      {"items",
       [](const Value &v, const std::string &name, Arguments &a) {
         return mappingMethods().at(name)(v.is_object() ? v : Value::object(),
                                          name, a);
       }},
      {"int",
       [](const Value &v, const std::string &, Arguments &a) {
         if (v.is_number_integer())
           return v;
         if (v.is_number()) {
           // Python's int() of a float past 64 bits is a big integer, of
           // infinity an error, of NaN Jinja's default 0.
           const double d = v.get<double>();
           if (std::isnan(d))
             return Value(int64_t(0));
           if (!(d >= -0x1p63 && d < 0x1p63))
             fail(a.e.line, "integer overflow in int");
           return Value(int64_t(d));
         }
         try {
           return Value(int64_t(std::stoll(show(v))));
         } catch (const std::exception &) {
           return Value(int64_t(0));
         }
       }},
      {"float",
       [](const Value &v, const std::string &, Arguments &) {
         if (v.is_number())
           return Value(v.get<double>());
         try {
           return Value(std::stod(show(v)));
         } catch (const std::exception &) {
           return Value(0.0);
         }
       }},
      {"abs",
       [](const Value &v, const std::string &, Arguments &a) {
         if (v.is_number_integer() && v.get<int64_t>() == INT64_MIN)
           fail(a.e.line, "integer overflow in abs");
         return v.is_number_integer() ? Value(std::llabs(v.get<int64_t>()))
                                      : Value(std::fabs(v.get<double>()));
       }},
      {"safe", identity},
      {"escape", identity},
      {"e", identity},
      {"selectattr", selectOrReject},
      {"rejectattr", selectOrReject},
      {"map",
       [](const Value &v, const std::string &, Arguments &a) {
         Value out = Value::array();
         if (!v.is_array())
           return out;
         Value attribute = a.keyword("attribute");
         if (isUndefined(attribute) && !a.args.empty())
           attribute = a.args[0];
         for (const Value &element : v)
           out.push_back(a.evaluator.item(element, attribute));
         return out;
       }},
  };
  return table;
}

const std::map<std::string, TestFn> &tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", [](const Value &v, const std::string &,
                     Arguments &) { return !isUndefined(v); }},
      {"undefined", [](const Value &v, const std::string &,
                       Arguments &) { return isUndefined(v); }},
      {"none", [](const Value &v, const std::string &,
                  Arguments &) { return v.is_null(); }},
      {"string", [](const Value &v, const std::string &,
                    Arguments &) { return v.is_string(); }},
      {"number", [](const Value &v, const std::string &,
                    Arguments &) { return v.is_number() && !v.is_boolean(); }},
      {"integer", [](const Value &v, const std::string &,
                     Arguments &) { return v.is_number_integer(); }},
      {"float", [](const Value &v, const std::string &,
                   Arguments &) { return v.is_number_float(); }},
      {"boolean", [](const Value &v, const std::string &,
                     Arguments &) { return v.is_boolean(); }},
      {"mapping", [](const Value &v, const std::string &,
                     Arguments &) { return v.is_object(); }},
      {"sequence", [](const Value &v, const std::string &,
                      Arguments &) { return v.is_array() || v.is_string(); }},
      {"iterable",
       [](const Value &v, const std::string &, Arguments &) {
         return v.is_array() || v.is_string() || v.is_object();
       }},
      {"true", [](const Value &v, const std::string &,
                  Arguments &) { return v.is_boolean() && v.get<bool>(); }},
      {"false", [](const Value &v, const std::string &,
                   Arguments &) { return v.is_boolean() && !v.get<bool>(); }},
      {"even", evenOrOdd},
      {"odd", evenOrOdd},
      {"equalto", equalTo},
      {"eq", equalTo},
      {"sameas", equalTo},
      {"divisibleby",
       [](const Value &v, const std::string &, Arguments &a) {
         // By an integer, as Python's % would; -1 divides everything (and
         // INT64_MIN % -1 would overflow).
         const Value divisor = a.args.empty() ? Value() : a.args[0];
         return v.is_number_integer() && divisor.is_number_integer() &&
                divisor.get<int64_t>() != 0 &&
                (divisor.get<int64_t>() == -1 ||
                 v.get<int64_t>() % divisor.get<int64_t>() == 0);
       }},
  };
  return table;
}

} // namespace attn::runtime::tokenizer::jinja
