//===- CApi.cpp - the C API of libattn_runtime ----------------------------===//

#include "attn/runtime/attn_runtime.h"

#include "CApiSupport.h"

#include "attn/runtime/Generator.h"
#include "attn/runtime/KvCache.h"
#include "attn/runtime/ModelLibrary.h"

using namespace attn::runtime;

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

static_assert(int(StatusCode::InvalidArgument) == ATTN_INVALID_ARGUMENT &&
                  int(StatusCode::NotFound) == ATTN_NOT_FOUND &&
                  int(StatusCode::CapacityExceeded) == ATTN_CAPACITY_EXCEEDED &&
                  int(StatusCode::OutOfMemory) == ATTN_OUT_OF_MEMORY &&
                  int(StatusCode::KernelFailed) == ATTN_KERNEL_FAILED &&
                  int(StatusCode::IoError) == ATTN_IO_ERROR,
              "attn_status mirrors StatusCode");
static_assert(int(DType::F32) == ATTN_F32 && int(DType::F16) == ATTN_F16 &&
                  int(DType::BF16) == ATTN_BF16 && int(DType::I8) == ATTN_I8,
              "attn_dtype mirrors DType");

struct attn_kv_cache {
  KvCache cache;
};
struct attn_model {
  std::unique_ptr<Model> model;
};
struct attn_generator {
  std::unique_ptr<Generator> generator;
  /// attn_generator_destroy from inside a token callback: done when the
  /// call that ran the callback returns.
  bool destroyRequested = false;
};

static_assert(int(WeightNaming::Bart) == ATTN_NAMING_BART &&
                  int(WeightNaming::Llama) == ATTN_NAMING_LLAMA &&
                  int(WeightNaming::Gpt2) == ATTN_NAMING_GPT2 &&
                  int(WeightNaming::Gemma) == ATTN_NAMING_GEMMA &&
                  int(WeightNaming::Phi3) == ATTN_NAMING_PHI3 &&
                  int(WeightNaming::Gemma3) == ATTN_NAMING_GEMMA3 &&
                  int(WeightNaming::Mixtral) == ATTN_NAMING_MIXTRAL &&
                  int(WeightNaming::DeepSeek) == ATTN_NAMING_DEEPSEEK &&
                  int(WeightNaming::GptOss) == ATTN_NAMING_GPT_OSS,
              "attn_weight_naming mirrors WeightNaming");
static_assert(int(FinishReason::CacheFull) == ATTN_FINISHED_CACHE_FULL &&
                  int(FinishReason::Cancelled) == ATTN_FINISHED_CANCELLED,
              "attn_finish_reason mirrors FinishReason");
static_assert(sizeof(KernelEntry) == 3 * sizeof(void *),
              "a kernel table entry is a name, a function and its metadata");
static_assert(sizeof(DeviceApi) == 11 * sizeof(void *),
              "attnc_device_api: a name and ten functions");

namespace attn::runtime::capi {
std::string &lastError() {
  thread_local std::string message;
  return message;
}
} // namespace attn::runtime::capi

using namespace attn::runtime::capi;

namespace {
/// An enum argument's value as the caller stored it: C passes any int, and
/// loading an out-of-range value as the C++ enum is undefined.
template <class Enum> int32_t rawEnum(const Enum &value) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "C enums are int-sized");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}
} // namespace

extern "C" {

const char *attn_last_error(void) { return lastError().c_str(); }

attn_status attn_kv_cache_create(const attn_kv_cache_config *config,
                                 attn_kv_cache **cache) {
  return guarded("attn_kv_cache_create", [&]() -> attn_status {
    if (!config || !cache)
      return invalid("attn_kv_cache_create: null argument");
    *cache = nullptr;
    const int32_t dtype = rawEnum(config->dtype);
    if (dtype < ATTN_F32 || dtype > ATTN_I8)
      return invalid("attn_kv_cache_create: unknown dtype");
    KvCacheConfig c;
    c.numLayers = config->num_layers;
    c.numKvHeads = config->num_kv_heads;
    c.headDim = config->head_dim;
    c.dtype = static_cast<DType>(dtype);
    c.pageSize = config->page_size;
    c.numPages = config->num_pages;
    c.maxSequenceLength = config->max_sequence_length;
    auto handle = std::make_unique<attn_kv_cache>();
    if (attn_status status = report(KvCache::create(c, handle->cache)))
      return status;
    *cache = handle.release();
    return ATTN_OK;
  });
}

void attn_kv_cache_destroy(attn_kv_cache *cache) { delete cache; }

#define ATTN_CHECK_HANDLE(cache)                                               \
  if (!(cache))                                                                \
    return invalid("null attn_kv_cache");

attn_status attn_kv_cache_add_sequence(attn_kv_cache *cache, int32_t *id) {
  return guarded("attn_kv_cache_add_sequence", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    if (!id)
      return invalid("attn_kv_cache_add_sequence: null id");
    return report(cache->cache.addSequence(*id));
  });
}

