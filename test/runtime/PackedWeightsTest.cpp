//===- PackedWeightsTest.cpp - laid-out weights kept in a file, mapped ----===//
//
// A model loaded with LoadOptions::packedWeights writes the file once and
// maps it on the next load; the mapped model must compute bitwise what the
// laid-out one does, in every weight dtype. A file that is stale (another
// checkpoint or plan), truncated, corrupt or unwritable never crashes a
// load and is never used: the checkpoint is laid out again and the file
// replaced.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Model.h"
#include "attn/runtime/ModelLibrary.h"

#include "gpt2_tiny.h"
#include "llama_tiny.h"
#include "ref_llama.h"
#include "ref_llama_int4.h"
#include "ref_llama_int8.h"
#include "ref_llama_int8g32.h"
#include "ref_llama_gguf_q4_1.h"

#include "TestDirectory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace attn::runtime;

namespace {

struct Library {
  const char *name;
  const attnc_model_library *descriptor;
};

void PrintTo(const Library &library, std::ostream *os) { *os << library.name; }

const Library kLibraries[] = {
    {"f32", &llama_tiny_library},
    {"f32_conv1d", &gpt2_tiny_library},
    {"bf16", &ref_llama_library},
    {"int8", &ref_llama_int8_library},
    {"int8_group32", &ref_llama_int8g32_library},
    {"int4_group32", &ref_llama_int4_library},
    // int4 with a minimum per group (GGUF's Q4_1 and Q4_K), here quantized
    // from the bf16 checkpoint.
    {"int4_group32_mins", &ref_llama_gguf_q4_1_library},
};

std::shared_ptr<const ModelLibrary> linked(const attnc_model_library &d) {
  std::shared_ptr<const ModelLibrary> library;
  Status s = ModelLibrary::linked(d, library);
  EXPECT_TRUE(s) << s.message();
  return library;
}

/// Random weights for `library` in `dir`/model.safetensors (bf16 as stored).
std::string writeWeights(const ModelLibrary &library, const std::string &dir,
                         uint64_t seed) {
  ModelPlan plan;
  const attnc_model_library &d = library.descriptor();
  EXPECT_TRUE(parsePlan(d.plan_json, d.kernels, d.kernel_count, plan));
  WeightNaming naming;
  EXPECT_TRUE(Model::namingOf(plan, naming));
  const std::string path = dir + "/model.safetensors";
  Status s = Model::writeRandomWeights(plan, naming, seed, path,
                                       TensorType::BF16);
  EXPECT_TRUE(s) << s.message();
  return path;
}

std::unique_ptr<Model> load(const attnc_model_library &d,
                            const std::string &weights,
                            const std::string &packed) {
  std::unique_ptr<Model> model;
  Status s = Model::load(linked(d), weights, model, {.packedWeights = packed});
  EXPECT_TRUE(s) << s.message();
  return model;
}

/// The logits of a fixed 6-token prefix, every position.
std::vector<float> logits(const Model &model) {
  const std::vector<int32_t> tokens = {1, 7, 3, 11, 2, 5};
  std::vector<float> out(tokens.size() * size_t(model.targetVocabulary()));
  ExecutionContext context(model);
  Status s = model.decodeWithoutCache(tokens.data(), int(tokens.size()),
                                      nullptr, 0, out.data(), context);
  EXPECT_TRUE(s) << s.message();
  return out;
}

bool startsWith(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

void overwrite(const std::string &path, uint64_t offset, char byte) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(std::streamoff(offset));
  file.put(byte);
}

class PackedWeightsTest : public testing::TestWithParam<Library> {};

// Written once, mapped after: the same logits to the bit.
TEST_P(PackedWeightsTest, MappedWeightsComputeWhatLaidOutOnesDo) {
  const attnc_model_library &d = *GetParam().descriptor;
  const std::string dir = attn::test::freshDirectory(GetParam().name);
  const std::string weights = writeWeights(*linked(d), dir, 5);
  const std::string packed = dir + "/weights.attnpack";

  std::unique_ptr<Model> laidOut = load(d, weights, packed);
  ASSERT_TRUE(laidOut);
  EXPECT_EQ(laidOut->weightSource(),
            "laid out from '" + weights +
                "' (packed weights: none yet; written to '" + packed + "')");
  std::unique_ptr<Model> mapped = load(d, weights, packed);
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->weightSource(), "mapped from '" + packed + "'");
  std::unique_ptr<Model> plain = load(d, weights, "");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->weightSource(), "laid out from '" + weights + "'");

  const std::vector<float> expected = logits(*plain);
  EXPECT_EQ(logits(*laidOut), expected);
  EXPECT_EQ(logits(*mapped), expected);
  // The mapping outlives a replaced file: a reader keeps what it mapped.
  std::filesystem::remove(packed);
  EXPECT_EQ(logits(*mapped), expected);
}

