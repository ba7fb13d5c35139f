//===- ServingMetrics.cpp - what attn-serve tells Prometheus --------------===//

#include "ServingMetrics.h"

#include <prometheus/text_serializer.h>

namespace attn::apps {

namespace {
using prometheus::Registry;

prometheus::Gauge &gauge(Registry &registry, const char *name,
                         const char *help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add(
      {});
}

prometheus::Counter &counter(Registry &registry, const char *name,
                             const char *help) {
  return prometheus::BuildCounter()
      .Name(name)
      .Help(help)
      .Register(registry)
      .Add({});
}

/// Latency buckets from 1 ms to 60 s, about three per decade.
prometheus::Histogram &latency(Registry &registry, const char *name,
                               const char *help) {
  return prometheus::BuildHistogram()
      .Name(name)
      .Help(help)
      .Register(registry)
      .Add({}, prometheus::Histogram::BucketBoundaries{
                   0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                   2.5, 5, 10, 30, 60});
}
} // namespace

ServingMetrics::ServingMetrics()
    : ServingMetrics(std::make_shared<Registry>()) {}

ServingMetrics::ServingMetrics(std::shared_ptr<Registry> registry)
    : running(gauge(*registry, "attn_requests_running",
                    "Requests being decoded or prefilled")),
      queued(gauge(*registry, "attn_requests_queued",
                   "Requests waiting for room")),
      promptTokens(counter(*registry, "attn_prompt_tokens_total",
                           "Prompt tokens of admitted requests")),
      generatedTokens(counter(*registry, "attn_generation_tokens_total",
                              "Tokens generated")),
      timeToFirstToken(latency(*registry, "attn_time_to_first_token_seconds",
                               "From a request's arrival to its first token")),
      interTokenLatency(latency(*registry, "attn_inter_token_latency_seconds",
                                "Between consecutive tokens of a request")),
      kvPagesUsed(gauge(*registry, "attn_kv_cache_pages_used",
                        "KV cache pages in use (running requests and the "
                        "prefix cache)")),
      kvPagesFree(
          gauge(*registry, "attn_kv_cache_pages_free", "KV cache pages free")),
      prefixHitTokens(counter(*registry, "attn_prefix_cache_hit_tokens_total",
                              "Prompt tokens whose K/V the prefix cache "
                              "gave")),
      prefixMissTokens(counter(*registry, "attn_prefix_cache_miss_tokens_total",
                               "Prompt tokens looked up in the prefix cache "
                               "and computed")),
      registry_(std::move(registry)),
      finished_(&prometheus::BuildCounter()
                     .Name("attn_requests_finished_total")
                     .Help("Requests ended, by reason: stop, length, "
                           "cancelled (the client went away), error")
                     .Register(*registry_)) {
  for (const char *reason : {"stop", "length", "cancelled", "error"})
    finished_->Add({{"reason", reason}}); // listed from the start at 0
}

void ServingMetrics::finished(const std::string &reason) {
  finished_->Add({{"reason", reason}}).Increment();
}

std::string ServingMetrics::render() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

} // namespace attn::apps
