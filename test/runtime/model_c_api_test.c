/* model_c_api_test.c: a whole generated model (llama_tiny, random weights
 * from the random-llama-weights fixture) driven from C: load, continuous
 * batching with greedy and seeded sampling, stop tokens, cancellation, and
 * the error paths. Token-level agreement with recomputation is ModelTest's. */
#include "attn/runtime/attn_runtime.h"

#include "c_check.h"

#include "llama_tiny.h"

#include <stdio.h>
#include <string.h>

/* Calls back into its own generator: a submit (refused: it would change the
 * requests being stepped), then a destroy (done when the call that ran the
 * callback returns). Both used to touch freed memory. */
struct reentry {
  attn_generator *generator;
  attn_status submitted;
  int calls;
};
static int reenter(void *user, int32_t request, int32_t token) {
  struct reentry *r = (struct reentry *)user;
  const int32_t again[2] = {1, 2};
  int32_t id = -1;
  (void)request;
  (void)token;
  if (r->calls++ == 0)
    r->submitted = attn_generator_submit(r->generator, again, 2, 4, NULL, 0,
                                         NULL, NULL, NULL, &id);
  else
    attn_generator_destroy(r->generator);
  return 1;
}

static int cancel_after_three(void *user, int32_t request, int32_t token) {
  int *seen = (int *)user;
  (void)request;
  (void)token;
  return ++*seen < 3;
}

