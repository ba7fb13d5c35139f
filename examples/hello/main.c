/* hello: run the attnc-generated attention kernel of layer.json on seeded
 * random inputs and compare it with a naive double-precision reference. */
#include "hello.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* layer0's prefill kernel and its shape constants */
#define PREFILL hello_layer0_prefill
enum { BATCH = 2, LEN = 37, HQ = HELLO_PREFILL_H8_KV2_D64_CAUSAL_NUM_QUERY_HEADS,
       HKV = HELLO_PREFILL_H8_KV2_D64_CAUSAL_NUM_KV_HEADS,
       D = HELLO_PREFILL_H8_KV2_D64_CAUSAL_HEAD_DIM };

static float uniform(unsigned *state) { /* xorshift32 in [-1, 1) */
  *state ^= *state << 13;
  *state ^= *state >> 17;
  *state ^= *state << 5;
  return (float)(*state >> 8) / (float)(1 << 23) - 1.0f;
}

/* out[b][i][h][:] = softmax_j(q·k_j / sqrt(D), causal)·v */
static void reference(const float *q, const float *k, const float *v, double *out) {
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
          for (int d = 0; d < D; d++) dot += (double)qi[d] * kj[d];
          score[j] = dot / sqrt((double)D);
          if (score[j] > max) max = score[j];
        }
        for (int j = 0; j < visible; j++) sum += score[j] = exp(score[j] - max);
        double *o = out + ((b * LEN + i) * HQ + h) * D;
        for (int d = 0; d < D; d++) {
          double acc = 0;
          for (int j = 0; j < visible; j++)
            acc += score[j] * v[((b * LEN + j) * HKV + kvh) * D + d];
          o[d] = acc / sum;
        }
      }
}

int main(void) {
  const size_t nq = (size_t)BATCH * LEN * HQ * D, nkv = (size_t)BATCH * LEN * HKV * D;
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k),
        *v = malloc(nkv * sizeof *v), *out = malloc(nq * sizeof *out);
  double *expected = malloc(nq * sizeof *expected);
  unsigned seed = 20261129;
  for (size_t x = 0; x < nq; x++) q[x] = uniform(&seed);
  for (size_t x = 0; x < nkv; x++) k[x] = uniform(&seed);
  for (size_t x = 0; x < nkv; x++) v[x] = uniform(&seed);

  int status = PREFILL(q, k, v, out, BATCH, LEN, LEN);
  if (status != ATTNC_OK) {
    fprintf(stderr, "the attention kernel failed with status %d\n", status);
    return 1;
  }
  reference(q, k, v, expected);
  double max_error = 0;
  for (size_t x = 0; x < nq; x++) max_error = fmax(max_error, fabs(out[x] - expected[x]));

  printf("attnc hello: causal GQA attention, batch %d, length %d, %d query heads over "
         "%d KV heads, head_dim %d\n", BATCH, LEN, HQ, HKV, D);
  printf("max abs error vs double reference: %.3g (tolerance 1e-5)\n", max_error);
  free(q); free(k); free(v); free(out); free(expected);
  return max_error <= 1e-5 ? 0 : 1;
}
