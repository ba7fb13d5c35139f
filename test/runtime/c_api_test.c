/* c_api_test.c: the runtime's C API from C: a paged cache's whole life,
 * copy-on-write after a fork, and every error path returning a status and
 * a message without touching memory it should not. */
#include "attn/runtime/attn_runtime.h"

#include "c_check.h"

#include <stdio.h>
#include <string.h>

enum { HEADS = 2, DIM = 4, ELEMS = HEADS * DIM };

int main(void) {
  attn_kv_cache_config config = {2, HEADS, DIM, ATTN_F16, 4, 6, 16};
  attn_kv_cache *cache = NULL;
  float key[8 * ELEMS], value[8 * ELEMS], back[8 * ELEMS], back_v[8 * ELEMS];
  int32_t a, b, table[8], pages = 0, i;

  CHECK(attn_kv_cache_create(&config, &cache) == ATTN_OK && cache);
  CHECK(attn_kv_cache_pool_bytes(cache) == 2u * 2 * HEADS * DIM * 2 * 4 * 6);
  CHECK(attn_kv_cache_add_sequence(cache, &a) == ATTN_OK);
  CHECK(attn_kv_cache_extend(cache, a, 6) == ATTN_OK);
  for (i = 0; i < 8 * ELEMS; i++) {
    key[i] = (float)i * 0.5f; /* exact in f16 */
    value[i] = -key[i];
  }
  CHECK(attn_kv_cache_write(cache, a, 1, 0, 6, key, value) == ATTN_OK);
  CHECK(attn_kv_cache_read(cache, a, 1, 0, 6, back, back_v) == ATTN_OK);
  CHECK(memcmp(back, key, sizeof(float) * 6 * ELEMS) == 0);
  CHECK(memcmp(back_v, value, sizeof(float) * 6 * ELEMS) == 0);
  CHECK(attn_kv_cache_block_table(cache, a, table, 8, &pages) == ATTN_OK);
  CHECK(pages == 2 && attn_kv_cache_free_pages(cache) == 4);
  CHECK(attn_kv_cache_key_pages(cache, 1) != NULL);

  /* Fork, then diverge in the shared partial page: the parent keeps its data. */
  CHECK(attn_kv_cache_fork(cache, a, &b) == ATTN_OK);
  CHECK(attn_kv_cache_length(cache, b) == 6);
  CHECK(attn_kv_cache_write(cache, b, 1, 5, 1, value, key) == ATTN_OK);
  CHECK(attn_kv_cache_read(cache, a, 1, 5, 1, back, back_v) == ATTN_OK);
  CHECK(memcmp(back, key + 5 * ELEMS, sizeof(float) * ELEMS) == 0);
  CHECK(attn_kv_cache_free_pages(cache) == 3);

  /* Errors: status, message, nothing changed. */
  CHECK(attn_kv_cache_extend(cache, a, 11) == ATTN_CAPACITY_EXCEEDED);
  CHECK(strstr(attn_last_error(), "maximum of 16") != NULL);
  CHECK(attn_kv_cache_length(cache, a) == 6);
  CHECK(attn_kv_cache_write(cache, 99, 0, 0, 1, key, value) == ATTN_NOT_FOUND);
  CHECK(attn_kv_cache_write(cache, a, 2, 0, 1, key, value) ==
        ATTN_INVALID_ARGUMENT);
  CHECK(attn_kv_cache_write(cache, a, 0, 5, 2, key, value) ==
        ATTN_INVALID_ARGUMENT);
  CHECK(attn_kv_cache_read(cache, a, 0, 0, 1, NULL, back) ==
        ATTN_INVALID_ARGUMENT);
  CHECK(attn_kv_cache_block_table(cache, a, table, 1, &pages) ==
        ATTN_INVALID_ARGUMENT);
  CHECK(attn_kv_cache_add_sequence(NULL, &a) == ATTN_INVALID_ARGUMENT);
  CHECK(attn_kv_cache_key_pages(cache, 7) == NULL);
  CHECK(attn_kv_cache_length(cache, -5) == -1);
  {
    attn_kv_cache_config bad = config;
    attn_kv_cache *none = (attn_kv_cache *)&bad;
    bad.page_size = 0;
    CHECK(attn_kv_cache_create(&bad, &none) == ATTN_INVALID_ARGUMENT);
    CHECK(none == NULL);
    /* A dtype outside the enum, checked as the integer it is. */
    bad = config;
    *(int32_t *)&bad.dtype = 7;
    CHECK(attn_kv_cache_create(&bad, &none) == ATTN_INVALID_ARGUMENT &&
          strstr(attn_last_error(), "unknown dtype") && none == NULL);
    /* 4 TiB of pool per layer: a status, not an exception through C (it
       used to terminate the process). */
    bad = config;
    bad.num_kv_heads = 8;
    bad.head_dim = 128;
    bad.dtype = ATTN_F32;
    bad.page_size = 16;
    bad.num_pages = 1 << 26;
    bad.max_sequence_length = 1 << 20;
    CHECK(attn_kv_cache_create(&bad, &none) == ATTN_OUT_OF_MEMORY &&
          none == NULL);
    /* 2^31 - 1 layers of one tiny page: refused before 48 GiB of per-layer
       bookkeeping was allocated (an ASan build aborted there). */
    bad = config;
    bad.num_layers = 2147483647;
    CHECK(attn_kv_cache_create(&bad, &none) == ATTN_INVALID_ARGUMENT &&
          strstr(attn_last_error(), "layers exceed the 65536") &&
          none == NULL);
    /* A page of 2^21 tokens x 2^21 heads x 2^21 channels x 4 bytes is 2^65
       bytes: it used to wrap to 0, be accepted, and the first extend ran
       the process out of memory. */
    bad = config;
    bad.num_layers = 1;
    bad.num_kv_heads = 1 << 21;
    bad.head_dim = 1 << 21;
    bad.dtype = ATTN_F32;
    bad.page_size = 1 << 21;
    bad.num_pages = 1;
    CHECK(attn_kv_cache_create(&bad, &none) == ATTN_INVALID_ARGUMENT &&
          strstr(attn_last_error(), "overflow a 64-bit byte count") &&
          none == NULL);
    /* A pool of 2^62 bytes fits; K and V of two layers do not. */
    bad.num_kv_heads = 1 << 20;
    bad.head_dim = 1 << 20;
    bad.page_size = 1 << 20;
    bad.num_pages = 1;
    bad.num_layers = 2;
    CHECK(attn_kv_cache_create(&bad, &none) == ATTN_INVALID_ARGUMENT &&
          none == NULL);
  }
  /* Out of pages: 3 free, 16 tokens need 4. */
  {
    int32_t c;
    CHECK(attn_kv_cache_add_sequence(cache, &c) == ATTN_OK);
    CHECK(attn_kv_cache_extend(cache, c, 16) == ATTN_OUT_OF_MEMORY);
    CHECK(attn_kv_cache_length(cache, c) == 0);
  }

  CHECK(attn_kv_cache_truncate(cache, b, 0) == ATTN_OK);
  CHECK(attn_kv_cache_remove_sequence(cache, a) == ATTN_OK);
  CHECK(attn_kv_cache_free_pages(cache) == 6);
  CHECK(attn_kv_cache_key_scales(cache, 0) == NULL); /* f16: no scales */
  attn_kv_cache_destroy(cache);
  attn_kv_cache_destroy(NULL);

  /* An int8 cache: rows come back within half their scale, and the scale
     pools decode kernels read are there. */
  {
    attn_kv_cache_config int8 = {1, HEADS, DIM, ATTN_I8, 4, 2, 8};
    attn_kv_cache *quantized = NULL;
    float largest = 0.0f;
    CHECK(attn_kv_cache_create(&int8, &quantized) == ATTN_OK);
    CHECK(attn_kv_cache_pool_bytes(quantized) ==
          2u * HEADS * (DIM * 1 + 4) * 4 * 2);
    CHECK(attn_kv_cache_add_sequence(quantized, &a) == ATTN_OK);
    CHECK(attn_kv_cache_extend(quantized, a, 3) == ATTN_OK);
    CHECK(attn_kv_cache_write(quantized, a, 0, 0, 3, key, value) == ATTN_OK);
    CHECK(attn_kv_cache_read(quantized, a, 0, 0, 3, back, back_v) == ATTN_OK);
    for (i = 0; i < 3 * ELEMS; i++) {
      float error = back[i] > key[i] ? back[i] - key[i] : key[i] - back[i];
      largest = error > largest ? error : largest;
    }
    /* Row maxima are at most 47.5 (key[95]): half a scale <= 47.5 / 254. */
    CHECK(largest <= 47.5f / 254.0f);
    CHECK(attn_kv_cache_key_scales(quantized, 0) != NULL &&
          attn_kv_cache_value_scales(quantized, 0) != NULL);
    { /* token 0, head 0: 0, 0.5, 1, 1.5 */
      const float scale = attn_kv_cache_key_scales(quantized, 0)[0];
      CHECK(scale > 0.999f * 1.5f / 127 && scale < 1.001f * 1.5f / 127);
    }
    CHECK(attn_kv_cache_key_scales(quantized, 1) == NULL);
    attn_kv_cache_destroy(quantized);
  }
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    printf("c_api_test: all checks passed\n");
  return failures != 0;
}
