//===- OpenAiRequest.h - an OpenAI API request, read and checked -*- C++
//-*-===//
//
// The request side of attn-serve, free of HTTP (so a fuzzer takes it):
// /v1/completions' and /v1/chat/completions' JSON bodies into a
// CompletionJob, or the message and field of what is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_OPENAIREQUEST_H
#define ATTN_APPS_OPENAIREQUEST_H

#include "ServingEngine.h"

#include <nlohmann/json.hpp>

#include <string>

namespace attn::apps {

/// Reads a completion (`chat` false: "prompt") or chat completion ("messages"
/// through the model's chat template) request into `job` and `stream`;
/// returns "" or, for a bad request, the message, with `param` naming the
/// field at fault. Options that change the output and that are not
/// implemented (n, best_of, suffix, penalties, logit_bias) are refused;
/// unknown fields are ignored. "max_tokens": 0 is accepted with "echo" (the
/// prompt's log-probabilities alone, as lm-evaluation-harness asks).
std::string readCompletion(const nlohmann::ordered_json &body,
                           const runtime::Tokenizer &tokenizer, bool chat,
                           CompletionJob &job, bool &stream,
                           std::string &param);

} // namespace attn::apps

#endif // ATTN_APPS_OPENAIREQUEST_H
