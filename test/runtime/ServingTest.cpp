//===- ServingTest.cpp - chunked prefill, prefix cache, logprobs ----------===//
//
// What a server needs of the runtime beyond one request at a time, on the
// generated llama_tiny model (pages of 4 tokens) with seeded random weights:
// Model::append (a prompt's chunk beside other sequences' decode steps) against
// recomputing the whole prefix, the prefix cache's page holds and eviction, and
// the Generator's chunked prefill, prefix reuse and log-probabilities against
// a Generator that does none of it (greedy tokens identical) and against
// log_softmax of the recomputed logits.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Generator.h"
#include "attn/runtime/Model.h"

#include "../TestDirectory.h"
#include "PrefixCache.h"
#include "decoder_window.h"
#include "llama_tiny_pages4.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace attn::runtime;

namespace {

/// A generated model with seeded random weights under `naming`.
std::unique_ptr<Model> loadRandom(const char *planJson,
                                  const attnc_kernel_entry *kernels,
                                  size_t count, WeightNaming naming,
                                  const std::string &name, uint64_t seed) {
  const auto *table = reinterpret_cast<const KernelEntry *>(kernels);
  ModelPlan plan;
  EXPECT_TRUE(parsePlan(planJson, table, count, plan));
  std::string path = attn::test::testDirectory() + "/serving_" + name + "_" +
                     std::to_string(seed) + ".safetensors";
  Status s = Model::writeRandomWeights(plan, naming, seed, path);
  EXPECT_TRUE(s) << s.message();
  std::unique_ptr<Model> model;
  s = Model::load(planJson, table, count, path, naming, model);
  EXPECT_TRUE(s) << s.message();
  return model;
}

std::unique_ptr<Model> loadLlamaTiny(uint64_t seed) {
  return loadRandom(llama_tiny_pages4_plan_json, llama_tiny_pages4_kernel_table,
                    LLAMA_TINY_PAGES4_KERNEL_TABLE_SIZE, WeightNaming::Llama,
                    "llama", seed);
}

/// decoder_window: two layers sliding over 5 keys, pages of 4 tokens, 40
/// positions.
std::unique_ptr<Model> loadWindowed(uint64_t seed) {
  return loadRandom(decoder_window_plan_json, decoder_window_kernel_table,
                    DECODER_WINDOW_KERNEL_TABLE_SIZE, WeightNaming::Bart,
                    "window", seed);
}

/// Logits [length][vocabulary] of the decoder over `tokens` with no cache.
std::vector<float> recompute(const Model &model,
                             const std::vector<int32_t> &tokens) {
  ExecutionContext context(model);
  std::vector<float> logits(tokens.size() * model.targetVocabulary());
  Status s = model.decodeWithoutCache(tokens.data(), int(tokens.size()),
                                      nullptr, 0, logits.data(), context);
  EXPECT_TRUE(s) << s.message();
  return logits;
}

double maxAbsDifference(const float *a, const float *b, int n) {
  double worst = 0;
  for (int i = 0; i < n; i++)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

std::vector<int32_t> tokensFrom(int seed, int count, int vocabulary) {
  std::vector<int32_t> tokens(count);
  for (int i = 0; i < count; i++)
    tokens[i] = (seed * 7 + i * 5 + i * i) % vocabulary;
  return tokens;
}

struct Finished {
  std::vector<int32_t> tokens;
  int cachedPrompt;
  PrefixCacheStats stats; ///< the generator's, at the end
};

/// Runs `prompts` (greedy, `maxNew` tokens each) through a generator made
/// with `options`, submitting request i after `arriveAfter[i]` steps.
std::vector<Finished> generate(const Model &model,
                               const GeneratorOptions &options,
                               const std::vector<std::vector<int32_t>> &prompts,
                               int maxNew, std::vector<int> arriveAfter = {}) {
  arriveAfter.resize(prompts.size(), 0);
  std::unique_ptr<Generator> generator;
  Status s = Generator::create(model, options, generator);
  EXPECT_TRUE(s) << s.message();
  std::vector<int> ids(prompts.size(), -1);
  size_t submitted = 0;
  for (int step = 0; submitted < prompts.size() || generator->running() > 0;
       step++) {
    for (size_t i = 0; i < prompts.size(); i++)
      if (ids[i] < 0 && arriveAfter[i] <= step &&
          generator->running() < generator->capacity()) {
        GenerationRequest request;
        request.prompt = prompts[i];
        request.maxNewTokens = maxNew;
        s = generator->submit(request, ids[i]);
        EXPECT_TRUE(s) << s.message();
        submitted++;
      }
    s = generator->step();
    EXPECT_TRUE(s) << s.message();
    if (!s)
      break;
  }
  std::vector<Finished> result;
  for (int id : ids)
    result.push_back({generator->tokens(id), generator->cachedPromptTokens(id),
                      generator->prefixCacheStats()});
  return result;
}

/// The model's self-attention cache, with room for `sequences`.
KvCache selfCache(const Model &model, int sequences) {
  KvCacheConfig config;
  EXPECT_TRUE(model.selfCacheConfig(sequences, config));
  KvCache cache;
  EXPECT_TRUE(KvCache::create(config, cache));
  return cache;
}

} // namespace

TEST(ModelAppend, ChunksBesideDecodeRowsMatchRecomputation) {
  auto model = loadLlamaTiny(21);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  KvCache cache = selfCache(*model, 2);
  SequenceId a, b;
  ASSERT_TRUE(cache.addSequence(a));
  ASSERT_TRUE(cache.addSequence(b));
  ExecutionContext context(*model);
  std::vector<int32_t> promptA = tokensFrom(1, 13, vocabulary);
  std::vector<int32_t> promptB = tokensFrom(2, 9, vocabulary);
  std::vector<float> logits(vocabulary);
  ASSERT_TRUE(model->prefill(promptB.data(), int(promptB.size()), cache, b,
                             logits.data(), context));
  // A's prompt in chunks of 5, 5 and 3, each beside one decode row of b;
  // the head on every row. Leading, a's chunk is attended by the prefill
  // kernels; after b's row (the second chunk), by the decode kernels.
  std::vector<int32_t> fedA, fedB = promptB;
  for (int start = 0; start < int(promptA.size()); start += 5) {
    const int n = std::min(5, int(promptA.size()) - start);
    const bool bFirst = start == 5;
    const int32_t next = (start + 3) % vocabulary;
    std::vector<SequenceId> sequences(n, a);
    std::vector<int32_t> tokens(promptA.begin() + start,
                                promptA.begin() + start + n);
    sequences.insert(bFirst ? sequences.begin() : sequences.end(), b);
    tokens.insert(bFirst ? tokens.begin() : tokens.end(), next);
    const int rowOfB = bFirst ? 0 : n, firstOfA = bFirst ? 1 : 0;
    std::vector<int32_t> heads(n + 1);
    for (int i = 0; i <= n; i++)
      heads[i] = i;
    std::vector<float> out(heads.size() * vocabulary);
    std::vector<int32_t> greedy(heads.size(), -2);
    Status s = model->append(sequences.data(), tokens.data(), n + 1, cache,
                             heads.data(), int(heads.size()), out.data(),
                             context, greedy.data());
    ASSERT_TRUE(s) << s.message();
    fedA.insert(fedA.end(), promptA.begin() + start,
                promptA.begin() + start + n);
    fedB.push_back(next);
    std::vector<float> referenceA = recompute(*model, fedA);
    std::vector<float> referenceB = recompute(*model, fedB);
    for (int i = 0; i < n; i++)
      EXPECT_LE(maxAbsDifference(&out[size_t(firstOfA + i) * vocabulary],
                                 &referenceA[size_t(start + i) * vocabulary],
                                 vocabulary),
                1e-5)
          << "a's row " << start + i;
    EXPECT_LE(maxAbsDifference(&out[size_t(rowOfB) * vocabulary],
                               &referenceB[(fedB.size() - 1) * vocabulary],
                               vocabulary),
              1e-5);
  }
  EXPECT_EQ(cache.length(a), int(promptA.size()));
  EXPECT_EQ(cache.length(b), int(promptB.size()) + 3);
  // Only the last row's logits: what a chunk that ends a prompt needs.
  int32_t last = 0, token = 4;
  ASSERT_TRUE(
      model->append(&a, &token, 1, cache, &last, 1, logits.data(), context));
  fedA.push_back(token);
  std::vector<float> reference = recompute(*model, fedA);
  EXPECT_LE(maxAbsDifference(logits.data(),
                             &reference[(fedA.size() - 1) * vocabulary],
                             vocabulary),
            1e-5);
  EXPECT_TRUE(cache.checkInvariants());
}

// A model whose layers slide over 5 keys: its cache keeps each sequence's
// window (pages released behind it), and still every way of feeding a
// prompt (prefill, chunks beside another sequence's decode rows, single
// steps) gives the logits of recomputing the prefix.
TEST(ModelAppend, SlidingWindowCacheKeepsTheWindowAndMatchesRecomputation) {
  auto model = loadWindowed(31);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  KvCacheConfig config;
  ASSERT_TRUE(model->selfCacheConfig(2, config, /*passRows=*/8));
  ASSERT_EQ(config.windows, (std::vector<int32_t>{5, 5}));
  // Two windows of 5 over pages of 4 (ceil(5/4) + 1 = 3 pages each) and
  // one 8-row chunk (2 pages): 8 of the 20 pages two 40-token sequences
  // would take.
  EXPECT_EQ(config.windowPages, 2 * 3 + 2);
  KvCache cache;
  ASSERT_TRUE(KvCache::create(config, cache));
  SequenceId a, b;
  ASSERT_TRUE(cache.addSequence(a));
  ASSERT_TRUE(cache.addSequence(b));
  ExecutionContext context(*model);
  std::vector<int32_t> fedA, fedB = tokensFrom(4, 11, vocabulary);
  std::vector<float> logits(2 * vocabulary);
  ASSERT_TRUE(model->prefill(fedB.data(), int(fedB.size()), cache, b,
                             logits.data(), context));
  std::vector<float> reference = recompute(*model, fedB);
  EXPECT_LE(maxAbsDifference(logits.data(),
                             &reference[(fedB.size() - 1) * vocabulary],
                             vocabulary),
            1e-5);
  // a's prompt in chunks of 8, 8 and 3 beside a decode row of b (leading:
  // a's rows attended by the prefill kernels, else by the decode kernels);
  // then both decode, one row each, until a reaches position 39.
  const std::vector<int32_t> chunks = {8, 8, 3};
  for (size_t step = 0; cache.length(a) < 40; step++) {
    const int n = step < chunks.size() ? chunks[step] : 1;
    const bool aLeads = step % 2 == 0;
    std::vector<SequenceId> sequences(n, a);
    std::vector<int32_t> tokens(n);
    for (int i = 0; i < n; i++)
      tokens[i] = int32_t((step * 5 + i * 3 + 1) % vocabulary);
    const int32_t next = int32_t((step + 3) % vocabulary);
    sequences.insert(aLeads ? sequences.end() : sequences.begin(), b);
    tokens.insert(aLeads ? tokens.end() : tokens.begin(), next);
    const int rowOfB = aLeads ? n : 0, firstOfA = aLeads ? 0 : 1;
    std::vector<int32_t> heads(n + 1);
    for (int i = 0; i <= n; i++)
      heads[i] = i;
    std::vector<float> out(heads.size() * vocabulary);
    Status s = model->append(sequences.data(), tokens.data(), n + 1, cache,
                             heads.data(), int(heads.size()), out.data(),
                             context);
    ASSERT_TRUE(s) << s.message();
    fedB.push_back(next);
    fedA.insert(fedA.end(), tokens.begin() + firstOfA,
                tokens.begin() + firstOfA + n);
    std::vector<float> referenceA = recompute(*model, fedA),
                       referenceB = recompute(*model, fedB);
    EXPECT_LE(maxAbsDifference(&out[size_t(rowOfB) * vocabulary],
                               &referenceB[(fedB.size() - 1) * vocabulary],
                               vocabulary),
              1e-5)
        << "b at " << fedB.size() - 1;
    for (int i = 0; i < n; i++)
      EXPECT_LE(maxAbsDifference(
                    &out[size_t(firstOfA + i) * vocabulary],
                    &referenceA[(fedA.size() - n + i) * vocabulary],
                    vocabulary),
                1e-5)
          << "a at " << fedA.size() - n + i;
    // Each sequence holds its window's 3 pages, and a its last chunk's.
    EXPECT_LE(cache.usedPages(0), 3 + 3 + 2);
    ASSERT_TRUE(cache.checkInvariants());
  }
  EXPECT_EQ(cache.length(b), 11 + 3 + 21);
  // A rollback into what the window released is refused, changing nothing.
  const int length = cache.length(b);
  EXPECT_FALSE(cache.truncate(b, 3));
  EXPECT_EQ(cache.length(b), length);
}

TEST(ModelAppend, BadRowsAreErrorsAndGrowNothing) {
  auto model = loadLlamaTiny(22);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  KvCache cache = selfCache(*model, 1);
  SequenceId a;
  ASSERT_TRUE(cache.addSequence(a));
  ExecutionContext context(*model);
  std::vector<float> logits(2 * vocabulary);
  SequenceId twice[2] = {a, a};
  int32_t tokens[2] = {1, 2}, outOfRange[2] = {1, vocabulary};
  int32_t descending[2] = {1, 0}, pastEnd = 2;
  EXPECT_FALSE(model->append(twice, outOfRange, 2, cache, nullptr, 0,
                             logits.data(), context));
  EXPECT_FALSE(model->append(twice, tokens, 2, cache, descending, 2,
                             logits.data(), context));
  EXPECT_FALSE(model->append(twice, tokens, 2, cache, &pastEnd, 1,
                             logits.data(), context));
  SequenceId unknown[2] = {a, 7};
  EXPECT_FALSE(model->append(unknown, tokens, 2, cache, nullptr, 0,
                             logits.data(), context));
  // Past the sequence's maximum length.
  std::vector<SequenceId> many(cache.config().maxSequenceLength + 1, a);
  std::vector<int32_t> manyTokens(many.size(), 1);
  Status s = model->append(many.data(), manyTokens.data(), int(many.size()),
                           cache, nullptr, 0, nullptr, context);
  EXPECT_EQ(s.code(), StatusCode::CapacityExceeded) << s.message();
  EXPECT_EQ(cache.length(a), 0);
  EXPECT_EQ(cache.usedPages(), 0);
  // An execution context made for another model.
  auto other = loadLlamaTiny(23);
  ASSERT_TRUE(other);
  ExecutionContext othersContext(*other);
  int32_t greedy = -1;
  for (Status refused :
       {model->append(twice, tokens, 2, cache, nullptr, 0, nullptr,
                      othersContext),
        model->prefill(tokens, 2, cache, a, logits.data(), othersContext,
                       &greedy),
        model->decodeStep(&a, nullptr, tokens, 1, cache, nullptr, logits.data(),
                          othersContext)}) {
    EXPECT_EQ(refused.code(), StatusCode::InvalidArgument);
    EXPECT_NE(refused.message().find("made for another model"),
              std::string::npos)
        << refused.message();
  }
  EXPECT_EQ(cache.length(a), 0);
  EXPECT_EQ(cache.usedPages(), 0);
  // No head: nothing but the cache is written.
  ASSERT_TRUE(
      model->append(twice, tokens, 2, cache, nullptr, 0, nullptr, context));
  EXPECT_EQ(cache.length(a), 2);
}

/// A one-layer cache of `pages` pages of 4 tokens.
KvCacheConfig smallCache(int pages, int maxSequenceLength) {
  KvCacheConfig config;
  config.numLayers = 1;
  config.numKvHeads = 1;
  config.headDim = 4;
  config.pageSize = 4;
  config.numPages = pages;
  config.maxSequenceLength = maxSequenceLength;
  return config;
}

TEST(PrefixCache, SharesFullPagesAndEvictsLeastRecentlyUsed) {
  KvCache cache;
  ASSERT_TRUE(KvCache::create(smallCache(6, 24), cache));
  PrefixCache prefixes(cache);
  std::vector<int32_t> first = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  SequenceId a;
  ASSERT_TRUE(cache.addSequence(a));
  ASSERT_TRUE(cache.extend(a, 10)); // pages 0, 1, 2
  prefixes.insert(a, first.data(), 10);
  EXPECT_EQ(prefixes.pages(), 2); // the third page is not full
  ASSERT_TRUE(cache.removeSequence(a));
  EXPECT_EQ(cache.freePages(), 4); // the cache still holds two
  ASSERT_TRUE(cache.checkInvariants());

  // A prompt sharing 6 tokens reuses the first page only; one of exactly
  // the two pages' 8 tokens reuses one (its last token is computed).
  std::vector<int32_t> shares6 = {1, 2, 3, 4, 5, 6, 0, 0, 0};
  EXPECT_EQ(prefixes.lookup(shares6.data(), 9).size(), 1u);
  EXPECT_EQ(prefixes.lookup(first.data(), 8).size(), 1u);
  EXPECT_EQ(prefixes.lookup(first.data(), 9).size(), 2u);
  // The same tokens at another position are another chain.
  std::vector<int32_t> shifted = {5, 6, 7, 8, 9};
  EXPECT_TRUE(prefixes.lookup(shifted.data(), 5).empty());

  SequenceId b;
  ASSERT_TRUE(cache.addSequence(b));
  std::vector<int32_t> pages = prefixes.lookup(first.data(), 10);
  ASSERT_TRUE(cache.adoptPages(b, pages.data(), int(pages.size())));
  EXPECT_EQ(cache.length(b), 8);
  ASSERT_TRUE(cache.extend(b, 2)); // its own third page
  EXPECT_EQ(cache.references(pages[0]), 2);
  ASSERT_TRUE(cache.checkInvariants());
  // Pages a sequence uses are not evicted; the pool has 3 free pages.
  EXPECT_FALSE(prefixes.makeRoom(4));
  EXPECT_EQ(prefixes.pages(), 2);
  ASSERT_TRUE(cache.removeSequence(b));
  // Now they go, the deeper page first.
  ASSERT_TRUE(prefixes.makeRoom(5));
  EXPECT_EQ(prefixes.pages(), 1);
  EXPECT_EQ(prefixes.lookup(first.data(), 10).size(), 1u);
  ASSERT_TRUE(prefixes.makeRoom(6));
  EXPECT_EQ(prefixes.pages(), 0);
  EXPECT_EQ(cache.freePages(), 6);
  ASSERT_TRUE(cache.checkInvariants());
  EXPECT_GT(prefixes.hitTokens(), 0);
  EXPECT_GT(prefixes.missTokens(), 0);
}

TEST(PrefixCache, AdoptedPagesAreRefusedUnlessInUse) {
  KvCache cache;
  ASSERT_TRUE(KvCache::create(smallCache(4, 8), cache));
  SequenceId a, b;
  ASSERT_TRUE(cache.addSequence(a));
  ASSERT_TRUE(cache.addSequence(b));
  int32_t freePage = 3, three[3] = {0, 0, 0};
  EXPECT_FALSE(cache.adoptPages(a, &freePage, 1)); // not in use
  ASSERT_TRUE(cache.extend(b, 4));
  EXPECT_FALSE(cache.adoptPages(a, three, 3)); // longer than a sequence
  ASSERT_TRUE(cache.extend(a, 1));
  int32_t page = (*cache.blockTable(b))[0];
  EXPECT_FALSE(cache.adoptPages(a, &page, 1)); // a is not empty
  ASSERT_TRUE(cache.checkInvariants());
}

TEST(GeneratorServing, PrefixCacheKeepsGreedyTokensUnderEviction) {
  auto model = loadLlamaTiny(23);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  KvCacheConfig config;
  ASSERT_TRUE(model->selfCacheConfig(1, config));
  const int page = config.pageSize;
  // A shared system prompt of 2.5 pages (it ends mid-page), then distinct
  // turns; distinct prompts in between press the pool into evicting.
  std::vector<int32_t> system = tokensFrom(3, page * 2 + page / 2, vocabulary);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; i++) {
    std::vector<int32_t> prompt =
        i % 3 == 2 ? tokensFrom(40 + i, page * 2 + 1, vocabulary) : system;
    std::vector<int32_t> turn = tokensFrom(10 + i, 3 + i % 4, vocabulary);
    prompt.insert(prompt.end(), turn.begin(), turn.end());
    prompts.push_back(prompt);
  }
  const int maxNew =
      std::min(6, config.maxSequenceLength - int(prompts[0].size()) - 8);
  ASSERT_GT(maxNew, 1);
  GeneratorOptions plain, cached;
  plain.maxSequences = cached.maxSequences = 2;
  cached.prefixCache = true;
  // One at a time (each finishes before the next arrives), then together.
  for (int spacing : {40, 0}) {
    std::vector<int> arrive;
    for (size_t i = 0; i < prompts.size(); i++)
      arrive.push_back(int(i) * spacing);
    auto expected = generate(*model, plain, prompts, maxNew, arrive);
    auto actual = generate(*model, cached, prompts, maxNew, arrive);
    int reused = 0;
    for (size_t i = 0; i < prompts.size(); i++) {
      EXPECT_EQ(actual[i].tokens, expected[i].tokens)
          << "prompt " << i << ", spacing " << spacing;
      EXPECT_EQ(expected[i].cachedPrompt, 0);
      EXPECT_EQ(actual[i].cachedPrompt % page, 0);
      reused += actual[i].cachedPrompt > 0;
    }
    EXPECT_GE(reused, spacing ? 4 : 1) << "spacing " << spacing;
    EXPECT_GT(actual[0].stats.evictedPages, 0) << "spacing " << spacing;
    EXPECT_GT(actual[0].stats.hitTokens, 0);
  }
}

