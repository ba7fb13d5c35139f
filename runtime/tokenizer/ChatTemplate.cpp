//===- ChatTemplate.cpp - the Jinja subset of chat templates --------------===//
//
// Three stages: the source is cut into text and tags (with Jinja's
// whitespace control and transformers' trim_blocks / lstrip_blocks), tags
// are parsed into a tree of nodes and expressions, and the tree is
// evaluated over JSON values with a stack of scopes (a for loop's `set`
// stays in the loop, which is why templates use namespace()).
//
//===----------------------------------------------------------------------===//

#include "ChatTemplate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <vector>

namespace attn::runtime::tokenizer {

using Value = nlohmann::ordered_json;

namespace {

[[noreturn]] void fail(int line, const std::string &message) {
  throw TemplateError("line " + std::to_string(line) + ": " + message);
}

Value undefined() { return Value(Value::value_t::discarded); }
bool isUndefined(const Value &v) { return v.is_discarded(); }

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

// --- the source, cut into text and tags ------------------------------------

struct Segment {
  enum Kind { Text, Output, Statement } kind;
  std::string text; ///< Text: as is; tags: their inside, trimmed
  int line;
};

bool isBlank(char c) { return c == ' ' || c == '\t'; }
bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

std::vector<Segment> cut(std::string_view source) {
  std::vector<Segment> segments;
  size_t at = 0;
  int line = 1;
  bool stripNext = false;    // the last tag ended with "-"
  bool trimNewline = false;  // the last tag was a block or comment (trim_blocks)
  auto countLines = [&](size_t from, size_t to) {
    line += int(std::count(source.begin() + from, source.begin() + to, '\n'));
  };
  while (at <= source.size()) {
    size_t open = source.find('{', at);
    while (open != std::string_view::npos && open + 1 < source.size() &&
           source[open + 1] != '{' && source[open + 1] != '%' &&
           source[open + 1] != '#')
      open = source.find('{', open + 1);
    if (open + 1 >= source.size())
      open = std::string_view::npos;
    std::string text(source.substr(
        at, open == std::string_view::npos ? std::string_view::npos : open - at));
    int textLine = line;
    if (stripNext) {
      size_t keep = 0;
      while (keep < text.size() && isSpace(text[keep]))
        keep++;
      text.erase(0, keep);
    } else if (trimNewline && !text.empty() && text[0] == '\n') {
      text.erase(0, 1);
    } else if (trimNewline && text.size() >= 2 && text[0] == '\r' &&
               text[1] == '\n') {
      text.erase(0, 2);
    }
    if (open == std::string_view::npos) {
      if (!text.empty())
        segments.push_back({Segment::Text, text, textLine});
      break;
    }
    char kind = source[open + 1];
    const char *closer = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    size_t close = source.find(closer, open + 2);
    countLines(at, open);
    if (close == std::string_view::npos)
      fail(line, std::string("'{") + kind + "' is never closed");
    bool stripBefore = open + 2 < source.size() && source[open + 2] == '-';
    bool keepBefore = open + 2 < source.size() && source[open + 2] == '+';
    bool stripAfter = close > open + 2 && source[close - 1] == '-';
    if (stripBefore) {
      while (!text.empty() && isSpace(text.back()))
        text.pop_back();
    } else if (kind != '{' && !keepBefore) {
      // lstrip_blocks: a block tag preceded on its line by blanks only
      // takes those blanks away.
      size_t blank = open;
      while (blank > at && isBlank(source[blank - 1]))
        blank--;
      if (blank == 0 || source[blank - 1] == '\n')
        text.erase(text.size() - std::min(text.size(), open - blank));
    }
    if (!text.empty())
      segments.push_back({Segment::Text, text, textLine});
    size_t innerBegin = open + 2 + (stripBefore || keepBefore ? 1 : 0);
    size_t innerEnd = close - (stripAfter ? 1 : 0);
    std::string inner(source.substr(innerBegin, innerEnd - innerBegin));
    if (kind != '#')
      segments.push_back({kind == '{' ? Segment::Output : Segment::Statement,
                          inner, line});
    countLines(open, close + 2);
    at = close + 2;
    stripNext = stripAfter;
    trimNewline = kind != '{';
  }
  return segments;
}

// --- expressions -----------------------------------------------------------

struct Token {
  enum Kind { Name, Number, String, Operator, End } kind;
  std::string text;
  Value number;
};

std::vector<Token> tokenize(const std::string &text, int line) {
  std::vector<Token> tokens;
  size_t at = 0;
  while (at < text.size()) {
    char c = text[at];
    if (isSpace(c)) {
      at++;
    } else if (std::isalpha(uint8_t(c)) || c == '_') {
      size_t begin = at;
      while (at < text.size() &&
             (std::isalnum(uint8_t(text[at])) || text[at] == '_'))
        at++;
      tokens.push_back({Token::Name, text.substr(begin, at - begin), {}});
    } else if (std::isdigit(uint8_t(c))) {
      size_t begin = at;
      bool real = false;
      while (at < text.size() &&
             (std::isdigit(uint8_t(text[at])) ||
              (text[at] == '.' && at + 1 < text.size() &&
               std::isdigit(uint8_t(text[at + 1]))))) {
        real |= text[at] == '.';
        at++;
      }
      std::string digits = text.substr(begin, at - begin);
      Value number;
      if (real) {
        number = std::strtod(digits.c_str(), nullptr);
      } else {
        int64_t integer = 0;
        auto [end, ec] = std::from_chars(digits.data(),
                                         digits.data() + digits.size(), integer);
        if (ec != std::errc())
          fail(line, "the integer " + digits + " is too large");
        number = integer;
      }
      tokens.push_back({Token::Number, digits, number});
    } else if (c == '\'' || c == '"') {
      std::string value;
      at++;
      while (at < text.size() && text[at] != c) {
        if (text[at] == '\\' && at + 1 < text.size()) {
          char e = text[++at];
          value += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        } else {
          value += text[at];
        }
        at++;
      }
      if (at >= text.size())
        fail(line, "a string is never closed");
      at++;
      tokens.push_back({Token::String, value, {}});
    } else {
      static const char *kTwo[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string op(1, c);
      for (const char *two : kTwo)
        if (text.compare(at, 2, two) == 0)
          op = two;
      if (std::string("+-*/%~<>=!()[]{}.,:|").find(c) == std::string::npos)
        fail(line, std::string("unexpected '") + c + "'");
      at += op.size();
      tokens.push_back({Token::Operator, op, {}});
    }
  }
  tokens.push_back({Token::End, "", {}});
  return tokens;
}

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal, Name, List, Dict, Attr, Index, Slice, Call, Filter, Test,
    Not, Negate, Binary, And, Or, Ternary
  } kind;
  Value literal;
  std::string name;          ///< Name, Attr, Filter, Test, Binary's operator
  std::vector<ExprPtr> args; ///< operands; Call/Filter/Test: positional
  std::vector<std::pair<std::string, ExprPtr>> keywords; ///< Call, Filter
  bool negated = false;      ///< Test: "is not"
  int line = 0;
};

class ExprParser {
public:
  ExprParser(std::vector<Token> tokens, int line)
      : tokens_(std::move(tokens)), line_(line) {}

