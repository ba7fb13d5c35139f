//===- ChatTemplateSyntax.cpp - chat templates parsed ---------------------===//
//
// The source is cut into text and tags, with Jinja's whitespace control and
// transformers' trim_blocks / lstrip_blocks; tags are parsed, by recursive
// descent with Jinja's precedences, into statements and expressions.
// Nesting is bounded, so hostile sources are errors, not stack overflows.
//
//===----------------------------------------------------------------------===//

#include "ChatTemplateSyntax.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace attn::runtime::tokenizer::jinja {

[[noreturn]] void fail(int line, const std::string &message) {
  throw TemplateError("line " + std::to_string(line) + ": " + message);
}

namespace {

// --- the source, cut into text and tags ------------------------------------

struct Segment {
  enum Kind { Text, Output, Statement } kind;
  std::string text; ///< Text: as is; tags: their inside, trimmed
  int line;
};

std::vector<Segment> cut(std::string_view source) {
  std::vector<Segment> segments;
  size_t at = 0;
  int line = 1;
  bool stripNext = false;   // the last tag ended with "-"
  bool trimNewline = false; // the last tag was a block or comment (trim_blocks)
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
    std::string text(source.substr(at, open == std::string_view::npos
                                           ? std::string_view::npos
                                           : open - at));
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
      segments.push_back(
          {kind == '{' ? Segment::Output : Segment::Statement, inner, line});
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
      while (at < text.size() && (std::isdigit(uint8_t(text[at])) ||
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
        auto [end, ec] = std::from_chars(
            digits.data(), digits.data() + digits.size(), integer);
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
        fail(line,
             "expressions nested deeper than " + std::to_string(kMaxDepth));
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
      } else if (keyword == "endif" || keyword == "endfor" ||
                 keyword == "elif" || keyword == "else")
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

} // namespace

std::unique_ptr<ChatTemplate::Node> parse(std::string_view source) {
  return TemplateParser(cut(source)).parseAll();
}

} // namespace attn::runtime::tokenizer::jinja