INSTANTIATE_TEST_SUITE_P(EveryWeightDType, PackedWeightsTest,
                         testing::ValuesIn(kLibraries),
                         [](const auto &info) { return info.param.name; });

/// Loads `packed` after `damage`: the weights must be laid out again (the
/// source naming why), the logits right, and the file rewritten so that the
/// next load maps it.
void expectRebuilt(const std::string &what, const attnc_model_library &d,
                   const std::string &weights, const std::string &packed,
                   const std::string &why,
                   const std::vector<float> &expected) {
  SCOPED_TRACE(what);
  std::unique_ptr<Model> model = load(d, weights, packed);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->weightSource(), "laid out from '" + weights +
                                       "' (packed weights: " + why +
                                       "; written to '" + packed + "')");
  EXPECT_EQ(logits(*model), expected);
  std::unique_ptr<Model> again = load(d, weights, packed);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->weightSource(), "mapped from '" + packed + "'");
  EXPECT_EQ(logits(*again), expected);
}

TEST(PackedWeightsFileTest, DamagedFilesAreDetectedAndRebuilt) {
  const attnc_model_library &d = ref_llama_int4_library;
  const std::string dir = attn::test::freshDirectory("damaged");
  const std::string weights = writeWeights(*linked(d), dir, 9);
  const std::string packed = dir + "/weights.attnpack";
  const std::vector<float> expected = logits(*load(d, weights, ""));
  ASSERT_TRUE(load(d, weights, packed));
  const uint64_t size = std::filesystem::file_size(packed);
  const std::string corrupt = "packed weights '" + packed + "' are corrupt: ";

  std::filesystem::resize_file(packed, size / 2);
  expectRebuilt("truncated", d, weights, packed,
                corrupt + std::to_string(size / 2) + " bytes where " +
                    std::to_string(size) + " were written",
                expected);
  std::filesystem::resize_file(packed, 20);
  expectRebuilt("shorter than its header", d, weights, packed,
                corrupt + "shorter than a header, or not mappable", expected);
  overwrite(packed, 13, 'x'); // inside the version field
  expectRebuilt("header", d, weights, packed,
                corrupt + "not a packed-weights header", expected);
  // The last byte: the end of the last array (the output head's scales).
  overwrite(packed, size - 1, 'x');
  {
    std::unique_ptr<Model> model = load(d, weights, packed);
    ASSERT_TRUE(model);
    EXPECT_TRUE(startsWith(model->weightSource(),
                           "laid out from '" + weights +
                               "' (packed weights: " + corrupt +
                               "the checksum of the array at byte "))
        << model->weightSource();
    EXPECT_EQ(logits(*model), expected);
  }
  overwrite(packed, 64, 'x'); // the table, after the 56-byte header
  expectRebuilt("table", d, weights, packed,
                corrupt + "its table's checksum disagrees", expected);
  { std::ofstream(packed, std::ios::trunc) << std::string(100, 'z'); }
  expectRebuilt("not a packed-weights file", d, weights, packed,
                corrupt + "not a packed-weights header", expected);
}

// Another checkpoint (rewritten in place) or another plan at the same path:
// stale, never read.
TEST(PackedWeightsFileTest, StaleFilesAreReplaced) {
  const std::string dir = attn::test::freshDirectory("stale");
  const std::string packed = dir + "/weights.attnpack";
  const std::string weights =
      writeWeights(*linked(ref_llama_int4_library), dir, 1);
  ASSERT_TRUE(load(ref_llama_int4_library, weights, packed));
  const std::string stale =
      "'" + packed +
      "' holds weights for another checkpoint, plan or runtime (stale)";

  // Same shapes, so the same size and header: only the time and the data
  // differ, as when a checkpoint is retrained in place.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  writeWeights(*linked(ref_llama_int4_library), dir, 2);
  expectRebuilt("checkpoint", ref_llama_int4_library, weights, packed, stale,
                logits(*load(ref_llama_int4_library, weights, "")));
  expectRebuilt("plan", ref_llama_int8_library, weights, packed, stale,
                logits(*load(ref_llama_int8_library, weights, "")));
}

// A file that cannot be written costs the load nothing but the time.
TEST(PackedWeightsFileTest, UnwritableFileLeavesTheLoadWhole) {
  const std::string dir = attn::test::freshDirectory("unwritable");
  const std::string weights = writeWeights(*linked(llama_tiny_library), dir, 3);
  const std::string packed = dir + "/missing/weights.attnpack";
  std::unique_ptr<Model> model = load(llama_tiny_library, weights, packed);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->weightSource(),
            "laid out from '" + weights + "' (packed weights: none yet; " +
                "cannot write '" + packed + "': No such file or directory)");
  EXPECT_EQ(logits(*model), logits(*load(llama_tiny_library, weights, "")));
  EXPECT_FALSE(std::filesystem::exists(dir + "/missing"));
}

} // namespace
