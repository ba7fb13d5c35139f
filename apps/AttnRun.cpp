//===- AttnRun.cpp - attn-run: text in, text out, from a model folder -----===//
//
//   attn-run MODEL_DIR --prompt "Once upon a time"
//
// MODEL_DIR is a Hugging Face model folder (config.json, *.safetensors,
// tokenizer.json) or a GGUF file (the model, weights and tokenizer in one).
// Its config is compiled by attnc for this machine on the
// first run (ModelCache), the library loaded with dlopen (ModelLibrary),
// the weights and tokenizer read as published; the prompt is prefilled,
// then tokens are decoded and their text streamed as it is complete. At the
// end: prompt and decode speed, on stderr.
//
//===----------------------------------------------------------------------===//

#include "ModelFolder.h"
#include "StopText.h"

#include "attn/runtime/Generator.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace attn::runtime;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory runCategory("attn-run options");
cl::OptionCategory compileCategory("compiling (part of the cache key)");

cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                              cl::desc("<model folder or .gguf file>"), cl::cat(runCategory));
cl::opt<std::string> prompt("prompt", cl::desc("The text to continue"),
                            cl::cat(runCategory));
cl::opt<int> maxNewTokens("max-new-tokens", cl::init(128),
                          cl::desc("Tokens to generate at most"),
                          cl::cat(runCategory));
cl::opt<float> temperature("temperature", cl::init(0.8f),
                           cl::desc("0: greedy"), cl::cat(runCategory));
cl::opt<int> topK("top-k", cl::init(40), cl::desc("0: no limit"),
                  cl::cat(runCategory));
cl::opt<float> topP("top-p", cl::init(0.95f), cl::desc("Nucleus mass"),
                    cl::cat(runCategory));
cl::opt<uint64_t> seed("seed", cl::init(0), cl::desc("Sampling seed"),
                       cl::cat(runCategory));
cl::list<std::string> stops("stop",
                            cl::desc("Stop before this text (repeatable)"),
                            cl::cat(runCategory));
cl::opt<bool> chat("chat",
                   cl::desc("The prompt is a user message: format it with the "
                            "model's chat template (tokenizer_config.json)"),
                   cl::cat(runCategory));
cl::opt<std::string> systemPrompt("system",
                                  cl::desc("With --chat: a system message "
                                           "first"),
                                  cl::cat(runCategory));
cl::opt<bool> noSpecial("no-special-tokens",
                        cl::desc("Encode the prompt without BOS/EOS"),
                        cl::cat(runCategory));
cl::opt<bool> printIds("print-ids",
                       cl::desc("Print the prompt's and the generated ids as "
                                "JSON on stderr at the end"),
                       cl::cat(runCategory));
cl::opt<bool> compileOnly("compile-only",
                          cl::desc("Compile (or find) the library, print its "
                                   "path and exit"),
                          cl::cat(runCategory));
cl::opt<std::string> cacheDir("cache-dir",
                              cl::desc("Where compiled libraries are kept "
                                       "(default $ATTNC_CACHE_DIR, "
                                       "$XDG_CACHE_HOME/attnc, ~/.cache/attnc)"),
                              cl::cat(compileCategory));
cl::opt<std::string> attncPath("attnc", cl::desc("The attnc to compile with"),
                               cl::cat(compileCategory));
cl::opt<std::string> target("target", cl::init("host"),
                            cl::desc("attnc --target"),
                            cl::cat(compileCategory));
cl::opt<std::string> kvDtype("kv-dtype", cl::desc("attnc --kv-dtype"),
                             cl::cat(compileCategory));
cl::opt<std::string> weightDtype("weight-dtype",
                                 cl::desc("attnc --weight-dtype"),
                                 cl::cat(compileCategory));
cl::opt<int> weightGroup("weight-group", cl::desc("attnc --weight-group"),
                         cl::cat(compileCategory));
cl::opt<int> maxLength("max-length", cl::desc("attnc --max-length"),
                       cl::cat(compileCategory));
cl::opt<bool> noPackedWeights(
    "no-packed-weights",
    cl::desc("Lay the checkpoint out on every start instead of keeping the "
             "laid-out weights beside the library and mapping them"),
    cl::cat(compileCategory));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-run") << message << "\n";
  return 1;
}

