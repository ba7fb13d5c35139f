//===- Bench.cpp - attn-translate-bench: decoding speed of the translator -===//
//
// Greedy translation of the first 32 held-out numerals of model/test.tsv,
// one at a time (batch 1) and as one batch of 32, including the encoder and
// the cross-attention K/V. Counters: decoded tokens per second (each
// sequence's words plus its <eos>) and milliseconds per decoded token.
// tools/bench_translate_torch.py times the same model and inputs in PyTorch
// eager. ATTN_TRANSLATE_MODEL_DIR (environment) overrides the model
// directory.
//
//===----------------------------------------------------------------------===//

#include "Translator.h"

#include "translator.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace translate;

namespace {
std::unique_ptr<Translator> gTranslator;
std::vector<std::vector<int32_t>> gSources;

void translateBatches(benchmark::State &state) {
  const size_t batch = size_t(state.range(0));
  size_t tokens = 0;
  for (auto _ : state) {
    for (size_t first = 0; first < gSources.size(); first += batch) {
      std::vector<std::vector<int32_t>> sources(
          gSources.begin() + first,
          gSources.begin() + std::min(gSources.size(), first + batch));
      std::vector<std::vector<int32_t>> outputs;
      if (Status s = gTranslator->translate(sources, outputs); !s) {
        state.SkipWithError(s.message().c_str());
        return;
      }
      for (const auto &output : outputs)
        tokens += output.size() + 1;
    }
  }
  state.counters["tokens_per_s"] =
      benchmark::Counter(double(tokens), benchmark::Counter::kIsRate);
  state.counters["ms_per_token"] = benchmark::Counter(
      double(tokens) / 1000.0,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(translateBatches)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(32)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  const char *override = std::getenv("ATTN_TRANSLATE_MODEL_DIR");
  std::string dir = override ? override : ATTN_TRANSLATE_MODEL_DIR;
  if (Status s =
          Translator::load(dir, translator_plan_json,
                           reinterpret_cast<const attn::runtime::KernelEntry *>(
                               translator_kernel_table),
                           TRANSLATOR_KERNEL_TABLE_SIZE, gTranslator);
      !s) {
    std::fprintf(stderr, "attn-translate-bench: %s\n", s.message().c_str());
    return 1;
  }
  std::ifstream test(dir + "/test.tsv");
  for (std::string line; gSources.size() < 32 && std::getline(test, line);) {
    std::stringstream fields(line);
    std::string n, numeral;
    std::getline(fields, n, '\t');
    std::getline(fields, numeral, '\t');
    gSources.emplace_back();
    if (Status s = gTranslator->sourceTokens(numeral, gSources.back()); !s) {
      std::fprintf(stderr, "attn-translate-bench: %s\n", s.message().c_str());
      return 1;
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