  ExprPtr parse() { return ternary(); }
  bool atEnd() const { return peek().kind == Token::End; }
  const Token &peek(size_t ahead = 0) const {
    return tokens_[std::min(at_ + ahead, tokens_.size() - 1)];
  }
  bool accept(const std::string &text) {
    if ((peek().kind == Token::Operator || peek().kind == Token::Name) &&
        peek().text == text) {
      at_++;
      return true;
    }
    return false;
  }
  void expect(const std::string &text) {
    if (!accept(text))
      fail(line_, "expected '" + text + "', found '" + peek().text + "'");
  }
  std::string name() {
    if (peek().kind != Token::Name)
      fail(line_, "expected a name, found '" + peek().text + "'");
    return tokens_[at_++].text;
  }

private:
  ExprPtr make(Expr::Kind kind) {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->line = line_;
    return e;
  }
  /// Nesting beyond this is an error, not a stack overflow (fuzzed input).
  static constexpr int kMaxDepth = 200;
  struct Deeper {
    int &depth;
    Deeper(int &depth, int line) : depth(depth) {
      if (++depth > kMaxDepth)
        fail(line, "expressions nested deeper than " +
                       std::to_string(kMaxDepth));
    }
    ~Deeper() { depth--; }
  };
  ExprPtr ternary() {
    Deeper deeper(depth_, line_);
    ExprPtr value = orExpr();
    if (peek().kind == Token::Name && peek().text == "if") {
      at_++;
      ExprPtr condition = orExpr();
      ExprPtr otherwise;
      if (accept("else"))
        otherwise = ternary();
      auto e = make(Expr::Ternary);
      e->args = {condition, value, otherwise};
      return e;
    }
    return value;
  }
  ExprPtr orExpr() {
    ExprPtr left = andExpr();
    while (accept("or")) {
      auto e = make(Expr::Or);
      e->args = {left, andExpr()};
      left = e;
    }
    return left;
  }
  ExprPtr andExpr() {
    ExprPtr left = notExpr();
    while (accept("and")) {
      auto e = make(Expr::And);
      e->args = {left, notExpr()};
      left = e;
    }
    return left;
  }
  ExprPtr notExpr() {
    Deeper deeper(depth_, line_);
    if (accept("not")) {
      auto e = make(Expr::Not);
      e->args = {notExpr()};
      return e;
    }
    return comparison();
  }
  /// Comparisons chain as in Python ("a < b <= c" is "a < b and b <= c");
  /// "is [not] test" applies to everything before it.
  ExprPtr comparison() {
    ExprPtr result = concat();
    ExprPtr lastOperand; // the right side of the chain's last comparison
    for (;;) {
      static const char *kOps[] = {"==", "!=", "<", "<=", ">", ">="};
      std::string op;
      for (const char *candidate : kOps)
        if (peek().kind == Token::Operator && peek().text == candidate)
          op = candidate;
      if (!op.empty()) {
        at_++;
      } else if (accept("in")) {
        op = "in";
      } else if (peek().kind == Token::Name && peek().text == "not" &&
                 peek(1).kind == Token::Name && peek(1).text == "in") {
        at_ += 2;
        op = "not in";
      } else if (accept("is")) {
        auto e = make(Expr::Test);
        e->negated = accept("not");
        e->name = name();
        e->args = {result};
        if (accept("("))
          arguments(*e);
        else if (peek().kind == Token::String || peek().kind == Token::Number)
          e->args.push_back(primary()); // "is divisibleby 3"
        result = e;
        lastOperand = nullptr;
        continue;
      } else {
        return result;
      }
      ExprPtr right = concat();
      auto compare = make(Expr::Binary);
      compare->name = op;
      compare->args = {lastOperand ? lastOperand : result, right};
      if (lastOperand) {
        auto both = make(Expr::And);
        both->args = {result, compare};
        result = both;
      } else {
        result = compare;
      }
      lastOperand = right;
    }
  }
  ExprPtr concat() {
    ExprPtr left = additive();
    while (accept("~")) {
      auto e = make(Expr::Binary);
      e->name = "~";
      e->args = {left, additive()};
      left = e;
    }
    return left;
  }
  ExprPtr additive() {
    ExprPtr left = multiplicative();
    while (peek().kind == Token::Operator &&
           (peek().text == "+" || peek().text == "-")) {
      auto e = make(Expr::Binary);
      e->name = tokens_[at_++].text;
      e->args = {left, multiplicative()};
      left = e;
    }
    return left;
  }
  ExprPtr multiplicative() {
    ExprPtr left = unary();
    while (peek().kind == Token::Operator &&
           (peek().text == "*" || peek().text == "/" || peek().text == "//" ||
            peek().text == "%")) {
      auto e = make(Expr::Binary);
      e->name = tokens_[at_++].text;
      e->args = {left, unary()};
      left = e;
    }
    return left;
  }
  /// As Jinja's parse_unary: "-x|f" is f(-x), and the operand of a minus
  /// takes no filters of its own.
  ExprPtr unary(bool withFilters = true) {
    Deeper deeper(depth_, line_);
    ExprPtr value;
    if (accept("-")) {
      value = make(Expr::Negate);
      value->args = {unary(false)};
    } else {
      accept("+");
      value = primary();
    }
    value = postfix(value);
    while (withFilters && accept("|")) {
      auto e = make(Expr::Filter);
      e->name = name();
      e->args = {value};
      if (accept("("))
        arguments(*e);
      value = postfix(e);
    }
    return value;
  }
  /// Arguments after "(", through ")".
  void arguments(Expr &call) {
    if (accept(")"))
      return;
    do {
      if (peek().kind == Token::Name && peek(1).kind == Token::Operator &&
          peek(1).text == "=") {
        std::string key = name();
        at_++;
        call.keywords.push_back({key, ternary()});
      } else {
        call.args.push_back(ternary());
      }
    } while (accept(","));
    expect(")");
  }
  ExprPtr postfix(ExprPtr value) {
    for (;;) {
      if (accept(".")) {
        auto e = make(Expr::Attr);
        e->name = name();
        e->args = {value};
        value = e;
      } else if (accept("[")) {
        ExprPtr parts[3];
        int colons = 0;
        for (;;) {
          if (peek().kind == Token::Operator &&
              (peek().text == ":" || peek().text == "]")) {
          } else {
            parts[colons] = ternary();
          }
          if (accept(":")) {
            if (++colons > 2)
              fail(line_, "a slice has at most two ':'");
            continue;
          }
          break;
        }
        expect("]");
        auto e = make(colons ? Expr::Slice : Expr::Index);
        e->args = {value, parts[0], parts[1], parts[2]};
        if (!colons && !parts[0])
          fail(line_, "an empty index");
        value = e;
      } else if (accept("(")) {
        auto e = make(Expr::Call);
        e->args = {value};
        arguments(*e);
        value = e;
      } else {
        return value;
      }
    }
  }
  ExprPtr primary() {
    const Token &t = peek();
    if (t.kind == Token::Number) {
      auto e = make(Expr::Literal);
      e->literal = t.number;
      at_++;
      return e;
    }
    if (t.kind == Token::String) {
      auto e = make(Expr::Literal);
      std::string text = t.text;
      at_++;
      while (peek().kind == Token::String) // adjacent strings join
        text += tokens_[at_++].text;
      e->literal = text;
      return e;
    }
    if (t.kind == Token::Name) {
      std::string word = name();
      auto e = make(Expr::Literal);
      if (word == "true" || word == "True")
        e->literal = true;
      else if (word == "false" || word == "False")
        e->literal = false;
      else if (word == "none" || word == "None")
        e->literal = nullptr;
      else {
        e->kind = Expr::Name;
        e->name = word;
      }
      return e;
    }
    if (accept("(")) {
      ExprPtr inner = ternary();
      if (accept(",")) { // a tuple: a list here
        auto e = make(Expr::List);
        e->args = {inner};
        if (!accept(")")) {
          do
            e->args.push_back(ternary());
          while (accept(",") && !(peek().text == ")"));
          expect(")");
        }
        return e;
      }
      expect(")");
      return inner;
    }
    if (accept("[")) {
      auto e = make(Expr::List);
      if (!accept("]")) {
        do {
          if (peek().text == "]")
            break;
          e->args.push_back(ternary());
        } while (accept(","));
        expect("]");
      }
      return e;
    }
    if (accept("{")) {
      auto e = make(Expr::Dict);
      if (!accept("}")) {
        do {
          if (peek().text == "}")
            break;
          e->args.push_back(ternary());
          expect(":");
          e->args.push_back(ternary());
        } while (accept(","));
        expect("}");
      }
      return e;
    }
    fail(line_, "unexpected '" + t.text + "'");
  }

