/*===- attn_runtime.h - the C API of libattn_runtime ----------------------===*
 *
 * A plain C interface over the C++ runtime (KvCache.h and friends): opaque
 * handles, status codes, and a message for the last failure.
 *
 * Thread safety: a handle belongs to one thread at a time (one session per
 * thread); different handles may be used from different threads. The
 * message of attn_last_error() is per thread. A model (attn_model) is
 * read-only after loading and may be shared by generators on several
 * threads. The generated kernels run on Halide's one process-wide thread
 * pool (HL_NUM_THREADS sets its size), which all sessions share.
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

/* How a cache stores its elements (attn::DType). ATTN_I8: symmetric int8,
 * one float scale per (token, head) row in pools of their own. */
typedef enum {
  ATTN_F32 = 0,
  ATTN_F16 = 1,
  ATTN_BF16 = 2,
  ATTN_I8 = 3
} attn_dtype;

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
/* An ATTN_I8 cache's scale pools of a layer, [num_pages][page_size]
 * [num_kv_heads] float: element (p, s, h, x) is its int8 times scale
 * (p, s, h). NULL for another dtype or a bad layer. */
const float *attn_kv_cache_key_scales(const attn_kv_cache *cache,
                                      int32_t layer);
const float *attn_kv_cache_value_scales(const attn_kv_cache *cache,
                                        int32_t layer);
int32_t attn_kv_cache_free_pages(const attn_kv_cache *cache);
/* Bytes of all pools: 2 · layers · KV heads · head size · element bytes ·
 * page_size · num_pages (ATTN_I8: and the scale pools). */
uint64_t attn_kv_cache_pool_bytes(const attn_kv_cache *cache);

/*===--- Models ----------------------------------------------------------===*/

/* A whole generated model: its plan and kernel table, as the generated header
 * declares them (<name>_plan_json, <name>_kernel_table and
 * <NAME>_KERNEL_TABLE_SIZE), and its weights (a safetensors file, a
 * model.safetensors.index.json with its shards, or a model folder; F32, F16
 * or BF16 tensors whose names follow `naming`). Loading checks every tensor
 * and names each missing, extra or misshaped one in attn_last_error(). */
typedef enum {
  ATTN_NAMING_BART = 0,
  ATTN_NAMING_LLAMA = 1,
  ATTN_NAMING_GPT2 = 2,
  ATTN_NAMING_GEMMA = 3,
  ATTN_NAMING_PHI3 = 4,
  ATTN_NAMING_GEMMA3 = 5,
  ATTN_NAMING_MIXTRAL = 6,
  ATTN_NAMING_DEEPSEEK = 7,
  ATTN_NAMING_GPT_OSS = 8
} attn_weight_naming;
typedef struct attn_model attn_model;
attn_status attn_model_load(const char *plan_json, const void *kernel_table,
                            size_t kernel_table_size, const char *weights_path,
                            attn_weight_naming naming, attn_model **model);
/* The same on a GPU: `device_api` is the generated <name>_device_api of a
 * library attnc built with a GPU target (--target=...,cuda or ...,opencl).
 * Weights, KV caches and activations then stay on the device (Model.h);
 * ATTN_NOT_FOUND, naming why, without the driver or a device. NULL:
 * attn_model_load. */
attn_status
attn_model_load_on_device(const char *plan_json, const void *kernel_table,
                          size_t kernel_table_size, const char *weights_path,
                          attn_weight_naming naming, const void *device_api,
                          attn_model **model);
/* A model from a shared model library (attnc --shared wrote library_path,
 * lib<name>.so, loaded with dlopen; ModelLibrary.h), its weights named as its
 * plan says. A library of another ABI or attnc version, or for a CPU this
 * machine is not, is ATTN_INVALID_ARGUMENT naming the mismatch; one that
 * cannot be loaded, ATTN_IO_ERROR. The model keeps the library loaded.
 * on_device: its GPU kernels. */
attn_status attn_model_load_library(const char *library_path,
                                    const char *weights_path, int on_device,
                                    attn_model **model);
