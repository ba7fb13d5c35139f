/* The smallest use of attnc: one multi-query attention kernel, generated at
 * build time from layer.json, called through the generated header alone (no
 * runtime library), checked against a double-precision loop.
 * Build it against an installed attnc: see README.md beside this file. */
#include "embed.h"

#include <math.h>
#include <stdio.h>

enum {
  LEN = 9, /* tokens: any length works */
  HQ = EMBED_PREFILL_H4_KV1_D32_NUM_QUERY_HEADS,
  HKV = EMBED_PREFILL_H4_KV1_D32_NUM_KV_HEADS,
  D = EMBED_PREFILL_H4_KV1_D32_HEAD_DIM
};

static float q[LEN][HQ][D], k[LEN][HKV][D], v[LEN][HKV][D], out[LEN][HQ][D];

int main(void) {
  for (int t = 0; t < LEN; t++) /* deterministic inputs in [-1, 1] */
    for (int d = 0; d < D; d++) {
      for (int h = 0; h < HQ; h++)
        q[t][h][d] = sinf(0.37f * (float)(t * HQ * D + h * D + d));
      k[t][0][d] = cosf(0.11f * (float)(t * D + d));
      v[t][0][d] = sinf(0.23f * (float)(t * D + d) + 1.0f);
    }
  /* One sequence (batch 1), no mask: every query sees every key. */
  int status = embed_layer0_prefill(&q[0][0][0], &k[0][0][0], &v[0][0][0],
                                    &out[0][0][0], 1, LEN, LEN);
  if (status != ATTNC_OK) {
    fprintf(stderr, "embed: kernel failed with status %d\n", status);
    return 1;
  }
  double worst = 0;
  for (int i = 0; i < LEN; i++)
    for (int h = 0; h < HQ; h++) {
      double score[LEN], top = -INFINITY, sum = 0;
      for (int j = 0; j < LEN; j++) {
        double dot = 0;
        for (int d = 0; d < D; d++)
          dot += (double)q[i][h][d] * k[j][0][d];
        score[j] = dot / sqrt((double)D);
        top = score[j] > top ? score[j] : top;
      }
      for (int j = 0; j < LEN; j++)
        sum += score[j] = exp(score[j] - top);
      for (int d = 0; d < D; d++) {
        double expected = 0;
        for (int j = 0; j < LEN; j++)
          expected += score[j] / sum * v[j][0][d];
        double error = fabs(out[i][h][d] - expected);
        worst = error > worst ? error : worst;
      }
    }
  printf("embed: %d tokens, %d query heads sharing %d KV head of %d: "
         "max abs error %.2e\n",
         LEN, HQ, HKV, D, worst);
  return worst <= 1e-5 ? 0 : 1;
}