std::string joinIds(const std::vector<int32_t> &ids) {
  std::string text = "[";
  for (size_t i = 0; i < ids.size(); i++)
    text += (i ? "," : "") + std::to_string(ids[i]);
  return text + "]";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions({&runCategory, &compileCategory});
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-run: generate text with a Hugging Face model folder, its kernels "
      "compiled by attnc for this machine\n\n"
      "  attn-run MODEL_DIR --prompt \"Once upon a time\"\n");

  attn::apps::CompileOptions options;
  options.attnc = attncPath;
  options.cacheDir = cacheDir;
  options.target = target;
  options.packedWeights = !noPackedWeights;
  if (!kvDtype.empty())
    options.attncArgs.push_back("--kv-dtype=" + kvDtype);
  if (!weightDtype.empty())
    options.attncArgs.push_back("--weight-dtype=" + weightDtype);
  if (weightGroup.getNumOccurrences())
    options.attncArgs.push_back("--weight-group=" +
                                std::to_string(weightGroup));
  if (maxLength > 0)
    options.attncArgs.push_back("--max-length=" + std::to_string(maxLength));
  if (compileOnly) {
    bool compiled = false;
    llvm::Expected<std::string> path =
        attn::apps::findOrCompile(modelDir, options, llvm::errs(), compiled);
    if (!path)
      return fail(llvm::toString(path.takeError()));
    llvm::outs() << *path << "\n";
    return 0;
  }
  attn::apps::ModelFolder folder;
  if (llvm::Error error =
          attn::apps::loadModelFolder(modelDir, options, llvm::errs(), folder))
    return fail(llvm::toString(std::move(error)));
  const Tokenizer &tokenizer = folder.tokenizer;

  GenerationRequest request;
  std::string text = prompt;
  bool addSpecial = !noSpecial;
  if (chat) {
    llvm::json::Array messages;
    if (!systemPrompt.empty())
      messages.push_back(
          llvm::json::Object{{"role", "system"}, {"content", systemPrompt}});
    messages.push_back(llvm::json::Object{{"role", "user"}, {"content", prompt}});
    std::string messagesJson;
    llvm::raw_string_ostream(messagesJson)
        << llvm::json::Value(std::move(messages));
    if (Status s = tokenizer.applyChatTemplate(messagesJson, true, text); !s)
      return fail(s.message());
    addSpecial = false; // the template places BOS and the turn markers
  }
  if (Status s = tokenizer.encode(text, request.prompt, addSpecial); !s)
    return fail("the prompt: " + s.message());
  if (request.prompt.empty()) // a model needs a token to start from
    request.prompt.push_back(tokenizer.bosId() >= 0 ? tokenizer.bosId() : 0);
  request.maxNewTokens = maxNewTokens;
  request.stopTokens = tokenizer.eosIds();
  request.sampling.temperature = temperature;
  request.sampling.topK = topK;
  request.sampling.topP = topP;
  request.sampling.seed = seed;
  TextStream stream(tokenizer);
  attn::apps::StopText stopText(stops);
  auto print = [](const std::string &text) {
    llvm::outs() << text;
    llvm::outs().flush();
  };
  std::string piece;
  Status streamStatus;
  request.onToken = [&](int32_t token) {
    if (!(streamStatus = stream.push(token, piece)))
      return false;
    bool stopped = false;
    print(stopText.add(piece, stopped));
    return !stopped;
  };

  std::unique_ptr<Generator> generator;
  if (Status s = Generator::create(*folder.model, 1, generator); !s)
    return fail(s.message());
  auto prefillStart = std::chrono::steady_clock::now();
  int id = 0;
  if (Status s = generator->submit(request, id); !s)
    return fail(s.message());
  auto decodeStart = std::chrono::steady_clock::now();
  if (Status s = generator->run(); !s)
    return fail(s.message());
  auto end = std::chrono::steady_clock::now();
  if (!streamStatus)
    return fail(streamStatus.message());
  if (generator->finishReason(id) != FinishReason::Cancelled) {
    bool stopped = false;
    print(stopText.add(stream.finish(), stopped));
    if (!stopped)
      print(stopText.flush());
  }
  print("\n");

  const std::vector<int32_t> &generated = generator->tokens(id);
  double prefill =
      std::chrono::duration<double>(decodeStart - prefillStart).count();
  double decode = std::chrono::duration<double>(end - decodeStart).count();
  // submit() prefilled the prompt and sampled the first token; run() made
  // the rest, one decode step each.
  size_t steps = generated.empty() ? 0 : generated.size() - 1;
  const char *why[] = {"running", "end of sequence", "max new tokens",
                       "stop string", "cache full"};
  llvm::errs() << llvm::format(
      "attn-run: loaded in %.2f s; prompt %zu tokens in %.3f s (%.1f tok/s); "
      "%zu more tokens in %.3f s (%.1f tok/s); stopped: %s\n",
      folder.loadSeconds, request.prompt.size(), prefill,
      request.prompt.size() / std::max(prefill, 1e-9), steps, decode,
      steps / std::max(decode, 1e-9),
      why[int(generator->finishReason(id))]);
  if (printIds)
    llvm::errs() << "{\"prompt\": " << joinIds(request.prompt)
                 << ", \"generated\": " << joinIds(generated) << "}\n";
  return 0;
}
