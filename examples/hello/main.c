/* hello: one causal grouped-query attention layer, compiled by attnc from
 * layer.json at build time, used the two ways a decoder uses it:
 *   1. prefill: the whole prompt at once, checked against a naive
 *      double-precision reference;
 *   2. decode: token by token over a paged KV cache (libattn_runtime's C
 *      API), each step checked against the prefill output of that token. */
#include "hello.h"

#include "attn/runtime/attn_runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* layer0's kernels and their shape constants */
#define PREFILL hello_layer0_prefill
#define DECODE hello_layer0_decode
enum {
  BATCH = 2,
  LEN = 37,
  HQ = HELLO_PREFILL_H8_KV2_D64_CAUSAL_NUM_QUERY_HEADS,
  HKV = HELLO_PREFILL_H8_KV2_D64_CAUSAL_NUM_KV_HEADS,
  D = HELLO_PREFILL_H8_KV2_D64_CAUSAL_HEAD_DIM,
  PAGE = HELLO_DECODE_H8_KV2_D64_P16_CAUSAL_PAGE_SIZE,
  MAX_PAGES = (LEN + PAGE - 1) / PAGE
};

static float uniform(unsigned *state) { /* xorshift32 in [-1, 1) */
  *state ^= *state << 13;
  *state ^= *state >> 17;
  *state ^= *state << 5;
  return (float)(*state >> 8) / (float)(1 << 23) - 1.0f;
}

/* out[b][i][h][:] = softmax_j(q·k_j / sqrt(D), causal)·v */
static void reference(const float *q, const float *k, const float *v,
                      double *out) {
  double score[LEN];
  for (int b = 0; b < BATCH; b++)
    for (int i = 0; i < LEN; i++)
      for (int h = 0; h < HQ; h++) {
        const float *qi = q + ((b * LEN + i) * HQ + h) * D;
        int kvh = h / (HQ / HKV), visible = i + 1;
        double max = -INFINITY, sum = 0;
        for (int j = 0; j < visible; j++) {
          const float *kj = k + ((b * LEN + j) * HKV + kvh) * D;
          double dot = 0;
          for (int d = 0; d < D; d++)
            dot += (double)qi[d] * kj[d];
          score[j] = dot / sqrt((double)D);
          if (score[j] > max)
            max = score[j];
        }
        for (int j = 0; j < visible; j++)
          sum += score[j] = exp(score[j] - max);
        double *o = out + ((b * LEN + i) * HQ + h) * D;
        for (int d = 0; d < D; d++) {
          double acc = 0;
          for (int j = 0; j < visible; j++)
            acc += score[j] * v[((b * LEN + j) * HKV + kvh) * D + d];
          o[d] = acc / sum;
        }
      }
}

/* Decodes every token of both sequences through a paged KV cache and
 * returns the largest difference from the prefill output, or -1. */
static double decode_token_by_token(const float *q, const float *k,
                                    const float *v, const float *prefill) {
  attn_kv_cache_config config = {1, HKV, D, ATTN_F32, PAGE, BATCH * MAX_PAGES,
                                 LEN};
  attn_kv_cache *cache = NULL;
  int32_t ids[BATCH], table[BATCH * MAX_PAGES] = {0}, lengths[BATCH], count;
  float query[BATCH * HQ * D], out[BATCH * HQ * D];
  double worst = 0;
  if (attn_kv_cache_create(&config, &cache) != ATTN_OK)
    goto fail;
  for (int b = 0; b < BATCH; b++)
    if (attn_kv_cache_add_sequence(cache, &ids[b]) != ATTN_OK)
      goto fail;
  for (int t = 0; t < LEN; t++) {
    for (int b = 0; b < BATCH; b++) {
      /* Append token t's K and V, then attend with its query. */
      const size_t kv = ((size_t)b * LEN + t) * HKV * D;
      if (attn_kv_cache_extend(cache, ids[b], 1) != ATTN_OK ||
          attn_kv_cache_write(cache, ids[b], 0, t, 1, k + kv, v + kv) !=
              ATTN_OK ||
          attn_kv_cache_block_table(cache, ids[b], table + b * MAX_PAGES,
                                    MAX_PAGES, &count) != ATTN_OK)
        goto fail;
      lengths[b] = attn_kv_cache_length(cache, ids[b]);
      for (int x = 0; x < HQ * D; x++)
        query[b * HQ * D + x] = q[((size_t)b * LEN + t) * HQ * D + x];
    }
    int status = DECODE(query, attn_kv_cache_key_pages(cache, 0),
                        attn_kv_cache_value_pages(cache, 0), table, lengths,
                        out, BATCH, 1, config.num_pages, MAX_PAGES);
    if (status != ATTNC_OK) {
      fprintf(stderr, "the decode kernel failed with status %d\n", status);
      attn_kv_cache_destroy(cache);
      return -1;
    }
    for (int b = 0; b < BATCH; b++)
      for (int x = 0; x < HQ * D; x++)
        worst = fmax(worst, fabs(out[b * HQ * D + x] -
                                 prefill[((size_t)b * LEN + t) * HQ * D + x]));
  }
  attn_kv_cache_destroy(cache);
  return worst;
fail:
  fprintf(stderr, "KV cache error: %s\n", attn_last_error());
  attn_kv_cache_destroy(cache);
  return -1;
}

int main(void) {
  const size_t nq = (size_t)BATCH * LEN * HQ * D,
               nkv = (size_t)BATCH * LEN * HKV * D;
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k),
        *v = malloc(nkv * sizeof *v), *out = malloc(nq * sizeof *out);
  double *expected = malloc(nq * sizeof *expected);
  unsigned seed = 20261129;
  for (size_t x = 0; x < nq; x++)
    q[x] = uniform(&seed);
  for (size_t x = 0; x < nkv; x++)
    k[x] = uniform(&seed);
  for (size_t x = 0; x < nkv; x++)
    v[x] = uniform(&seed);

  int status = PREFILL(q, k, v, out, BATCH, LEN, LEN);
  if (status != ATTNC_OK) {
    fprintf(stderr, "the prefill kernel failed with status %d\n", status);
    return 1;
  }
  reference(q, k, v, expected);
  double max_error = 0;
  for (size_t x = 0; x < nq; x++)
    max_error = fmax(max_error, fabs(out[x] - expected[x]));
  double decode_difference = decode_token_by_token(q, k, v, out);

  printf("attnc hello: causal GQA attention, batch %d, length %d, %d query "
         "heads over %d KV heads, head_dim %d\n",
         BATCH, LEN, HQ, HKV, D);
  printf("prefill: max abs error vs double reference: %.3g (tolerance 1e-5)\n",
         max_error);
  printf("decode, token by token over a paged KV cache (%d-token pages): "
         "max abs difference from prefill: %.3g (tolerance 2e-5)\n",
         PAGE, decode_difference);
  free(q);
  free(k);
  free(v);
  free(out);
  free(expected);
  return max_error <= 1e-5 && decode_difference >= 0 &&
                 decode_difference <= 2e-5
             ? 0
             : 1;
}