TEST(GeneratorServing, ChunkedPrefillDecodesRunningStreamsEveryStep) {
  auto model = loadLlamaTiny(24);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  std::vector<std::vector<int32_t>> prompts = {
      tokensFrom(5, 4, vocabulary), tokensFrom(6, 7, vocabulary),
      tokensFrom(7, 23, vocabulary), tokensFrom(8, 17, vocabulary)};
  GeneratorOptions whole, chunked;
  whole.maxSequences = chunked.maxSequences = 4;
  chunked.prefillChunk = 5;
  std::vector<int> arrive = {0, 0, 3, 4};
  auto expected = generate(*model, whole, prompts, 8, arrive);
  auto actual = generate(*model, chunked, prompts, 8, arrive);
  for (size_t i = 0; i < prompts.size(); i++)
    EXPECT_EQ(actual[i].tokens, expected[i].tokens) << "prompt " << i;

  // While the long prompt prefills (23 tokens: 5 steps of at most 5), the
  // first request gets a token at every step.
  std::unique_ptr<Generator> generator;
  ASSERT_TRUE(Generator::create(*model, chunked, generator));
  int a, b, c;
  GenerationRequest request;
  request.maxNewTokens = 30;
  request.prompt = prompts[0];
  ASSERT_TRUE(generator->submit(request, a));
  ASSERT_TRUE(generator->step()); // a's prompt and first token
  request.prompt = prompts[2];
  ASSERT_TRUE(generator->submit(request, c));
  request.prompt = prompts[1];
  request.maxNewTokens = 12;
  ASSERT_TRUE(generator->submit(request, b));
  EXPECT_TRUE(generator->prefilling(c));
  int steps = 0;
  while (generator->prefilling(c)) {
    const size_t before = generator->tokens(a).size();
    ASSERT_TRUE(generator->step());
    EXPECT_EQ(generator->tokens(a).size(), before + 1);
    steps++;
  }
  // c arrived first: its 23 tokens take the budget of 5 steps (one prompt
  // at a time: b's follow).
  EXPECT_EQ(steps, (23 + 4) / 5);
  EXPECT_EQ(generator->tokens(c).size(), 1u);
  EXPECT_TRUE(generator->prefilling(b));

  // With nothing decoding, nothing waits: a prompt goes whole.
  std::unique_ptr<Generator> idle;
  ASSERT_TRUE(Generator::create(*model, chunked, idle));
  request.prompt = prompts[2];
  ASSERT_TRUE(idle->submit(request, c));
  ASSERT_TRUE(idle->step());
  EXPECT_EQ(idle->tokens(c).size(), 1u);
}