attn_status attn_kv_cache_remove_sequence(attn_kv_cache *cache, int32_t id) {
  return guarded("attn_kv_cache_remove_sequence", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    return report(cache->cache.removeSequence(id));
  });
}

attn_status attn_kv_cache_fork(attn_kv_cache *cache, int32_t parent,
                               int32_t *child) {
  return guarded("attn_kv_cache_fork", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    if (!child)
      return invalid("attn_kv_cache_fork: null child");
    return report(cache->cache.fork(parent, *child));
  });
}

attn_status attn_kv_cache_extend(attn_kv_cache *cache, int32_t id,
                                 int32_t count) {
  return guarded("attn_kv_cache_extend", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    return report(cache->cache.extend(id, count));
  });
}

attn_status attn_kv_cache_truncate(attn_kv_cache *cache, int32_t id,
                                   int32_t new_length) {
  return guarded("attn_kv_cache_truncate", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    return report(cache->cache.truncate(id, new_length));
  });
}

int32_t attn_kv_cache_length(const attn_kv_cache *cache, int32_t id) {
  return cache ? cache->cache.length(id) : -1;
}

attn_status attn_kv_cache_write(attn_kv_cache *cache, int32_t id, int32_t layer,
                                int32_t position, int32_t count,
                                const float *key, const float *value) {
  return guarded("attn_kv_cache_write", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    return report(cache->cache.write(id, layer, position, count, key, value));
  });
}

attn_status attn_kv_cache_read(const attn_kv_cache *cache, int32_t id,
                               int32_t layer, int32_t position, int32_t count,
                               float *key, float *value) {
  return guarded("attn_kv_cache_read", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    return report(cache->cache.read(id, layer, position, count, key, value));
  });
}

attn_status attn_kv_cache_block_table(const attn_kv_cache *cache, int32_t id,
                                      int32_t *table, int32_t capacity,
                                      int32_t *count) {
  return guarded("attn_kv_cache_block_table", [&]() -> attn_status {
    ATTN_CHECK_HANDLE(cache);
    const std::vector<int32_t> *pages = cache->cache.blockTable(id);
    if (!pages)
      return report(
          Status(StatusCode::NotFound,
                 "attn_kv_cache_block_table: no sequence " + std::to_string(id)));
    if (count)
      *count = int32_t(pages->size());
    if (int64_t(pages->size()) > capacity || (!table && !pages->empty()))
      return invalid("attn_kv_cache_block_table: the table does not fit");
    std::copy(pages->begin(), pages->end(), table);
    return ATTN_OK;
  });
}

const void *attn_kv_cache_key_pages(const attn_kv_cache *cache, int32_t layer) {
  if (!cache || layer < 0 || layer >= cache->cache.config().numLayers)
    return nullptr;
  return cache->cache.keyPages(layer);
}

const void *attn_kv_cache_value_pages(const attn_kv_cache *cache,
                                      int32_t layer) {
  if (!cache || layer < 0 || layer >= cache->cache.config().numLayers)
    return nullptr;
  return cache->cache.valuePages(layer);
}

const float *attn_kv_cache_key_scales(const attn_kv_cache *cache,
                                      int32_t layer) {
  if (!cache || layer < 0 || layer >= cache->cache.config().numLayers)
    return nullptr;
  return cache->cache.keyScales(layer);
}

const float *attn_kv_cache_value_scales(const attn_kv_cache *cache,
                                        int32_t layer) {
  if (!cache || layer < 0 || layer >= cache->cache.config().numLayers)
    return nullptr;
  return cache->cache.valueScales(layer);
}

