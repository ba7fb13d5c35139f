//===- TokenizerCApi.cpp - the C API of libattn_tokenizer -----------------===//

#include "attn/runtime/attn_tokenizer.h"

#include "../CApiSupport.h"
#include "attn/runtime/Tokenizer.h"

#include <cstring>

using namespace attn::runtime;
using namespace attn::runtime::capi;

struct attn_tokenizer {
  Tokenizer tokenizer;
};
struct attn_text_stream {
  TextStream stream;
  std::string text; // what the last call returned
};

/// Copies `text` and its NUL into out[0..capacity), or says it does not fit.
static attn_status copyOut(const char *function, const std::string &text,
                           char *out, size_t capacity, size_t *length) {
  *length = text.size();
  if (text.size() + 1 > capacity)
    return report(Status(StatusCode::CapacityExceeded,
                         std::string(function) + ": the text has " +
                             std::to_string(text.size()) +
                             " bytes and a NUL; the buffer holds " +
                             std::to_string(capacity)));
  std::memcpy(out, text.c_str(), text.size() + 1);
  return ATTN_OK;
}

extern "C" {

attn_status attn_tokenizer_load(const char *path, attn_tokenizer **tokenizer) {
  return guarded(__func__, [&] {
    if (!path || !tokenizer)
      return invalid("attn_tokenizer_load: path and tokenizer are required");
    Tokenizer loaded;
    if (Status status = Tokenizer::load(path, loaded); !status)
      return report(status);
    *tokenizer = new attn_tokenizer{std::move(loaded)};
    return ATTN_OK;
  });
}

void attn_tokenizer_destroy(attn_tokenizer *tokenizer) { delete tokenizer; }

attn_status attn_tokenizer_encode(const attn_tokenizer *tokenizer,
                                  const char *text, size_t length,
                                  int add_special_tokens, int32_t *ids,
                                  size_t capacity, size_t *count) {
  return guarded(__func__, [&] {
    if (!tokenizer || (!text && length) || (!ids && capacity) || !count)
      return invalid("attn_tokenizer_encode: a required pointer is null");
    std::vector<int32_t> encoded;
    if (Status status = tokenizer->tokenizer.encode(
            std::string_view(text ? text : "", length), encoded,
            add_special_tokens != 0);
        !status)
      return report(status);
    *count = encoded.size();
    if (encoded.size() > capacity)
      return report(Status(StatusCode::CapacityExceeded,
                           "attn_tokenizer_encode: the text has " +
                               std::to_string(encoded.size()) +
                               " tokens; the array holds " +
                               std::to_string(capacity)));
    std::copy(encoded.begin(), encoded.end(), ids);
    return ATTN_OK;
  });
}

attn_status attn_tokenizer_decode(const attn_tokenizer *tokenizer,
                                  const int32_t *ids, size_t count,
                                  int skip_special_tokens, char *text,
                                  size_t capacity, size_t *length) {
  return guarded(__func__, [&] {
    if (!tokenizer || (!ids && count) || (!text && capacity) || !length)
      return invalid("attn_tokenizer_decode: a required pointer is null");
    std::string decoded;
    if (Status status = tokenizer->tokenizer.decode(
            std::vector<int32_t>(ids, ids + count), decoded,
            skip_special_tokens != 0);
        !status)
      return report(status);
    return copyOut("attn_tokenizer_decode", decoded, text, capacity, length);
  });
}

attn_status attn_tokenizer_apply_chat_template(const attn_tokenizer *tokenizer,
                                               const char *messages_json,
                                               int add_generation_prompt,
                                               const char *extra_json,
                                               char *text, size_t capacity,
                                               size_t *length) {
  return guarded(__func__, [&] {
    if (!tokenizer || !messages_json || (!text && capacity) || !length)
      return invalid("attn_tokenizer_apply_chat_template: a required pointer "
                     "is null");
    std::string prompt;
    if (Status status = tokenizer->tokenizer.applyChatTemplate(
            messages_json, add_generation_prompt != 0, prompt,
            extra_json ? extra_json : "");
        !status)
      return report(status);
    return copyOut("attn_tokenizer_apply_chat_template", prompt, text,
                   capacity, length);
  });
}

int32_t attn_tokenizer_vocabulary_size(const attn_tokenizer *tokenizer) {
  return tokenizer ? tokenizer->tokenizer.vocabularySize() : 0;
}

int32_t attn_tokenizer_bos(const attn_tokenizer *tokenizer) {
  return tokenizer ? tokenizer->tokenizer.bosId() : -1;
}

size_t attn_tokenizer_eos(const attn_tokenizer *tokenizer, int32_t *ids,
                          size_t capacity) {
  if (!tokenizer)
    return 0;
  const std::vector<int32_t> &eos = tokenizer->tokenizer.eosIds();
  for (size_t i = 0; ids && i < eos.size() && i < capacity; i++)
    ids[i] = eos[i];
  return eos.size();
}

attn_status attn_text_stream_create(const attn_tokenizer *tokenizer,
                                    int skip_special_tokens,
                                    attn_text_stream **stream) {
  return guarded(__func__, [&] {
    if (!tokenizer || !stream)
      return invalid("attn_text_stream_create: tokenizer and stream are "
                     "required");
    *stream = new attn_text_stream{
        TextStream(tokenizer->tokenizer, skip_special_tokens != 0), ""};
    return ATTN_OK;
  });
}

attn_status attn_text_stream_push(attn_text_stream *stream, int32_t id,
                                  const char **text) {
  return guarded(__func__, [&] {
    if (!stream || !text)
      return invalid("attn_text_stream_push: stream and text are required");
    Status status = stream->stream.push(id, stream->text);
    *text = stream->text.c_str();
    return report(status);
  });
}

const char *attn_text_stream_finish(attn_text_stream *stream) {
  if (!stream)
    return "";
  try {
    stream->text = stream->stream.finish();
  } catch (...) { // out of memory: nothing more to show
    stream->text.clear();
  }
  return stream->text.c_str();
}

void attn_text_stream_destroy(attn_text_stream *stream) { delete stream; }

} // extern "C"
