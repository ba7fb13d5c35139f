/*===- attn_runtime.h - the C API of libattn_runtime ----------------------===*
 *
 * A plain C interface over the C++ runtime (KvCache.h and friends): opaque
 * handles, status codes, and a message for the last failure.
 *
 * Thread safety: a handle belongs to one thread at a time (one session per
 * thread); different handles may be used from different threads. The
 * message of attn_last_error() is per thread.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_C_H
#define ATTN_RUNTIME_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ATTN_OK = 0,
  ATTN_INVALID_ARGUMENT = 1,
  ATTN_NOT_FOUND = 2,
  ATTN_CAPACITY_EXCEEDED = 3,
  ATTN_OUT_OF_MEMORY = 4,
  ATTN_KERNEL_FAILED = 5,
  ATTN_IO_ERROR = 6
} attn_status;

/* What the last call on this thread that failed said; "" if none failed. */
const char *attn_last_error(void);

typedef enum { ATTN_F32 = 0, ATTN_F16 = 1, ATTN_BF16 = 2 } attn_dtype;

/* A paged KV cache: pages of page_size tokens; one page id addresses K and V
 * of every layer. A contiguous cache is page_size == max_sequence_length. */
typedef struct {
  int32_t num_layers, num_kv_heads, head_dim;
  attn_dtype dtype;
  int32_t page_size, num_pages, max_sequence_length;
} attn_kv_cache_config;

typedef struct attn_kv_cache attn_kv_cache;

attn_status attn_kv_cache_create(const attn_kv_cache_config *config,
                                 attn_kv_cache **cache);
void attn_kv_cache_destroy(attn_kv_cache *cache); /* NULL is fine */

attn_status attn_kv_cache_add_sequence(attn_kv_cache *cache, int32_t *id);
attn_status attn_kv_cache_remove_sequence(attn_kv_cache *cache, int32_t id);
/* A new sequence sharing the parent's tokens (copy-on-write pages). */
attn_status attn_kv_cache_fork(attn_kv_cache *cache, int32_t parent,
                               int32_t *child);
/* Grows a sequence by count tokens; fails, changing nothing, when full. */
attn_status attn_kv_cache_extend(attn_kv_cache *cache, int32_t id,
                                 int32_t count);
/* Drops tokens from the end down to new_length (rollback). */
attn_status attn_kv_cache_truncate(attn_kv_cache *cache, int32_t id,
                                   int32_t new_length);
/* Tokens in the sequence, or -1 for an unknown id. */
int32_t attn_kv_cache_length(const attn_kv_cache *cache, int32_t id);

/* key, value: [count][num_kv_heads][head_dim] float, converted to and from
 * the cache's dtype. */
attn_status attn_kv_cache_write(attn_kv_cache *cache, int32_t id, int32_t layer,
                                int32_t position, int32_t count,
                                const float *key, const float *value);
attn_status attn_kv_cache_read(const attn_kv_cache *cache, int32_t id,
                               int32_t layer, int32_t position, int32_t count,
                               float *key, float *value);

/* Copies the sequence's page ids into table[0..capacity); *count receives
 * how many there are (ATTN_INVALID_ARGUMENT if more than capacity). */
attn_status attn_kv_cache_block_table(const attn_kv_cache *cache, int32_t id,
                                      int32_t *table, int32_t capacity,
                                      int32_t *count);
/* Page pools of a layer, [num_pages][page_size][num_kv_heads][head_dim] of
 * the cache dtype: what generated decode kernels read. NULL for a bad layer. */
const void *attn_kv_cache_key_pages(const attn_kv_cache *cache, int32_t layer);
const void *attn_kv_cache_value_pages(const attn_kv_cache *cache,
                                      int32_t layer);
int32_t attn_kv_cache_free_pages(const attn_kv_cache *cache);
/* Bytes of all pools: 2 · layers · KV heads · head size · element bytes ·
 * page_size · num_pages. */
uint64_t attn_kv_cache_pool_bytes(const attn_kv_cache *cache);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_C_H */