int32_t attn_kv_cache_free_pages(const attn_kv_cache *cache) {
  return cache ? cache->cache.freePages() : 0;
}

uint64_t attn_kv_cache_pool_bytes(const attn_kv_cache *cache) {
  return cache ? cache->cache.poolBytes() : 0;
}

attn_status attn_model_load(const char *plan_json, const void *kernel_table,
                            size_t kernel_table_size, const char *weights_path,
                            attn_weight_naming naming, attn_model **model) {
  return guarded("attn_model_load", [&]() -> attn_status {
    return attn_model_load_on_device(plan_json, kernel_table, kernel_table_size,
                                     weights_path, naming, nullptr, model);
  });
}

attn_status attn_model_load_library_packed(const char *library_path,
                                           const char *weights_path,
                                           const char *packed_weights,
                                           int on_device, attn_model **model) {
  return guarded(__func__, [&]() -> attn_status {
    if (!library_path || !weights_path || !model)
      return invalid("attn_model_load_library: null argument");
    *model = nullptr;
    std::shared_ptr<const ModelLibrary> library;
    if (Status s = ModelLibrary::open(library_path, library); !s)
      return report(s);
    auto result = std::make_unique<attn_model>();
    if (Status s = Model::load(
            std::move(library), weights_path, result->model,
            {.onDevice = on_device != 0,
             .packedWeights = packed_weights ? packed_weights : ""});
        !s)
      return report(s);
    *model = result.release();
    return ATTN_OK;
  });
}

attn_status attn_model_load_library(const char *library_path,
                                    const char *weights_path, int on_device,
                                    attn_model **model) {
  return attn_model_load_library_packed(library_path, weights_path, nullptr,
                                        on_device, model);
}

attn_status
attn_model_load_on_device(const char *plan_json, const void *kernel_table,
                          size_t kernel_table_size, const char *weights_path,
                          attn_weight_naming naming, const void *device_api,
                          attn_model **model) {
  return guarded("attn_model_load_on_device", [&]() -> attn_status {
    if (!plan_json || !kernel_table || !weights_path || !model)
      return invalid("attn_model_load: null argument");
    *model = nullptr;
    const int32_t rawNaming = rawEnum(naming);
    if (rawNaming < ATTN_NAMING_BART || rawNaming > ATTN_NAMING_MIXTRAL)
      return invalid("attn_model_load: unknown weight naming");
    auto result = std::make_unique<attn_model>();
    const auto *table = static_cast<const KernelEntry *>(kernel_table);
    Status s =
        device_api
            ? Model::load(plan_json, table, kernel_table_size, weights_path,
                          WeightNaming(naming),
                          *static_cast<const DeviceApi *>(device_api),
                          result->model)
            : Model::load(plan_json, table, kernel_table_size, weights_path,
                          WeightNaming(naming), result->model);
    if (!s)
      return report(s);
    *model = result.release();
    return ATTN_OK;
  });
}

void attn_model_destroy(attn_model *model) { delete model; }

int32_t attn_model_vocabulary(const attn_model *model) {
  return model ? model->model->targetVocabulary() : 0;
}

attn_status attn_generator_create(const attn_model *model,
                                  int32_t max_sequences,
                                  attn_generator **generator) {
  return guarded("attn_generator_create", [&]() -> attn_status {
    if (!model || !generator)
      return invalid("attn_generator_create: null argument");
    *generator = nullptr;
    auto result = std::make_unique<attn_generator>();
    if (Status s =
            Generator::create(*model->model, max_sequences, result->generator);
        !s)
      return report(s);
    *generator = result.release();
    return ATTN_OK;
  });
}

attn_status attn_generator_create_with_options(
    const attn_model *model, const attn_generator_options *options,
    attn_generator **generator) {
  return guarded("attn_generator_create_with_options", [&]() -> attn_status {
    if (!model || !options || !generator)
      return invalid("attn_generator_create_with_options: null argument");
    *generator = nullptr;
    GeneratorOptions o;
    o.maxSequences = options->max_sequences;
    o.prefillChunk = options->prefill_chunk;
    o.prefixCache = options->prefix_cache != 0;
    auto result = std::make_unique<attn_generator>();
    if (Status s = Generator::create(*model->model, o, result->generator); !s)
      return report(s);
    *generator = result.release();
    return ATTN_OK;
  });
}