  std::vector<Token> tokens_;
  size_t at_ = 0;
  int line_;
  int depth_ = 0;
};

} // namespace

// --- statements ------------------------------------------------------------

struct ChatTemplate::Node {
  enum Kind { Sequence, Text, Output, If, For, Set, Break, Continue } kind =
      Sequence;
  std::string text;                  ///< Text
  std::vector<ExprPtr> conditions;   ///< If: one per branch (null: else)
  std::vector<std::unique_ptr<Node>> children; ///< Sequence; If: branches
  std::vector<std::string> targets;  ///< For: loop names; Set: name[.attr]
  ExprPtr value;                     ///< Output, For (iterable), Set
  ExprPtr filter;                    ///< For: "if" clause
  std::unique_ptr<Node> body, otherwise; ///< For
  int line = 0;
};

namespace {

using Node = ChatTemplate::Node;

class TemplateParser {
public:
  explicit TemplateParser(std::vector<Segment> segments)
      : segments_(std::move(segments)) {}

  std::unique_ptr<Node> parseAll() {
    std::string stop;
    auto root = parseUntil({}, stop);
    if (!stop.empty())
      fail(line_, "'" + stop + "' without its opening tag");
    return root;
  }

private:
  /// Nodes until a statement whose keyword is in `ends` (returned in
  /// `stop`; its parser positioned after the keyword).
  std::unique_ptr<Node> parseUntil(const std::vector<std::string> &ends,
                                   std::string &stop) {
    if (blocks_ > 200)
      fail(line_, "blocks nested deeper than 200");
    struct Nest {
      int &blocks;
      ~Nest() { blocks--; }
    } nest{++blocks_};
    auto sequence = std::make_unique<Node>();
    stop.clear();
    while (at_ < segments_.size()) {
      const Segment &s = segments_[at_++];
      line_ = s.line;
      if (s.kind == Segment::Text) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Text;
        node->text = s.text;
        sequence->children.push_back(std::move(node));
        continue;
      }
      current_ = std::make_unique<ExprParser>(tokenize(s.text, s.line), s.line);
      if (s.kind == Segment::Output) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Output;
        node->line = s.line;
        node->value = current_->parse();
        finish();
        sequence->children.push_back(std::move(node));
        continue;
      }
      std::string keyword = current_->name();
      if (std::find(ends.begin(), ends.end(), keyword) != ends.end()) {
        stop = keyword;
        return sequence;
      }
      if (keyword == "if")
        sequence->children.push_back(parseIf());
      else if (keyword == "for")
        sequence->children.push_back(parseFor());
      else if (keyword == "set")
        sequence->children.push_back(parseSet());
      else if (keyword == "break" || keyword == "continue") {
        if (loops_ == 0)
          fail(line_, "'" + keyword + "' outside a loop");
        finish();
        auto node = std::make_unique<Node>();
        node->kind = keyword == "break" ? Node::Break : Node::Continue;
        sequence->children.push_back(std::move(node));
      }
      else if (keyword == "endif" || keyword == "endfor" || keyword == "elif" ||
               keyword == "else")
        fail(line_, "'" + keyword + "' without its opening tag");
      else
        fail(line_, "the '" + keyword +
                        "' statement is not supported in chat templates");
    }
    if (!ends.empty())
      fail(line_, "'" + ends.back() + "' is missing");
    return sequence;
  }
  void finish() {
    if (!current_->atEnd())
      fail(line_, "unexpected '" + current_->peek().text + "'");
  }
  std::unique_ptr<Node> parseIf() {
    auto node = std::make_unique<Node>();
    node->kind = Node::If;
    node->line = line_;
    ExprPtr condition = current_->parse();
    finish();
    for (;;) {
      std::string stop;
      auto branch = parseUntil({"elif", "else", "endif"}, stop);
      node->conditions.push_back(condition);
      node->children.push_back(std::move(branch));
      if (stop == "endif") {
        finish();
        return node;
      }
      if (stop == "else") {
        finish();
        condition = nullptr;
        auto last = parseUntil({"endif"}, stop);
        finish();
        node->conditions.push_back(nullptr);
        node->children.push_back(std::move(last));
        return node;
      }
      condition = current_->parse(); // elif
      finish();
    }
  }
  std::unique_ptr<Node> parseFor() {
    auto node = std::make_unique<Node>();
    node->kind = Node::For;
    node->line = line_;
    do
      node->targets.push_back(current_->name());
    while (current_->accept(","));
    current_->expect("in");
    // The iterable stops before a trailing "if" filter; parse it without
    // the ternary's "if".
    node->value = current_->parse();
    if (node->value->kind == Expr::Ternary && !node->value->args[2]) {
      node->filter = node->value->args[0];
      node->value = node->value->args[1];
    }
    current_->accept("recursive");
    finish();
    std::string stop;
    loops_++;
    node->body = parseUntil({"else", "endfor"}, stop);
    loops_--;
    if (stop == "else") {
      finish();
      node->otherwise = parseUntil({"endfor"}, stop);
    }
    finish();
    return node;
  }
  std::unique_ptr<Node> parseSet() {
    auto node = std::make_unique<Node>();
    node->kind = Node::Set;
    node->line = line_;
    std::string target = current_->name();
    if (current_->accept("."))
      target += "." + current_->name();
    node->targets.push_back(target);
    if (!current_->accept("="))
      fail(line_, "block assignments ({% set x %}...{% endset %}) are not "
                  "supported");
    node->value = current_->parse();
    finish();
    return node;
  }

  std::vector<Segment> segments_;
  size_t at_ = 0;
  int line_ = 1;
  int loops_ = 0;  ///< for loops around the statement being parsed
  int blocks_ = 0; ///< blocks around it
  std::unique_ptr<ExprParser> current_;
};