int main(int argc, char **argv) {
  attn_model *model = NULL;
  attn_generator *generator = NULL;
  const int32_t prompt[5] = {1, 2, 3, 4, 5};
  int32_t greedy, again, sampled, cancelled, stopped, tokens[64], count = 0;
  int32_t first[64], first_count = 0, stop;
  attn_finish_reason reason;
  attn_sampling sampling = {0.9f, 5, 0.95f, 7};
  int seen = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: model-c-api-test WEIGHTS.safetensors\n");
    return 2;
  }

  CHECK(attn_model_load(llama_tiny_plan_json, llama_tiny_kernel_table,
                        LLAMA_TINY_KERNEL_TABLE_SIZE,
                        "/nonexistent.safetensors", ATTN_NAMING_LLAMA,
                        &model) != ATTN_OK &&
        !model && strstr(attn_last_error(), "nonexistent"));
  CHECK(attn_model_load(llama_tiny_plan_json, llama_tiny_kernel_table,
                        LLAMA_TINY_KERNEL_TABLE_SIZE, argv[1], ATTN_NAMING_BART,
                        &model) == ATTN_INVALID_ARGUMENT &&
        strstr(attn_last_error(), "model.decoder.embed_tokens.weight"));
  CHECK(attn_model_load(llama_tiny_plan_json, llama_tiny_kernel_table,
                        LLAMA_TINY_KERNEL_TABLE_SIZE, argv[1],
                        ATTN_NAMING_LLAMA, &model) == ATTN_OK &&
        model);
  if (!model)
    return 1;
  CHECK(attn_model_vocabulary(model) == 17);
  CHECK(attn_generator_create(model, 4, &generator) == ATTN_OK && generator);

  /* Two greedy requests on the same prompt, the second joining later. */
  CHECK(attn_generator_submit(generator, prompt, 5, 8, NULL, 0, NULL, NULL,
                              NULL, &greedy) == ATTN_OK);
  CHECK(attn_generator_step(generator) == ATTN_OK);
  CHECK(attn_generator_step(generator) == ATTN_OK);
  CHECK(attn_generator_submit(generator, prompt, 5, 8, NULL, 0, NULL, NULL,
                              NULL, &again) == ATTN_OK);
  CHECK(attn_generator_submit(generator, prompt, 5, 10, NULL, 0, &sampling,
                              NULL, NULL, &sampled) == ATTN_OK);
  CHECK(attn_generator_submit(generator, prompt, 5, 10, NULL, 0, NULL,
                              cancel_after_three, &seen,
                              &cancelled) == ATTN_OK);
  CHECK(attn_generator_running(generator) == 4);
  CHECK(attn_generator_run(generator) == ATTN_OK);
  CHECK(attn_generator_running(generator) == 0);

  CHECK(attn_generator_result(generator, greedy, first, 64, &first_count,
                              &reason) == ATTN_OK);
  CHECK(first_count == 8 && reason == ATTN_FINISHED_MAX_TOKENS);
  CHECK(attn_generator_result(generator, again, tokens, 64, &count, &reason) ==
        ATTN_OK);
  CHECK(count == 8 && memcmp(tokens, first, sizeof(int32_t) * 8) == 0);
  CHECK(attn_generator_result(generator, sampled, tokens, 64, &count,
                              &reason) == ATTN_OK);
  CHECK(count == 10);
  for (int i = 0; i < count; i++)
    CHECK(tokens[i] >= 0 && tokens[i] < 17);
  CHECK(attn_generator_result(generator, cancelled, tokens, 64, &count,
                              &reason) == ATTN_OK);
  CHECK(count == 3 && reason == ATTN_FINISHED_CANCELLED && seen == 3);

  /* A stop token: greedy again, stopping at the first request's 4th token. */
  stop = first[3];
  CHECK(attn_generator_submit(generator, prompt, 5, 8, &stop, 1, NULL, NULL,
                              NULL, &stopped) == ATTN_OK);
  CHECK(attn_generator_run(generator) == ATTN_OK);
  CHECK(attn_generator_result(generator, stopped, tokens, 64, &count,
                              &reason) == ATTN_OK);
  CHECK(reason == ATTN_FINISHED_STOP_TOKEN && count <= 4 &&
        tokens[count - 1] == stop);

  /* Errors: a message, nothing written. */
  CHECK(attn_generator_result(generator, stopped, NULL, 0, &count, NULL) ==
            ATTN_INVALID_ARGUMENT &&
        count >= 1);
  CHECK(attn_generator_result(generator, 99, tokens, 64, &count, NULL) ==
        ATTN_NOT_FOUND);
  {
    const int32_t bad[1] = {17};
    int32_t id = -7;
    CHECK(attn_generator_submit(generator, bad, 1, 4, NULL, 0, NULL, NULL, NULL,
                                &id) == ATTN_INVALID_ARGUMENT &&
          id == -7 && strstr(attn_last_error(), "outside the vocabulary"));
    CHECK(attn_generator_submit(generator, NULL, 0, 4, NULL, 0, NULL, NULL,
                                NULL, &id) == ATTN_INVALID_ARGUMENT);
    /* A source: null with a length, negative, or any at all for this
       decoder-only model. */
    CHECK(attn_generator_submit_source(generator, NULL, 3, prompt, 5, 4, NULL,
                                       0, NULL, NULL, NULL,
                                       &id) == ATTN_INVALID_ARGUMENT);
    CHECK(attn_generator_submit_source(generator, prompt, -1, prompt, 5, 4,
                                       NULL, 0, NULL, NULL, NULL,
                                       &id) == ATTN_INVALID_ARGUMENT);
    CHECK(attn_generator_submit_source(generator, prompt, 2, prompt, 5, 4, NULL,
                                       0, NULL, NULL, NULL,
                                       &id) == ATTN_INVALID_ARGUMENT &&
          id == -7 && strstr(attn_last_error(), "decoder-only"));
  }
  attn_generator_destroy(generator);

  /* Serving options: chunked prefill and the prefix cache give the greedy
     tokens the plain generator gave, for a prompt repeated after the first
     finished (its pages reused). */
  {
    const attn_generator_options options = {2, 2, 1};
    const attn_generator_options negative = {2, -1, 1};
    attn_generator *serving = NULL;
    int32_t ids[2] = {-1, -1};
    CHECK(attn_generator_create_with_options(model, &negative, &serving) ==
              ATTN_INVALID_ARGUMENT &&
          serving == NULL && strstr(attn_last_error(), "prefill chunk"));
    CHECK(attn_generator_create_with_options(model, NULL, &serving) ==
          ATTN_INVALID_ARGUMENT);
    CHECK(attn_generator_create_with_options(model, &options, &serving) ==
              ATTN_OK &&
          serving);
    for (int i = 0; i < 2 && serving; i++) {
      CHECK(attn_generator_submit(serving, prompt, 5, 8, NULL, 0, NULL, NULL,
                                  NULL, &ids[i]) == ATTN_OK);
      CHECK(attn_generator_run(serving) == ATTN_OK);
      CHECK(attn_generator_result(serving, ids[i], tokens, 64, &count,
                                  &reason) == ATTN_OK);
      CHECK(count == 8 && memcmp(tokens, first, sizeof(int32_t) * 8) == 0);
    }
    attn_generator_destroy(serving);
  }
  {
    struct reentry r = {NULL, ATTN_OK, 0};
    int32_t id = -1;
    /* 2^31 - 1 sequences: more cache pages than a cache can index. */
    CHECK(attn_generator_create(model, 2147483647, &r.generator) ==
              ATTN_CAPACITY_EXCEEDED &&
          r.generator == NULL);
    CHECK(attn_generator_create(model, 2, &r.generator) == ATTN_OK);
    CHECK(attn_generator_submit(r.generator, prompt, 5, 8, NULL, 0, NULL,
                                reenter, &r, &id) == ATTN_OK);
    CHECK(r.calls == 1 && r.submitted == ATTN_INVALID_ARGUMENT);
    /* The next token's callback destroys the generator; step returns. */
    CHECK(attn_generator_step(r.generator) == ATTN_OK && r.calls == 2);
  }
  attn_model_destroy(model);
  attn_generator_destroy(NULL);
  attn_model_destroy(NULL);
  printf("model C API: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