void attn_generator_destroy(attn_generator *generator) {
  if (generator && generator->generator->inCallback())
    generator->destroyRequested = true;
  else
    delete generator;
}

namespace {
/// The end of a call that may have run callbacks: a destroy one asked for
/// happens now.
attn_status finishCall(attn_generator *generator, attn_status status) {
  if (generator->destroyRequested)
    delete generator;
  return status;
}
} // namespace

attn_status attn_generator_submit(
    attn_generator *generator, const int32_t *prompt, int32_t prompt_length,
    int32_t max_new_tokens, const int32_t *stop_tokens, int32_t num_stop_tokens,
    const attn_sampling *sampling, attn_token_callback callback, void *user,
    int32_t *request) {
  return guarded("attn_generator_submit", [&]() -> attn_status {
    return attn_generator_submit_source(
        generator, nullptr, 0, prompt, prompt_length, max_new_tokens, stop_tokens,
        num_stop_tokens, sampling, callback, user, request);
  });
}

attn_status attn_generator_submit_source(
    attn_generator *generator, const int32_t *source, int32_t source_length,
    const int32_t *prompt, int32_t prompt_length, int32_t max_new_tokens,
    const int32_t *stop_tokens, int32_t num_stop_tokens,
    const attn_sampling *sampling, attn_token_callback callback, void *user,
    int32_t *request) {
  return guarded("attn_generator_submit_source", [&]() -> attn_status {
    if (!generator || !request || prompt_length < 0 ||
        (prompt_length > 0 && !prompt) || source_length < 0 ||
        (source_length > 0 && !source) || num_stop_tokens < 0 ||
        (num_stop_tokens > 0 && !stop_tokens))
      return invalid("attn_generator_submit: null or negative argument");
    GenerationRequest r;
    if (source_length > 0)
      r.source.assign(source, source + source_length);
    if (prompt_length > 0)
      r.prompt.assign(prompt, prompt + prompt_length);
    r.maxNewTokens = max_new_tokens;
    if (num_stop_tokens > 0)
      r.stopTokens.assign(stop_tokens, stop_tokens + num_stop_tokens);
    if (sampling)
      r.sampling = {sampling->temperature, sampling->top_k, sampling->top_p,
                    sampling->seed};
    // A request's id is its index; the callback knows it from the start
    // (submit already samples the first token).
    const int32_t id = int32_t(generator->generator->requests());
    if (callback)
      r.onToken = [callback, user, id](int32_t token) {
        return callback(user, id, token) != 0;
      };
    int assigned = -1;
    if (Status s = generator->generator->submit(std::move(r), assigned); !s)
      return finishCall(generator, report(s));
    *request = assigned;
    return finishCall(generator, ATTN_OK);
  });
}

attn_status attn_generator_step(attn_generator *generator) {
  return guarded("attn_generator_step", [&]() -> attn_status {
    if (!generator)
      return invalid("attn_generator_step: null generator");
    return finishCall(generator, report(generator->generator->step()));
  });
}

attn_status attn_generator_run(attn_generator *generator) {
  return guarded("attn_generator_run", [&]() -> attn_status {
    if (!generator)
      return invalid("attn_generator_run: null generator");
    return finishCall(generator, report(generator->generator->run()));
  });
}

int32_t attn_generator_running(const attn_generator *generator) {
  return generator ? generator->generator->running() : 0;
}

attn_status attn_generator_result(const attn_generator *generator,
                                  int32_t request, int32_t *tokens,
                                  int32_t capacity, int32_t *count,
                                  attn_finish_reason *reason) {
  return guarded("attn_generator_result", [&]() -> attn_status {
    if (!generator || !count || capacity < 0 || (capacity > 0 && !tokens))
      return invalid("attn_generator_result: null or negative argument");
    if (request < 0 || request >= generator->generator->requests())
      return report(
          Status(StatusCode::NotFound,
                 "attn_generator_result: no request " + std::to_string(request)));
    const std::vector<int32_t> &generated = generator->generator->tokens(request);
    *count = int32_t(generated.size());
    if (reason)
      *reason = attn_finish_reason(generator->generator->finishReason(request));
    if (*count > capacity)
      return invalid("attn_generator_result: more tokens than capacity");
    std::copy(generated.begin(), generated.end(), tokens);
    return ATTN_OK;
  });
}

} // extern "C"
