//===- AttnServe.cpp - attn-serve: an OpenAI-compatible server ------------===//
//
//   attn-serve MODEL_DIR --port 8080
//
// Serves one Hugging Face model folder (compiled and loaded as attn-run
// does) over HTTP with the OpenAI API's shapes, so existing clients work:
//   POST /v1/completions       {"prompt": "...", "max_tokens": 32, "stream": true}
//   POST /v1/chat/completions  {"messages": [{"role": "user", "content": "..."}]}
//   GET  /v1/models, GET /health
// Requests run concurrently, batched by one ServingEngine; "stream": true
// answers with server-sent events, one per piece of text. HTTP is
// cpp-httplib (Debian libcpp-httplib-dev), JSON nlohmann-json.
//
//===----------------------------------------------------------------------===//

#include "ModelFolder.h"
#include "ServingEngine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <csignal>
#include <ctime>
#include <pthread.h>

using namespace attn::runtime;
using attn::apps::CompletionJob;
// Ordered: a chat template sees messages' keys as the client sent them.
using json = nlohmann::ordered_json;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory serveCategory("attn-serve options");
cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                              cl::desc("<model folder>"),
                              cl::cat(serveCategory));
cl::opt<std::string> host("host", cl::init("127.0.0.1"),
                          cl::desc("Address to listen on"),
                          cl::cat(serveCategory));
cl::opt<int> port("port", cl::init(8080),
                  cl::desc("Port (0: any free one, printed at start)"),
                  cl::cat(serveCategory));
cl::opt<int> parallel("parallel", cl::init(4),
                      cl::desc("Requests decoded together at most; more "
                               "wait in a queue"),
                      cl::cat(serveCategory));
cl::opt<int> maxQueue("max-queue", cl::init(64),
                      cl::desc("Requests that may wait for room; more are "
                               "answered 503"),
                      cl::cat(serveCategory));
cl::opt<std::string> servedName("model-name",
                                cl::desc("The model's id in the API "
                                         "(default: the folder's name)"),
                                cl::cat(serveCategory));
cl::opt<std::string> cacheDir("cache-dir",
                              cl::desc("Where compiled libraries are kept"),
                              cl::cat(serveCategory));
cl::opt<std::string> attncPath("attnc", cl::desc("The attnc to compile with"),
                               cl::cat(serveCategory));
cl::opt<std::string> target("target", cl::init("host"),
                            cl::desc("attnc --target"), cl::cat(serveCategory));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-serve") << message << "\n";
  return 1;
}

/// An OpenAI-style error answer.
void answerError(httplib::Response &response, int status,
                 const std::string &message, const std::string &param = "",
                 const char *type = "invalid_request_error") {
  json body = {{"error",
                {{"message", message},
                 {"type", type},
                 {"param", param.empty() ? json() : json(param)},
                 {"code", json()}}}};
  response.status = status;
  response.set_content(body.dump(), "application/json");
}

using Field = std::function<const json *(const char *)>;

/// /v1/completions' "prompt": text, or token ids.
std::string readTextPrompt(const Field &field, const Tokenizer &tokenizer,
                           CompletionJob &job, std::string &param) {
  param = "prompt";
  const json *prompt = field("prompt");
  if (!prompt)
    return "'prompt' is required";
  const json &p = prompt->is_array() && prompt->size() == 1 &&
                          (*prompt)[0].is_string()
                      ? (*prompt)[0]
                      : *prompt;
  if (p.is_string()) {
    if (Status s = tokenizer.encode(p.get<std::string>(), job.prompt); !s)
      return "'prompt': " + s.message();
  } else if (p.is_array() && !p.empty() &&
             std::all_of(p.begin(), p.end(),
                         [](const json &v) { return v.is_number_integer(); })) {
    for (const json &id : p) {
      int64_t value = id.get<int64_t>();
      if (value < 0 || value >= tokenizer.vocabularySize())
        return "'prompt': token id " + std::to_string(value) +
               " is outside the vocabulary";
      job.prompt.push_back(int32_t(value));
    }
  } else {
    return "'prompt' must be a string, or an array of token ids (one prompt "
           "per request)";
  }

  return "";
}

