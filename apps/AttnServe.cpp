//===- AttnServe.cpp - attn-serve: an OpenAI-compatible server ------------===//
//
//   attn-serve MODEL_DIR --port 8080
//
// Serves one Hugging Face model folder (compiled and loaded as attn-run
// does) over HTTP with the OpenAI API's shapes, so existing clients work:
//   POST /v1/completions       {"prompt": "...", "max_tokens": 32,
//                               "stream": true, "logprobs": 2, "echo": true}
//   POST /v1/chat/completions  {"messages": [{"role": "user", "content":
//                               "..."}], "logprobs": true, "top_logprobs": 2}
//   GET  /v1/models, /health (503 until the model is loaded and while
//        draining), /metrics (Prometheus' text format)
// Requests run concurrently, batched by one ServingEngine (chunked prefill,
// prefix cache); "stream": true answers with server-sent events, one per
// piece of text. SIGTERM (or SIGINT) drains: new requests get 503, running
// ones finish within --drain-seconds, then the process exits 0. HTTP is
// cpp-httplib (Debian libcpp-httplib-dev), JSON nlohmann-json.
//
//===----------------------------------------------------------------------===//

#include "ModelFolder.h"
#include "OpenAiRequest.h"
#include "ServingEngine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <ctime>
#include <functional>
#include <pthread.h>

using namespace attn::runtime;
using attn::apps::CompletionJob;
// Ordered: a chat template sees messages' keys as the client sent them.
using json = nlohmann::ordered_json;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory serveCategory("attn-serve options");
cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                              cl::desc("<model folder or .gguf file>"),
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
cl::opt<int> prefillChunk(
    "prefill-chunk", cl::init(attn::apps::ServingOptions().prefillChunk),
    cl::desc("Prompt tokens one decode step spends on a request still "
             "prefilling while others decode, so that long prompts do not "
             "stall running streams (0: whole prompts between steps)"),
    cl::cat(serveCategory));
cl::opt<bool> noPrefixCache(
    "no-prefix-cache",
    cl::desc("Compute every prompt whole instead of reusing the K/V pages "
             "of prefixes earlier requests computed"),
    cl::cat(serveCategory));
cl::opt<double> drainSeconds(
    "drain-seconds", cl::init(30),
    cl::desc("On SIGTERM: how long running requests may take to finish "
             "before they are cut off and the server exits"),
    cl::cat(serveCategory));
cl::opt<bool> noPackedWeights(
    "no-packed-weights",
    cl::desc("Lay the checkpoint out on every start instead of mapping the "
             "laid-out weights kept beside the library (which replicas "
             "share)"),
    cl::cat(serveCategory));

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

/// Where the server is in its life: /health's answer.
enum class Phase { Loading, Ready, Draining };

/// The shapes of OpenAI's two APIs: a completion's choice carries "text";
/// a chat completion's a "message", or in a stream a "delta".
struct Shapes {
  bool chat;
  const Tokenizer &tokenizer;
  const char *object() const {
    return chat ? "chat.completion" : "text_completion";
  }
  const char *chunkObject() const {
    return chat ? "chat.completion.chunk" : "text_completion";
  }
  std::string idPrefix() const { return chat ? "chatcmpl-" : "cmpl-"; }
  json choice(const std::string &text, const json &finishReason,
              const json &logprobs) const {
    if (chat)
      return {{"index", 0},
              {"message", {{"role", "assistant"}, {"content", text}}},
              {"logprobs", logprobs},
              {"finish_reason", finishReason}};
    return {{"text", text},
            {"index", 0},
            {"logprobs", logprobs},
            {"finish_reason", finishReason}};
  }
  /// One streamed piece; `first` carries the chat's role.
  json chunk(const std::string &text, const json &finishReason, bool first,
             const json &logprobs) const {
    if (!chat)
      return choice(text, finishReason, logprobs);
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!text.empty() || first)
      delta["content"] = text;
    return {{"index", 0},
            {"delta", delta},
            {"logprobs", logprobs},
            {"finish_reason", finishReason}};
  }

  std::string tokenText(int32_t id) const {
    std::string text;
    (void)tokenizer.decode({id}, text);
    return text;
  }
  /// Tokens' log-probabilities as the API shapes them (null: none asked
  /// for); `textOffset` counts the completion's characters so far.
  json logprobs(const std::vector<TokenLogprob> &tokens, bool asked,
                size_t &textOffset) const {
    if (!asked)
      return nullptr;
    auto number = [](float logprob) {
      return std::isnan(logprob) ? json() : json(logprob);
    };
    if (chat) { // {"content": [{"token", "logprob", "bytes", top_logprobs}]}
      auto entry = [&](int32_t id, float logprob) {
        std::string text = tokenText(id);
        return json{{"token", text},
                    {"logprob", number(logprob)},
                    {"bytes", std::vector<uint8_t>(text.begin(), text.end())}};
      };
      json content = json::array();
      for (const TokenLogprob &t : tokens) {
        json e = entry(t.token, t.logprob);
        e["top_logprobs"] = json::array();
        for (const auto &[id, logprob] : t.top)
          e["top_logprobs"].push_back(entry(id, logprob));
        content.push_back(e);
      }
      return {{"content", content}};
    }
    // {"tokens", "token_logprobs", "top_logprobs", "text_offset"}: arrays.
    json result = {{"tokens", json::array()},
                   {"token_logprobs", json::array()},
                   {"top_logprobs", json::array()},
                   {"text_offset", json::array()}};
    for (const TokenLogprob &t : tokens) {
      std::string text = tokenText(t.token);
      result["tokens"].push_back(text);
      result["token_logprobs"].push_back(number(t.logprob));
      json top = json::object();
      for (const auto &[id, logprob] : t.top)
        top[tokenText(id)] = logprob;
      result["top_logprobs"].push_back(std::isnan(t.logprob) ? json() : top);
      result["text_offset"].push_back(textOffset);
      textOffset += text.size();
    }
    return result;
  }
};

