/* tokenizer_c_api_test.c: the tokenizer's C API from C: load a real
 * tokenizer.json (argv[1]: Qwen3's model folder), encode with a too-small
 * and a large enough array, decode, stream, and the error paths. */
#include "attn/runtime/attn_tokenizer.h"

#include "c_check.h"

#include <string.h>

int main(int argc, char **argv) {
  attn_tokenizer *tokenizer = NULL;
  int32_t ids[16], eos[4];
  size_t count = 0, length = 0, i;
  char text[64], streamed[64] = "", prompt[1024];
  const char *piece;
  attn_text_stream *stream = NULL;
  const char *hello = "Hello world \xe4\xb8\x89\xe5\x8d\x83"; /* 三千 */

  CHECK(argc == 2);
  CHECK(attn_tokenizer_load("/nonexistent", &tokenizer) == ATTN_IO_ERROR);
  CHECK(strstr(attn_last_error(), "/nonexistent") != NULL && !tokenizer);
  if (attn_tokenizer_load(argv[1], &tokenizer) != ATTN_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], attn_last_error());
    return 1;
  }
  CHECK(attn_tokenizer_vocabulary_size(tokenizer) == 151669);
  CHECK(attn_tokenizer_bos(tokenizer) == -1);
  CHECK(attn_tokenizer_eos(tokenizer, eos, 4) == 1 && eos[0] == 151645);

  CHECK(attn_tokenizer_encode(tokenizer, hello, strlen(hello), 1, ids, 2,
                              &count) == ATTN_CAPACITY_EXCEEDED);
  CHECK(count == 4);
  CHECK(attn_tokenizer_encode(tokenizer, hello, strlen(hello), 1, ids, 16,
                              &count) == ATTN_OK);
  CHECK(count == 4 && ids[0] == 9707 && ids[1] == 1879);
  CHECK(attn_tokenizer_decode(tokenizer, ids, count, 0, text, 4, &length) ==
        ATTN_CAPACITY_EXCEEDED);
  CHECK(attn_tokenizer_decode(tokenizer, ids, count, 0, text, sizeof text,
                              &length) == ATTN_OK);
  CHECK(length == strlen(hello) && strcmp(text, hello) == 0);
  CHECK(attn_tokenizer_encode(tokenizer, "\xff", 1, 1, ids, 16, &count) ==
        ATTN_INVALID_ARGUMENT);
  ids[0] = 999999;
  CHECK(attn_tokenizer_decode(tokenizer, ids, 1, 0, text, sizeof text,
                              &length) == ATTN_INVALID_ARGUMENT);
  CHECK(attn_tokenizer_encode(NULL, "x", 1, 1, ids, 16, &count) ==
        ATTN_INVALID_ARGUMENT);

  CHECK(attn_tokenizer_encode(tokenizer, hello, strlen(hello), 1, ids, 16,
                              &count) == ATTN_OK);
  CHECK(attn_text_stream_create(tokenizer, 1, &stream) == ATTN_OK);
  for (i = 0; i < count; i++) {
    CHECK(attn_text_stream_push(stream, ids[i], &piece) == ATTN_OK);
    strcat(streamed, piece);
  }
  strcat(streamed, attn_text_stream_finish(stream));
  CHECK(strcmp(streamed, hello) == 0);
  CHECK(attn_text_stream_push(stream, -1, &piece) == ATTN_INVALID_ARGUMENT);

  /* Qwen3's chat template. */
  CHECK(attn_tokenizer_apply_chat_template(
            tokenizer, "[{\"role\": \"user\", \"content\": \"Hi\"}]", 1, NULL,
            text, sizeof text, &length) == ATTN_OK);
  CHECK(strcmp(text,
               "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") == 0);
  /* A tool definition prints its keys in the order given, as transformers'
     tojson (json.dumps without sort_keys) does: the prompt the model was
     trained on. */
  CHECK(attn_tokenizer_apply_chat_template(
            tokenizer, "[{\"role\": \"user\", \"content\": \"Hi\"}]", 1,
            "{\"tools\": [{\"type\": \"function\", \"function\": "
            "{\"name\": \"f\", \"description\": \"d\"}}]}",
            prompt, sizeof prompt, &length) == ATTN_OK);
  CHECK(strstr(prompt, "{\"type\": \"function\", \"function\": {\"name\": "
                       "\"f\", \"description\": \"d\"}}") != NULL);
  CHECK(attn_tokenizer_apply_chat_template(tokenizer, "{", 1, NULL, text,
                                           sizeof text,
                                           &length) == ATTN_INVALID_ARGUMENT);
  attn_text_stream_destroy(stream);
  attn_text_stream_destroy(NULL);
  attn_tokenizer_destroy(tokenizer);
  attn_tokenizer_destroy(NULL);
  return failures ? 1 : 0;
}
