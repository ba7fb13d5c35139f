/* model_library_c_test.c: a shared model library from C
 * (attn_model_load_library): LIB (lib<name>.so from attnc --shared) with
 * WEIGHTS loads and generates; a path that is no library and missing
 * weights are statuses with messages; with packed weights
 * (attn_model_load_library_packed) the first load writes them and the
 * second maps them, both generating the same tokens. Run by attn-run-test. */
#include "attn/runtime/attn_runtime.h"

#include "c_check.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  attn_model *model = NULL;
  attn_generator *generator = NULL;
  int32_t prompt[3] = {1, 22557, 1526}, id = -1, count = 0, tokens[8];
  attn_finish_reason reason;
  if (argc != 4) {
    fprintf(stderr, "usage: model-library-c-test LIB WEIGHTS VOCABULARY\n");
    return 2;
  }
  CHECK(attn_model_load_library("/nonexistent/libmodel.so", argv[2], 0,
                                &model) == ATTN_IO_ERROR);
  CHECK(strstr(attn_last_error(), "cannot be loaded") != NULL && !model);
  CHECK(attn_model_load_library(argv[1], "/nonexistent/weights", 0, &model) !=
        ATTN_OK);
  CHECK(attn_model_load_library(argv[1], argv[2], 1, &model) ==
        ATTN_INVALID_ARGUMENT);
  CHECK(strstr(attn_last_error(), "has no GPU kernels") != NULL);
  CHECK(attn_model_load_library(NULL, argv[2], 0, &model) ==
        ATTN_INVALID_ARGUMENT);
  if (attn_model_load_library(argv[1], argv[2], 0, &model) != ATTN_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], attn_last_error());
    return 1;
  }
  CHECK(attn_model_vocabulary(model) == atoi(argv[3]));
  CHECK(attn_generator_create(model, 1, &generator) == ATTN_OK);
  CHECK(attn_generator_submit(generator, prompt, 3, 4, NULL, 0, NULL, NULL,
                              NULL, &id) == ATTN_OK);
  CHECK(attn_generator_run(generator) == ATTN_OK);
  CHECK(attn_generator_result(generator, id, tokens, 8, &count, &reason) ==
        ATTN_OK);
  CHECK(count == 4 && reason == ATTN_FINISHED_MAX_TOKENS);
  attn_generator_destroy(generator);
  attn_model_destroy(model);

  /* With packed weights: written by the first load, mapped by the second;
   * both generate the same tokens as above. */
  {
    char packed[4096];
    int32_t again[8], n = 0, pass;
    snprintf(packed, sizeof packed, "%s.c-test.attnpack", argv[2]);
    remove(packed);
    for (pass = 0; pass < 2; pass++) {
      FILE *file;
      model = NULL;
      generator = NULL;
      CHECK(attn_model_load_library_packed(argv[1], argv[2], packed, 0,
                                           &model) == ATTN_OK);
      file = fopen(packed, "rb");
      CHECK(file != NULL);
      if (file)
        fclose(file);
      CHECK(attn_generator_create(model, 1, &generator) == ATTN_OK);
      CHECK(attn_generator_submit(generator, prompt, 3, 4, NULL, 0, NULL,
                                  NULL, NULL, &id) == ATTN_OK);
      CHECK(attn_generator_run(generator) == ATTN_OK);
      CHECK(attn_generator_result(generator, id, again, 8, &n, &reason) ==
            ATTN_OK);
      CHECK(n == count && memcmp(again, tokens, sizeof(int32_t) * 4) == 0);
      attn_generator_destroy(generator);
      attn_model_destroy(model);
    }
    remove(packed);
  }
  return failures ? 1 : 0;
}
