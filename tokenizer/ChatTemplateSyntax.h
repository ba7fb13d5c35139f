//===- ChatTemplateSyntax.h - chat templates parsed --------------*- C++
//-*-===//
//
// The tree ChatTemplateSyntax.cpp parses a template into and
// ChatTemplate.cpp evaluates: statements (ChatTemplate::Node) holding
// expressions (jinja::Expr). Internal to libattn_tokenizer.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TOKENIZER_CHATTEMPLATESYNTAX_H
#define ATTN_RUNTIME_TOKENIZER_CHATTEMPLATESYNTAX_H

#include "ChatTemplate.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::runtime::tokenizer {

namespace jinja {

using Value = nlohmann::ordered_json;

/// Throws TemplateError("line N: message").
[[noreturn]] void fail(int line, const std::string &message);

inline bool isBlank(char c) { return c == ' ' || c == '\t'; }
inline bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,
    Name,
    List,
    Dict,
    Attr,
    Index,
    Slice,
    Call,
    Filter,
    Test,
    Not,
    Negate,
    Binary,
    And,
    Or,
    Ternary
  } kind;
  Value literal;
  std::string name;          ///< Name, Attr, Filter, Test, Binary's operator
  std::vector<ExprPtr> args; ///< operands; Call/Filter/Test: positional
  std::vector<std::pair<std::string, ExprPtr>> keywords; ///< Call, Filter
  bool negated = false;                                  ///< Test: "is not"
  int line = 0;
};

/// The statements of `source`; throws TemplateError naming the line.
std::unique_ptr<ChatTemplate::Node> parse(std::string_view source);

} // namespace jinja

struct ChatTemplate::Node {
  enum Kind {
    Sequence,
    Text,
    Output,
    If,
    For,
    Set,
    Break,
    Continue
  } kind = Sequence;
  std::string text;                       ///< Text
  std::vector<jinja::ExprPtr> conditions; ///< If: one per branch (null: else)
  std::vector<std::unique_ptr<Node>> children; ///< Sequence; If: branches
  std::vector<std::string> targets;      ///< For: loop names; Set: name[.attr]
  jinja::ExprPtr value;                  ///< Output, For (iterable), Set
  jinja::ExprPtr filter;                 ///< For: "if" clause
  std::unique_ptr<Node> body, otherwise; ///< For
  int line = 0;
};

} // namespace attn::runtime::tokenizer

#endif // ATTN_RUNTIME_TOKENIZER_CHATTEMPLATESYNTAX_H