/* As attn_model_load_library, keeping the weights as laid out for the
 * kernels in the file packed_weights (Model.h's LoadOptions::packedWeights):
 * mapped, every checksum verified, when it holds this checkpoint's weights
 * for this library's plan (a start in a fraction of a second, its pages
 * shared by every process that maps it); else (absent, stale, truncated,
 * corrupt) the checkpoint is laid out and the file replaced, and a file that
 * cannot be written costs only the time. NULL packed_weights: as
 * attn_model_load_library. */
attn_status attn_model_load_library_packed(const char *library_path,
                                           const char *weights_path,
                                           const char *packed_weights,
                                           int on_device, attn_model **model);
void attn_model_destroy(attn_model *model); /* NULL is fine */
/* Tokens of the output head (the decoder's vocabulary). */
int32_t attn_model_vocabulary(const attn_model *model);

/* Continuous-batching generation (Generator.h): requests join at any time,
 * attn_generator_step() decodes one token for all running requests as one
 * batch. Decoder-only models take a prompt; encoder-decoder models also a
 * source (attn_generator_submit_source). The model must outlive the
 * generator. */
typedef struct attn_generator attn_generator;
typedef struct {
  float temperature; /* 0: greedy */
  int32_t top_k;     /* 0: no limit */
  float top_p;       /* (0, 1] */
  uint64_t seed;
} attn_sampling;
/* Called with each new token of a request; return 0 to cancel it. */
typedef int (*attn_token_callback)(void *user, int32_t request, int32_t token);
typedef enum {
  ATTN_RUNNING = 0,
  ATTN_FINISHED_STOP_TOKEN = 1,
  ATTN_FINISHED_MAX_TOKENS = 2,
  ATTN_FINISHED_CANCELLED = 3,
  ATTN_FINISHED_CACHE_FULL = 4
} attn_finish_reason;

attn_status attn_generator_create(const attn_model *model,
                                  int32_t max_sequences,
                                  attn_generator **generator);
/* As attn_generator_create, for serving (decoder-only models): with
 * prefill_chunk > 0, submit() only queues a prompt and each step spends at
 * most that many prompt tokens on it beside the running requests' decode
 * rows (a prompt goes whole when nothing decodes; its first token arrives
 * in a step); with prefix_cache nonzero, prompts reuse the K/V pages of
 * prefixes earlier requests computed (Generator.h). */
typedef struct {
  int32_t max_sequences;
  int32_t prefill_chunk; /* 0: submit() prefills a whole prompt */
  int32_t prefix_cache;  /* nonzero: on */
} attn_generator_options;
attn_status attn_generator_create_with_options(
    const attn_model *model, const attn_generator_options *options,
    attn_generator **generator);
void attn_generator_destroy(attn_generator *generator); /* NULL is fine */
/* Prefills the prompt and samples its first token. sampling NULL: greedy;
 * callback may be NULL. */
attn_status attn_generator_submit(
    attn_generator *generator, const int32_t *prompt, int32_t prompt_length,
    int32_t max_new_tokens, const int32_t *stop_tokens, int32_t num_stop_tokens,
    const attn_sampling *sampling, attn_token_callback callback, void *user,
    int32_t *request);
/* Encoder-decoder models: encodes source[0..source_length) once (its
 * cross-attention K/V stay cached until the request ends); the prompt (the
 * decoder's start tokens, e.g. <bos>) enters the cache in the following
 * steps. Decoder-only models refuse a source. */
attn_status attn_generator_submit_source(
    attn_generator *generator, const int32_t *source, int32_t source_length,
    const int32_t *prompt, int32_t prompt_length, int32_t max_new_tokens,
    const int32_t *stop_tokens, int32_t num_stop_tokens,
    const attn_sampling *sampling, attn_token_callback callback, void *user,
    int32_t *request);
attn_status attn_generator_step(attn_generator *generator);
attn_status attn_generator_run(attn_generator *generator); /* until idle */
int32_t attn_generator_running(const attn_generator *generator);
/* Copies a request's generated tokens into tokens[0..capacity); *count
 * receives how many there are (ATTN_INVALID_ARGUMENT if more). */
attn_status attn_generator_result(const attn_generator *generator,
                                  int32_t request, int32_t *tokens,
                                  int32_t capacity, int32_t *count,
                                  attn_finish_reason *reason);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_C_H */