/// /v1/chat/completions' "messages" (and "tools"), through the model's chat
/// template.
std::string readChatPrompt(const Field &field, const Tokenizer &tokenizer,
                           CompletionJob &job, std::string &param) {
  param = "messages";
  const json *messages = field("messages");
  if (!messages || !messages->is_array() || messages->empty() ||
      !std::all_of(messages->begin(), messages->end(), [](const json &m) {
        return m.is_object() && m.contains("role") && m["role"].is_string();
      }))
    return "'messages' must be a non-empty array of objects with a 'role'";
  json extra = json::object();
  if (const json *tools = field("tools"))
    extra["tools"] = *tools;
  std::string prompt;
  if (Status s = tokenizer.applyChatTemplate(
          messages->dump(), /*addGenerationPrompt=*/true, prompt,
          extra.empty() ? "" : extra.dump());
      !s)
    return s.message();
  // The template places BOS and the turn markers itself.
  if (Status s = tokenizer.encode(prompt, job.prompt, false); !s)
    return s.message();
  return "";
}

/// Reads an OpenAI completion or chat request into `job`; on a bad request
/// returns the message and sets `param` to the field at fault.
std::string readCompletion(const json &body, const Tokenizer &tokenizer,
                           bool chat, CompletionJob &job, bool &stream,
                           std::string &param) {
  if (!body.is_object())
    return "the request body must be a JSON object";
  Field field = [&](const char *key) -> const json * {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  // Options that change what is generated are honoured or refused.
  struct Unsupported {
    const char *key;
    bool (*isDefault)(const json &);
  };
  static const Unsupported kUnsupported[] = {
      {"n", [](const json &v) { return v == 1; }},
      {"best_of", [](const json &v) { return v == 1; }},
      {"echo", [](const json &v) { return v == false; }},
      {"logprobs", [](const json &) { return false; }},
      {"suffix", [](const json &v) { return v == ""; }},
      {"presence_penalty", [](const json &v) { return v == 0; }},
      {"frequency_penalty", [](const json &v) { return v == 0; }},
      {"logit_bias", [](const json &v) { return v.empty(); }},
  };
  for (const Unsupported &option : kUnsupported)
    if (const json *value = field(option.key); value && !option.isDefault(*value)) {
      param = option.key;
      return std::string("'") + option.key + "' is not supported by this "
             "server; leave it out or at its default";
    }

  if (std::string why = chat ? readChatPrompt(field, tokenizer, job, param)
                              : readTextPrompt(field, tokenizer, job, param);
      !why.empty())
    return why;
  if (job.prompt.empty()) // a model needs a token to start from
    job.prompt.push_back(tokenizer.bosId() >= 0 ? tokenizer.bosId() : 0);

  auto number = [&](const char *key, double low, double high, bool lowOpen,
                    double &out) -> std::string {
    const json *value = field(key);
    if (!value)
      return "";
    param = key;
    if (!value->is_number() || value->get<double>() > high ||
        (lowOpen ? value->get<double>() <= low : value->get<double>() < low))
      return std::string("'") + key + "' must be a number in " +
             (lowOpen ? "(" : "[") + std::to_string(low) + ", " +
             std::to_string(high) + "]";
    out = value->get<double>();
    return "";
  };
  double maxTokens = 16, temperature = 1.0, topP = 1.0, topK = 0, seed = 0;
  for (std::string why :
       {number("max_tokens", 1, 1 << 20, false, maxTokens),
        number("max_completion_tokens", 1, 1 << 20, false, maxTokens),
        number("temperature", 0, 2, false, temperature),
        number("top_p", 0, 1, true, topP), number("top_k", 0, 1 << 20, false, topK),
        number("seed", 0, 9007199254740991.0, false, seed)})
    if (!why.empty())
      return why;
  job.maxTokens = int(maxTokens);
  job.sampling.temperature = float(temperature);
  job.sampling.topP = float(topP);
  job.sampling.topK = int(topK);
  job.sampling.seed = uint64_t(seed);

  param = "stop";
  if (const json *stop = field("stop")) {
    json list = stop->is_array() ? *stop : json::array({*stop});
    if (list.size() > 4 ||
        !std::all_of(list.begin(), list.end(),
                     [](const json &v) { return v.is_string(); }))
      return "'stop' must be a string or up to 4 strings";
    for (const json &s : list)
      job.stops.push_back(s.get<std::string>());
  }
  param = "stream";
  stream = false;
  if (const json *value = field("stream")) {
    if (!value->is_boolean())
      return "'stream' must be true or false";
    stream = value->get<bool>();
  }
  param.clear();
  return "";
}

/// The shapes of OpenAI's two APIs: a completion's choice carries "text";
/// a chat completion's a "message", or in a stream a "delta".
struct Shapes {
  bool chat;
  const char *object() const { return chat ? "chat.completion" : "text_completion"; }
  const char *chunkObject() const {
    return chat ? "chat.completion.chunk" : "text_completion";
  }
  std::string idPrefix() const { return chat ? "chatcmpl-" : "cmpl-"; }
  json choice(const std::string &text, const json &finishReason) const {
    if (chat)
      return {{"index", 0},
              {"message", {{"role", "assistant"}, {"content", text}}},
              {"logprobs", nullptr},
              {"finish_reason", finishReason}};
    return {{"text", text},
            {"index", 0},
            {"logprobs", nullptr},
            {"finish_reason", finishReason}};
  }
  /// One streamed piece; `first` carries the chat's role.
  json chunk(const std::string &text, const json &finishReason,
             bool first) const {
    if (!chat)
      return choice(text, finishReason);
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!text.empty() || first)
      delta["content"] = text;
    return {{"index", 0},
            {"delta", delta},
            {"logprobs", nullptr},
            {"finish_reason", finishReason}};
  }
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions({&serveCategory});
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-serve: an OpenAI-compatible server for a Hugging Face model "
      "folder, its kernels compiled by attnc for this machine\n");
  if (parallel < 1)
    return fail("--parallel must be at least 1");

  // SIGINT and SIGTERM stop the server from a thread of their own (a
  // signal handler may not call into it).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  attn::apps::CompileOptions options;
  options.attnc = attncPath;
  options.cacheDir = cacheDir;
  options.target = target;
  attn::apps::ModelFolder folder;
  if (llvm::Error error =
          attn::apps::loadModelFolder(modelDir, options, llvm::errs(), folder))
    return fail(llvm::toString(std::move(error)));
  std::unique_ptr<attn::apps::ServingEngine> engine;
  if (Status s = attn::apps::ServingEngine::create(
          *folder.model, folder.tokenizer, parallel, engine);
      !s)
    return fail(s.message());
  std::string name =
      servedName.empty() ? attn::apps::folderName(modelDir) : servedName;
  const long created = long(std::time(nullptr));
  std::atomic<long> nextId{0};

  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(32); };
  server.set_payload_max_length(8 << 20);
  // Streams write one small event per token: without TCP_NODELAY, Nagle's
  // algorithm holds each until the previous one is acknowledged.
  server.set_tcp_nodelay(true);
  server.Get("/health", [&](const httplib::Request &, httplib::Response &res) {
    json health = {{"status", "ok"},
                   {"running", engine->running()},
                   {"queued", engine->queued()}};
    res.set_content(health.dump(), "application/json");
  });
  server.Get("/v1/models", [&](const httplib::Request &,
                               httplib::Response &res) {
    json list = {{"object", "list"},
                 {"data", json::array({{{"id", name},
                                        {"object", "model"},
                                        {"created", created},
                                        {"owned_by", "attnc"}}})}};
    res.set_content(list.dump(), "application/json");
  });
  // POST /v1/completions and /v1/chat/completions: one request each, its
  // text whole or as server-sent events.
  auto complete = [&](const httplib::Request &req, httplib::Response &res,
                      Shapes shapes) {
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded())
      return answerError(res, 400, "the request body is not valid JSON");
    auto job = std::make_shared<attn::apps::CompletionJob>();
    bool stream = false;
    std::string param;
    if (std::string why = readCompletion(body, folder.tokenizer, shapes.chat,
                                         *job, stream, param);
        !why.empty())
      return answerError(res, 400, why, param);
    json head = {{"id", shapes.idPrefix() + std::to_string(nextId++)},
                 {"object", stream ? shapes.chunkObject() : shapes.object()},
                 {"created", long(std::time(nullptr))},
                 {"model", name}};
    // Room for --parallel requests, and --max-queue waiting: beyond that
    // the client should come back later.
    if (engine->queued() >= maxQueue)
      return answerError(res, 503,
                         "the server is busy: " +
                             std::to_string(engine->queued()) +
                             " requests are waiting; retry later",
                         "", "server_busy");
    engine->submit(job);
    int promptTokens = int(job->prompt.size());
    auto usage = [job, promptTokens] {
      return json{{"prompt_tokens", promptTokens},
                  {"completion_tokens", job->completionTokens},
                  {"total_tokens", promptTokens + job->completionTokens}};
    };
    if (!stream) {
      std::string text, piece;
      while (job->next(piece))
        text += piece;
      if (!job->error.empty())
        return answerError(res, 400, job->error);
      json answer = head;
      answer["choices"] =
          json::array({shapes.choice(text, job->finishReason)});
      answer["usage"] = usage();
      return res.set_content(answer.dump(), "application/json");
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, head, usage, shapes](size_t, httplib::DataSink &sink) {
          auto send = [&](const json &event) {
            std::string line = "data: " + event.dump() + "\n\n";
            return sink.write(line.data(), line.size());
          };
          std::string piece;
          bool first = true;
          while (job->next(piece)) {
            json event = head;
            event["choices"] =
                json::array({shapes.chunk(piece, nullptr, first)});
            first = false;
            if (!send(event)) { // the client went away
              job->cancel();
              while (job->next(piece)) {
              }
              return false;
            }
          }
          json last = head;
          if (!job->error.empty()) {
            last = {{"error",
                     {{"message", job->error}, {"type", "server_error"}}}};
          } else {
            last["choices"] =
                json::array({shapes.chunk("", job->finishReason, first)});
            last["usage"] = usage();
          }
          send(last);
          static const char kDone[] = "data: [DONE]\n\n";
          sink.write(kDone, sizeof kDone - 1);
          sink.done();
          return true;
        });
  };
  server.Post("/v1/completions",
              [&](const httplib::Request &req, httplib::Response &res) {
                complete(req, res, Shapes{false});
              });
  server.Post("/v1/chat/completions",
              [&](const httplib::Request &req, httplib::Response &res) {
                complete(req, res, Shapes{true});
              });

  int bound = port == 0 ? server.bind_to_any_port(host)
                        : (server.bind_to_port(host, port) ? int(port) : -1);
  if (bound < 0)
    return fail("cannot listen on " + host + ":" + std::to_string(port));
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    server.stop();
  });
  llvm::errs() << "attn-serve: " << name << " on http://" << host << ":"
               << bound
               << " (POST /v1/completions, /v1/chat/completions; GET "
                  "/v1/models, /health; "
               << parallel << " requests at once)\n";
  llvm::errs().flush();
  server.listen_after_bind();
  // Stopped by a signal: the stopper thread has returned.
  stopper.join();
  return 0;
}
