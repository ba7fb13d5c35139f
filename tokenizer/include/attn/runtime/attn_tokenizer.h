/*===- attn_tokenizer.h - the C API of libattn_tokenizer ------------------===*
 *
 * Hugging Face tokenizer.json from C (attn/runtime/Tokenizer.h): text to
 * token ids and back, and a stream that turns generated ids into text
 * without splitting a character. Failures return a status and set
 * attn_last_error() (attn_runtime.h). A tokenizer is read-only after loading
 * and may be used from several threads at once; a stream belongs to one.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_TOKENIZER_C_H
#define ATTN_TOKENIZER_C_H

#include "attn/runtime/attn_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_tokenizer attn_tokenizer;

/* path: a model folder (tokenizer.json, and tokenizer_config.json and
 * generation_config.json when present) or a tokenizer.json file. */
attn_status attn_tokenizer_load(const char *path, attn_tokenizer **tokenizer);
void attn_tokenizer_destroy(attn_tokenizer *tokenizer); /* NULL is fine */

/* text[0..length): UTF-8. The ids go to ids[0..capacity); *count receives
 * how many the text has (ATTN_CAPACITY_EXCEEDED, ids untouched, when that is
 * more than capacity: call again with a larger array). add_special_tokens:
 * the BOS/EOS the tokenizer's post-processor adds. */
attn_status attn_tokenizer_encode(const attn_tokenizer *tokenizer,
                                  const char *text, size_t length,
                                  int add_special_tokens, int32_t *ids,
                                  size_t capacity, size_t *count);

/* The text of ids[0..count) as NUL-terminated UTF-8 in text[0..capacity);
 * *length receives its length without the NUL (ATTN_CAPACITY_EXCEEDED when
 * length + 1 > capacity). */
attn_status attn_tokenizer_decode(const attn_tokenizer *tokenizer,
                                  const int32_t *ids, size_t count,
                                  int skip_special_tokens, char *text,
                                  size_t capacity, size_t *length);

/* The prompt text of a conversation: the model's chat template
 * (tokenizer_config.json) over messages_json, a JSON array of {"role",
 * "content", ...}; extra_json (NULL or a JSON object: "tools", ...) adds
 * template variables. NUL-terminated into text[0..capacity), *length as for
 * attn_tokenizer_decode. Encode the result with add_special_tokens = 0. */
attn_status attn_tokenizer_apply_chat_template(const attn_tokenizer *tokenizer,
                                               const char *messages_json,
                                               int add_generation_prompt,
                                               const char *extra_json,
                                               char *text, size_t capacity,
                                               size_t *length);

int32_t attn_tokenizer_vocabulary_size(const attn_tokenizer *tokenizer);
/* -1 when the files name none. */
int32_t attn_tokenizer_bos(const attn_tokenizer *tokenizer);
/* Copies up to capacity end-of-sequence ids; returns how many there are. */
size_t attn_tokenizer_eos(const attn_tokenizer *tokenizer, int32_t *ids,
                          size_t capacity);

/* Generated ids to text, one at a time. */
typedef struct attn_text_stream attn_text_stream;
attn_status attn_text_stream_create(const attn_tokenizer *tokenizer,
                                    int skip_special_tokens,
                                    attn_text_stream **stream);
/* *text receives what id completes (often ""), valid until the next call on
 * the stream. */
attn_status attn_text_stream_push(attn_text_stream *stream, int32_t id,
                                  const char **text);
/* What is still held back; the stream starts over. Valid until the next
 * call on the stream. */
const char *attn_text_stream_finish(attn_text_stream *stream);
void attn_text_stream_destroy(attn_text_stream *stream); /* NULL is fine */

#ifdef __cplusplus
}
#endif

#endif /* ATTN_TOKENIZER_C_H */
