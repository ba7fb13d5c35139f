//===- ServingMetrics.h - what attn-serve tells Prometheus -------*- C++
//-*-===//
//
// The serving engine's counters, gauges and latency histograms, kept with
// prometheus-cpp (Debian prometheus-cpp-dev; thread-safe: the engine's
// worker records, any HTTP thread renders) and rendered in Prometheus' text
// exposition format for GET /metrics.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_SERVINGMETRICS_H
#define ATTN_APPS_SERVINGMETRICS_H

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

namespace attn::apps {

class ServingMetrics {
public:
  ServingMetrics();

  /// Every metric, in the text exposition format (version 0.0.4).
  std::string render() const;

  /// A request ended: `reason` is "stop", "length", "cancelled" or "error".
  void finished(const std::string &reason);

  prometheus::Gauge &running, &queued;
  prometheus::Counter &promptTokens, &generatedTokens;
  prometheus::Histogram &timeToFirstToken, &interTokenLatency; // seconds
  prometheus::Gauge &kvPagesUsed, &kvPagesFree;
  prometheus::Counter &prefixHitTokens, &prefixMissTokens;

private:
  explicit ServingMetrics(std::shared_ptr<prometheus::Registry> registry);
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter> *finished_;
};

} // namespace attn::apps

#endif // ATTN_APPS_SERVINGMETRICS_H