/// Set by the signal thread: the server should drain and exit.
std::mutex stopMutex;
std::condition_variable stopRequested;
bool stopping = false;

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
  if (prefillChunk < 0)
    return fail("--prefill-chunk must be at least 0");
  if (!(drainSeconds >= 0))
    return fail("--drain-seconds must be at least 0");

  // SIGINT and SIGTERM reach a thread of their own (a signal handler may
  // not call into the server), which asks main() to drain.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals] {
    int signal = 0;
    sigwait(&signals, &signal);
    std::lock_guard<std::mutex> lock(stopMutex);
    stopping = true;
    stopRequested.notify_all();
  }).detach();

  attn::apps::ServingMetrics metrics;
  attn::apps::ModelFolder folder;
  std::unique_ptr<attn::apps::ServingEngine> engine;
  // The HTTP threads read `engine` only once `phase` says Ready.
  std::atomic<Phase> phase{Phase::Loading};
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
  // Loading and draining: a load balancer's health check (and a
  // Kubernetes readiness probe) sends requests elsewhere.
  auto unavailable = [&](httplib::Response &res) {
    Phase now = phase.load();
    if (now == Phase::Ready)
      return false;
    res.set_header("Retry-After", "1");
    answerError(res, 503,
                now == Phase::Loading ? "the model is still loading"
                                      : "the server is shutting down",
                "", "server_unavailable");
    return true;
  };
  server.Get("/health", [&](const httplib::Request &, httplib::Response &res) {
    Phase now = phase.load();
    if (now != Phase::Ready) {
      res.status = 503;
      json health = {
          {"status", now == Phase::Loading ? "loading" : "draining"}};
      return res.set_content(health.dump(), "application/json");
    }
    json health = {{"status", "ok"},
                   {"running", engine->running()},
                   {"queued", engine->queued()},
                   {"cancelled", engine->cancelled()}};
    res.set_content(health.dump(), "application/json");
  });
  server.Get("/metrics", [&](const httplib::Request &, httplib::Response &res) {
    res.set_content(metrics.render(), "text/plain; version=0.0.4");
  });
  server.Get("/v1/models",
             [&](const httplib::Request &, httplib::Response &res) {
               json list = {{"object", "list"},
                            {"data", json::array({{{"id", name},
                                                   {"object", "model"},
                                                   {"created", created},
                                                   {"owned_by", "attnc"}}})}};
               res.set_content(list.dump(), "application/json");
             });
  // POST /v1/completions and /v1/chat/completions: one request each, its
  // text whole or as server-sent events.
  // Completion requests still answering (a stream until its last event):
  // the drain waits for them before it stops the HTTP server.
  std::atomic<int> answering{0};
  struct Answering {
    std::atomic<int> &count;
    explicit Answering(std::atomic<int> &count) : count(count) { count++; }
    ~Answering() { count--; }
  };
  auto complete = [&](const httplib::Request &req, httplib::Response &res,
                      bool chat) {
    auto answeringNow = std::make_shared<Answering>(answering);
    if (unavailable(res))
      return;
    Shapes shapes{chat, folder.tokenizer};
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded())
      return answerError(res, 400, "the request body is not valid JSON");
    auto job = std::make_shared<attn::apps::CompletionJob>();
    bool stream = false;
    std::string param;
    if (std::string why = attn::apps::readCompletion(
            body, folder.tokenizer, shapes.chat, *job, stream, param);
        !why.empty())
      return answerError(res, 400, why, param);
    json head = {{"id", shapes.idPrefix() + std::to_string(nextId++)},
                 {"object", stream ? shapes.chunkObject() : shapes.object()},
                 {"created", long(std::time(nullptr))},
                 {"model", name}};
    // Room for --parallel requests, and --max-queue waiting: beyond that
    // the client should come back later.
    if (engine->queued() >= maxQueue)
      return answerError(
          res, 503,
          "the server is busy: " + std::to_string(engine->queued()) +
              " requests are waiting; retry later",
          "", "server_busy");
    engine->submit(job);
    int promptTokens = int(job->prompt.size());
    auto usage = [job, promptTokens] {
      return json{{"prompt_tokens", promptTokens},
                  {"completion_tokens", job->completionTokens},
                  {"total_tokens", promptTokens + job->completionTokens}};
    };
    const bool logprobs = job->logprobs >= 0;
    if (!stream) {
      std::string text, piece;
      std::vector<TokenLogprob> tokens, some;
      while (job->next(piece, &some)) {
        text += piece;
        tokens.insert(tokens.end(), some.begin(), some.end());
      }
      if (!job->error.empty())
        return job->serverFault
                   ? answerError(res, 500, job->error, "", "server_error")
                   : answerError(res, 400, job->error);
      json answer = head;
      size_t offset = 0;
      answer["choices"] = json::array({shapes.choice(
          text, job->finishReason, shapes.logprobs(tokens, logprobs, offset))});
      answer["usage"] = usage();
      return res.set_content(answer.dump(), "application/json");
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, head, usage, shapes, logprobs,
         answeringNow](size_t, httplib::DataSink &sink) {
          auto send = [&](const json &event) {
            std::string line = "data: " + event.dump() + "\n\n";
            return sink.write(line.data(), line.size());
          };
          std::string piece;
          std::vector<TokenLogprob> tokens;
          size_t offset = 0;
          bool first = true;
          while (job->next(piece, &tokens)) {
            json event = head;
            event["choices"] = json::array({shapes.chunk(
                piece, nullptr, first,
                shapes.logprobs(tokens, logprobs, offset))});
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
                     {{"message", job->error},
                      {"type", job->serverFault ? "server_error"
                                                : "invalid_request_error"}}}};
          } else {
            last["choices"] = json::array(
                {shapes.chunk("", job->finishReason, first, nullptr)});
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
                complete(req, res, false);
              });
  server.Post("/v1/chat/completions",
              [&](const httplib::Request &req, httplib::Response &res) {
                complete(req, res, true);
              });

  // Listening first: /health says 503 while the model loads.
  int bound = port == 0 ? server.bind_to_any_port(host)
                        : (server.bind_to_port(host, port) ? int(port) : -1);
  if (bound < 0)
    return fail("cannot listen on " + host + ":" + std::to_string(port));
  std::thread http([&] { server.listen_after_bind(); });
  auto stopHttp = [&] {
    server.stop();
    http.join();
  };
  llvm::errs() << "attn-serve: " << name << " on http://" << host << ":"
               << bound << " (loading)\n";
  llvm::errs().flush();

  attn::apps::CompileOptions options;
  options.attnc = attncPath;
  options.cacheDir = cacheDir;
  options.target = target;
  options.packedWeights = !noPackedWeights;
  if (llvm::Error error = attn::apps::loadModelFolder(modelDir, options,
                                                      llvm::errs(), folder)) {
    stopHttp();
    return fail(llvm::toString(std::move(error)));
  }
  attn::apps::ServingOptions serving;
  serving.parallel = parallel;
  serving.prefillChunk = prefillChunk;
  serving.prefixCache = !noPrefixCache;
  serving.metrics = &metrics;
  if (Status s = attn::apps::ServingEngine::create(*folder.model,
                                                   folder.tokenizer, serving,
                                                   engine);
      !s) {
    stopHttp();
    return fail(s.message());
  }
  phase = Phase::Ready;
  llvm::errs() << "attn-serve: ready (POST /v1/completions, "
                  "/v1/chat/completions; GET /v1/models, /health, /metrics; "
               << parallel << " requests at once, prefill chunk "
               << prefillChunk << ", prefix cache "
               << (engine->prefixCaching() ? "on"
                   : noPrefixCache         ? "off"
                                   : "off: sliding-window layers keep only "
                                     "their window")
               << ")\n";
  llvm::errs().flush();

  {
    std::unique_lock<std::mutex> lock(stopMutex);
    stopRequested.wait(lock, [] { return stopping; });
  }
  // Drain: no new requests; the running and queued ones get
  // --drain-seconds to finish, then whatever remains fails.
  phase = Phase::Draining;
  llvm::errs() << "attn-serve: draining (" << engine->running()
               << " running, " << engine->queued() << " queued)\n";
  llvm::errs().flush();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(double(drainSeconds));
  while ((engine->running() > 0 || engine->queued() > 0) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int cut = engine->running() + engine->queued();
  engine->shutdown();
  // Stopping the HTTP server aborts streams: let the last events go out.
  const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (answering > 0 && std::chrono::steady_clock::now() < grace)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stopHttp();
  llvm::errs() << "attn-serve: stopped"
               << (cut ? " (" + std::to_string(cut) +
                             " requests cut off at the drain deadline)"
                       : std::string())
               << "\n";
  return 0;
}