TEST(GeneratorServing, LogprobsAreTheRecomputedLogSoftmax) {
  auto model = loadLlamaTiny(25);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  for (int chunk : {0, 4}) {
    GeneratorOptions options;
    options.maxSequences = 2;
    options.prefillChunk = chunk;
    options.prefixCache = true;
    std::unique_ptr<Generator> generator;
    ASSERT_TRUE(Generator::create(*model, options, generator));
    GenerationRequest request;
    request.prompt = tokensFrom(9, 11, vocabulary);
    request.maxNewTokens = 5;
    request.logprobs = 3;
    request.promptLogprobs = true;
    int id;
    ASSERT_TRUE(generator->submit(request, id));
    ASSERT_TRUE(generator->run());
    std::vector<int32_t> all = request.prompt;
    const std::vector<int32_t> &generated = generator->tokens(id);
    all.insert(all.end(), generated.begin(), generated.end());
    std::vector<float> logits = recompute(*model, all);
    auto check = [&](const TokenLogprob &lp, size_t position) {
      // log_softmax of row position-1, in double.
      const float *row = &logits[(position - 1) * vocabulary];
      double largest = *std::max_element(row, row + vocabulary), total = 0;
      for (int v = 0; v < vocabulary; v++)
        total += std::exp(double(row[v]) - largest);
      auto logprob = [&](int32_t v) {
        return double(row[v]) - largest - std::log(total);
      };
      EXPECT_EQ(lp.token, all[position]);
      EXPECT_NEAR(lp.logprob, logprob(lp.token), 1e-4) << position;
      ASSERT_EQ(lp.top.size(), 3u);
      std::vector<int32_t> order(vocabulary);
      for (int v = 0; v < vocabulary; v++)
        order[v] = v;
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t x, int32_t y) { return row[x] > row[y]; });
      for (int k = 0; k < 3; k++) {
        EXPECT_EQ(lp.top[k].first, order[k]) << position;
        EXPECT_NEAR(lp.top[k].second, logprob(order[k]), 1e-4);
      }
    };
    const auto &prompt = generator->promptLogprobs(id);
    ASSERT_EQ(prompt.size(), request.prompt.size() - 1) << "chunk " << chunk;
    for (size_t i = 0; i < prompt.size(); i++)
      check(prompt[i], i + 1);
    const auto &tokens = generator->logprobs(id);
    ASSERT_EQ(tokens.size(), generated.size());
    for (size_t i = 0; i < tokens.size(); i++)
      check(tokens[i], request.prompt.size() + i);
    // Greedy: the chosen token is the most likely one.
    for (const TokenLogprob &lp : tokens)
      EXPECT_EQ(lp.token, lp.top[0].first);
  }
  std::unique_ptr<Generator> generator;
  ASSERT_TRUE(Generator::create(*model, 1, generator));
  GenerationRequest request;
  request.prompt = {1, 2};
  request.logprobs = kMaxLogprobs + 1;
  int id;
  EXPECT_FALSE(generator->submit(request, id));
}

// The Generator over a sliding-window model: whole prompts, chunked ones
// and a prefix cache (off: the cache keeps no whole prefixes) give the same
// greedy tokens, past the window.
TEST(GeneratorServing, SlidingWindowModelGivesTheSameTokensEveryWay) {
  auto model = loadWindowed(32);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  std::vector<std::vector<int32_t>> prompts = {
      tokensFrom(5, 4, vocabulary), tokensFrom(6, 13, vocabulary),
      tokensFrom(7, 9, vocabulary)};
  GeneratorOptions whole, chunked, prefixed;
  whole.maxSequences = chunked.maxSequences = prefixed.maxSequences = 3;
  chunked.prefillChunk = 3;
  prefixed.prefixCache = true;
  std::vector<int> arrive = {0, 2, 3};
  auto expected = generate(*model, whole, prompts, 20, arrive);
  for (const GeneratorOptions &options : {chunked, prefixed}) {
    auto actual = generate(*model, options, prompts, 20, arrive);
    for (size_t i = 0; i < prompts.size(); i++) {
      EXPECT_EQ(actual[i].tokens, expected[i].tokens) << "prompt " << i;
      EXPECT_EQ(actual[i].cachedPrompt, 0);
    }
  }
}