// --- evaluation ------------------------------------------------------------

/// Python's str() of a value, as {{ }} prints it.
std::string show(const Value &v);

std::string pythonRepr(const Value &v) {
  if (v.is_string()) {
    std::string out = "'";
    for (char c : v.get_ref<const std::string &>())
      out += c == '\'' ? std::string("\\'") : c == '\n' ? "\\n" : std::string(1, c);
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
  Value method(const Value &object, const std::string &name,
               const std::vector<Value> &args, int line);
  Value filter(const Expr &e);
  bool test(const Expr &e);
  Value binary(const std::string &op, const Value &a, const Value &b,
               int line);
  Value item(const Value &object, const Value &key);

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
    int64_t size = object.is_array() ? int64_t(object.size())
                                     : int64_t(object.get_ref<const std::string &>().size());
    int64_t i = normalizeIndex(key.get<int64_t>(), size);
    if (i < 0 || i >= size)
      return undefined();
    return object.is_array()
               ? object[size_t(i)]
               : Value(std::string(1, object.get_ref<const std::string &>()[size_t(i)]));
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
      int64_t i = a.get<int64_t>(), j = b.get<int64_t>();
      if (op == "+")
        return i + j;
      if (op == "-")
        return i - j;
      if (op == "*")
        return i * j;
      if (op == "//")
        return int64_t(std::floor(double(i) / double(j)));
      if (op == "%")
        return ((i % j) + j) % j;
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
    int64_t size = isString ? int64_t(object.get_ref<const std::string &>().size())
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
    if (v.is_number_integer())
      return -v.get<int64_t>();
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

Value Evaluator::call(const Expr &e) {
  const Expr &callee = *e.args[0];
  std::vector<Value> args;
  for (size_t i = 1; i < e.args.size(); i++)
    args.push_back(eval(*e.args[i]));
  if (callee.kind == Expr::Attr) {
    Value object = eval(*callee.args[0]);
    return method(object, callee.name, args, e.line);
  }
  if (callee.kind != Expr::Name)
    fail(e.line, "only functions and methods can be called");
  const std::string &name = callee.name;
  if (name == "raise_exception")
    throw TemplateError(args.empty() ? "raise_exception()" : show(args[0]));
  if (name == "namespace") {
    Value ns = Value::object();
    if (!args.empty() && args[0].is_object())
      ns = args[0];
    for (const auto &[key, value] : e.keywords)
      ns[key] = eval(*value);
    return ns;
  }
  if (name == "range") {
    int64_t begin = 0, end = 0, step = 1;
    if (args.size() == 1)
      end = args[0].get<int64_t>();
    else if (args.size() >= 2) {
      begin = args[0].get<int64_t>();
      end = args[1].get<int64_t>();
      if (args.size() == 3)
        step = args[2].get<int64_t>();
    }
    if (step == 0)
      fail(e.line, "range() step cannot be zero");
    // Jinja2's sandbox allows ranges of up to 100000 items.
    if ((double(end) - double(begin)) / double(step) > 100000)
      fail(e.line, "range() of more than 100000 items");
    Value list = Value::array();
    for (int64_t i = begin; step > 0 ? i < end : i > end; i += step)
      list.push_back(i);
    return list;
  }
  if (name == "strftime_now") {
    std::time_t now = std::time(nullptr);
    char buffer[128] = "";
    std::tm local;
    localtime_r(&now, &local);
    std::strftime(buffer, sizeof buffer,
                  args.empty() ? "%Y-%m-%d" : show(args[0]).c_str(), &local);
    return std::string(buffer);
  }
  fail(e.line, "unknown function '" + name + "'");
}

Value Evaluator::method(const Value &object, const std::string &name,
                        const std::vector<Value> &args, int line) {
  auto arg = [&](size_t i) -> std::string {
    return i < args.size() && !args[i].is_null() ? show(args[i]) : "";
  };
  if (object.is_string()) {
    const std::string &s = object.get_ref<const std::string &>();
    if (name == "strip")
      return stripChars(s, arg(0), true, true);
    if (name == "lstrip")
      return stripChars(s, arg(0), true, false);
    if (name == "rstrip")
      return stripChars(s, arg(0), false, true);
    if (name == "startswith")
      return s.rfind(arg(0), 0) == 0;
    if (name == "endswith") {
      std::string suffix = arg(0);
      return s.size() >= suffix.size() &&
             s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    }
    if (name == "upper" || name == "lower") {
      std::string out = s;
      for (char &c : out)
        c = char(name == "upper" ? std::toupper(uint8_t(c))
                                 : std::tolower(uint8_t(c)));
      return out;
    }
    if (name == "split") {
      Value parts = Value::array();
      std::string separator = arg(0);
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
    }
    if (name == "replace") {
      std::string out, from = arg(0), to = arg(1);
      if (from.empty())
        return s;
      size_t begin = 0;
      for (size_t at = s.find(from); at != std::string::npos;
           at = s.find(from, begin)) {
        out += s.substr(begin, at - begin) + to;
        begin = at + from.size();
      }
      return out + s.substr(begin);
    }
    if (name == "title" || name == "capitalize") {
      // capitalize: the first character up, the rest down; title: each
      // word's first letter up.
      std::string out = s;
      bool start = true;
      for (char &c : out) {
        c = char(start ? std::toupper(uint8_t(c)) : std::tolower(uint8_t(c)));
        start = name == "title" && !std::isalpha(uint8_t(c));
      }
      return out;
    }
  }
  if (object.is_object()) {
    if (name == "items") {
      Value list = Value::array();
      for (const auto &[key, value] : object.items())
        list.push_back(Value::array({key, value}));
      return list;
    }
    if (name == "keys" || name == "values") {
      Value list = Value::array();
      for (const auto &[key, value] : object.items())
        list.push_back(name == "keys" ? Value(key) : value);
      return list;
    }
    if (name == "get") {
      Value found = args.empty() ? undefined() : item(object, args[0]);
      return isUndefined(found) ? (args.size() > 1 ? args[1] : Value(nullptr))
                                : found;
    }
  }
  fail(line, "no method '" + name + "' on " + pythonRepr(object));
}

Value Evaluator::filter(const Expr &e) {
  Value v = eval(*e.args[0]);
  std::vector<Value> args;
  for (size_t i = 1; i < e.args.size(); i++)
    args.push_back(eval(*e.args[i]));
  const std::string &name = e.name;
  auto keyword = [&](const char *key) -> Value {
    for (const auto &[k, value] : e.keywords)
      if (k == key)
        return eval(*value);
    return undefined();
  };
  if (name == "trim")
    return stripChars(show(v), args.empty() ? "" : show(args[0]), true, true);
  if (name == "length" || name == "count") {
    if (v.is_string())
      return int64_t(v.get_ref<const std::string &>().size());
    if (v.is_array() || v.is_object())
      return int64_t(v.size());
    return int64_t(0);
  }
  if (name == "tojson") {
    Value indent = keyword("indent");
    if (!args.empty())
      indent = args[0];
    std::string out;
    dumpJson(v, indent.is_number_integer() ? int(indent.get<int64_t>()) : 0, 0,
             out);
    return out;
  }
  if (name == "string")
    return show(v);
  if (name == "upper" || name == "lower" || name == "capitalize" ||
      name == "title")
    return method(Value(show(v)), name, {}, e.line);
  if (name == "replace")
    return method(Value(show(v)), "replace", args, e.line);
  if (name == "default" || name == "d") {
    bool boolean = args.size() > 1 && truthy(args[1]);
    bool missing = boolean ? !truthy(v) : isUndefined(v);
    return missing ? (args.empty() ? Value("") : args[0]) : v;
  }
  if (name == "first" || name == "last") {
    if (v.is_array())
      return v.empty() ? undefined() : name == "first" ? v.front() : v.back();
    if (v.is_string())
      return item(v, Value(int64_t(name == "first" ? 0 : -1)));
    return undefined();
  }
  if (name == "join") {
    std::string out, separator = args.empty() ? "" : show(args[0]);
    if (v.is_array())
      for (size_t i = 0; i < v.size(); i++)
        out += (i ? separator : "") + show(v[i]);
    return out;
  }
  if (name == "list") {
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
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::string s = v.get<std::string>();
      std::reverse(s.begin(), s.end());
      return s;
    }
    Value list = v.is_array() ? v : Value::array();
    std::reverse(list.begin(), list.end());
    return list;
  }
  if (name == "items")
    return method(v.is_object() ? v : Value::object(), "items", {}, e.line);
  if (name == "int") {
    if (v.is_number())
      return int64_t(v.get<double>());
    try {
      return int64_t(std::stoll(show(v)));
    } catch (const std::exception &) {
      return int64_t(0);
    }
  }
  if (name == "float") {
    if (v.is_number())
      return v.get<double>();
    try {
      return std::stod(show(v));
    } catch (const std::exception &) {
      return 0.0;
    }
  }
  if (name == "abs")
    return v.is_number_integer() ? Value(std::llabs(v.get<int64_t>()))
                                 : Value(std::fabs(v.get<double>()));
  if (name == "safe" || name == "escape" || name == "e")
    return v;
  if (name == "selectattr" || name == "rejectattr" || name == "map") {
    Value out = Value::array();
    if (!v.is_array())
      return out;
    for (const Value &element : v) {
      if (name == "map") {
        Value attribute = keyword("attribute");
        if (isUndefined(attribute) && !args.empty())
          attribute = args[0];
        out.push_back(item(element, attribute));
        continue;
      }
      if (args.empty())
        fail(e.line, name + " needs an attribute name");
      Value attribute = item(element, args[0]);
      bool pass;
      if (args.size() == 1) {
        pass = truthy(attribute);
      } else {
        std::string testName = show(args[1]);
        Value operand = args.size() > 2 ? args[2] : undefined();
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
          pass = truthy(binary("in", attribute, operand, e.line));
        else
          fail(e.line, "the test '" + testName + "' is not supported in " +
                           name);
      }
      if (pass == (name == "selectattr"))
        out.push_back(element);
    }
    return out;
  }
  fail(e.line, "the filter '" + name + "' is not supported");
}

bool Evaluator::test(const Expr &e) {
  Value v = eval(*e.args[0]);
  const std::string &name = e.name;
  bool result;
  if (name == "defined")
    result = !isUndefined(v);
  else if (name == "undefined")
    result = isUndefined(v);
  else if (name == "none")
    result = v.is_null();
  else if (name == "string")
    result = v.is_string();
  else if (name == "number")
    result = v.is_number() && !v.is_boolean();
  else if (name == "integer")
    result = v.is_number_integer();
  else if (name == "float")
    result = v.is_number_float();
  else if (name == "boolean")
    result = v.is_boolean();
  else if (name == "mapping")
    result = v.is_object();
  else if (name == "sequence" || name == "iterable")
    result = v.is_array() || v.is_string() || (name == "iterable" && v.is_object());
  else if (name == "true")
    result = v.is_boolean() && v.get<bool>();
  else if (name == "false")
    result = v.is_boolean() && !v.get<bool>();
  else if (name == "even" || name == "odd")
    result = v.is_number_integer() &&
             (v.get<int64_t>() % 2 == 0) == (name == "even");
  else if (name == "equalto" || name == "eq" || name == "sameas")
    result = e.args.size() > 1 && v == eval(*e.args[1]);
  else if (name == "divisibleby")
    result = e.args.size() > 1 && v.is_number_integer() &&
             eval(*e.args[1]).get<int64_t>() != 0 &&
             v.get<int64_t>() % eval(*e.args[1]).get<int64_t>() == 0;
  else
    fail(e.line, "the test '" + name + "' is not supported");
  return result != e.negated;
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

} // namespace

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

ChatTemplate::ChatTemplate(std::string_view source) {
  root_ = asTemplateError([&] { return TemplateParser(cut(source)).parseAll(); });
}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json &variables) const {
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
