//===- ChatTemplate.h - the Jinja subset of chat templates -------*- C++ -*-===//
//
// A model's tokenizer_config.json carries its chat template: Jinja source
// that turns a list of messages into the prompt text the model was trained
// on. transformers renders it with Jinja2 (trim_blocks and lstrip_blocks on);
// Debian packages no C++ Jinja, so this is an interpreter of the part of
// Jinja those templates use:
//
//   text, {{ expr }}, {% if/elif/else %}, {% for x in xs [if c] %} with
//   loop.index0/index/first/last/length/revindex, {% set %} (names and
//   namespace attributes), {# comments #}, whitespace control ({%- -%})
//   expressions: literals, lists, dicts, names, .attr, [index], [a:b:c],
//   calls, filters (|trim, |length, |tojson, ...), tests (is defined,
//   is none, is string, ...), not/and/or, comparisons, in, + - * / // % ~,
//   a if c else b; globals namespace(), range(), raise_exception(),
//   strftime_now(); string, list and dict methods (strip, split,
//   startswith, items, get, ...)
//
// Anything else (macros, call blocks, unknown filters or tests) is an error
// naming the template line, never silently skipped. Values are JSON
// (insertion-ordered, as Python dicts are); a missing attribute is
// undefined, which renders as "" and is false.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TOKENIZER_CHATTEMPLATE_H
#define ATTN_RUNTIME_TOKENIZER_CHATTEMPLATE_H

#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attn::runtime::tokenizer {

/// A template error; what() reads "line N: ...".
struct TemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ChatTemplate {
public:
  /// Parses `source`; throws TemplateError.
  explicit ChatTemplate(std::string_view source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate &&) noexcept;

  /// Renders with `variables` as the top-level names (messages,
  /// add_generation_prompt, bos_token, ...); throws TemplateError, whose
  /// message is the template's own for raise_exception().
  std::string render(const nlohmann::ordered_json &variables) const;

  struct Node;

private:
  std::unique_ptr<Node> root_;
};

} // namespace attn::runtime::tokenizer

#endif // ATTN_RUNTIME_TOKENIZER_CHATTEMPLATE_H
