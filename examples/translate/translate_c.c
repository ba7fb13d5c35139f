/* translate_c.c: the translator's compiled model driven through the C API
 * alone. Encodes Chinese numerals (source token ids; vocab.json maps 零..九
 * to 2..11, 十 百 千 万 to 12..15), decodes them greedily as one batch from
 * <bos> (1) until <eos> (2), and checks PyTorch's tokens for them
 * (model/golden.tsv). Also: a decoder prompt without a source is refused.
 *
 *   translate-c-api MODEL_DIR/translator.safetensors
 */
#include "attn/runtime/attn_runtime.h"

#include "translator.h"

#include <stdio.h>
#include <string.h>

enum { BOS = 1, EOS = 2 };

/* Whether request `id` ended at <eos> with exactly `expected[0..count)`. */
static int decoded_as(const attn_generator *generator, int32_t id,
                      const int32_t *expected, int32_t count,
                      const char *numeral) {
  int32_t tokens[32], got = 0;
  attn_finish_reason reason;
  if (attn_generator_result(generator, id, tokens, 32, &got, &reason) !=
          ATTN_OK ||
      reason != ATTN_FINISHED_STOP_TOKEN || got != count ||
      memcmp(tokens, expected, sizeof(int32_t) * (size_t)count) != 0) {
    fprintf(stderr, "%s: not PyTorch's tokens\n", numeral);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  /* 九百九十九 → nine hundred ninety nine; 七千四百九十万一千零六十七. */
  const int32_t first[] = {11, 13, 11, 12, 11};
  const int32_t second[] = {9, 14, 6, 13, 11, 12, 15, 3, 14, 2, 8, 12, 9};
  const int32_t expect_first[] = {12, 31, 30, 12, EOS};
  const int32_t expect_second[] = {28, 7, 33, 12, 31, 4, 32, 27, 10, EOS};
  const int32_t bos = BOS, eos = EOS;
  attn_model *model = NULL;
  attn_generator *generator = NULL;
  int32_t a, b, failures = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: translate-c-api translator.safetensors\n");
    return 2;
  }
  if (attn_model_load(translator_plan_json, translator_kernel_table,
                      TRANSLATOR_KERNEL_TABLE_SIZE, argv[1], ATTN_NAMING_BART,
                      &model) != ATTN_OK ||
      attn_generator_create(model, 2, &generator) != ATTN_OK) {
    fprintf(stderr, "translate-c-api: %s\n", attn_last_error());
    return 1;
  }
  if (attn_generator_submit(generator, &bos, 1, 8, &eos, 1, NULL, NULL, NULL,
                            &a) != ATTN_INVALID_ARGUMENT) {
    fprintf(stderr, "a request without a source was accepted\n");
    failures++;
  }
  if (attn_generator_submit_source(generator, first, 5, &bos, 1, 23, &eos, 1,
                                   NULL, NULL, NULL, &a) != ATTN_OK ||
      attn_generator_submit_source(generator, second, 13, &bos, 1, 23, &eos, 1,
                                   NULL, NULL, NULL, &b) != ATTN_OK ||
      attn_generator_run(generator) != ATTN_OK) {
    fprintf(stderr, "translate-c-api: %s\n", attn_last_error());
    return 1;
  }
  failures += !decoded_as(generator, a, expect_first, 5, "九百九十九");
  failures += !decoded_as(generator, b, expect_second, 10,
                          "七千四百九十万一千零六十七");
  attn_generator_destroy(generator);
  attn_model_destroy(model);
  printf("translate from C: %s\n", failures ? "FAILED" : "2/2 as PyTorch");
  return failures ? 1 : 0;
}
