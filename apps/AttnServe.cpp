//===- AttnServe.cpp - attn-serve: an OpenAI-compatible server ------------===//
//
//   attn-serve MODEL_DIR --port 8080
//
// Serves one Hugging Face model folder (compiled and loaded as attn-run
// does) over HTTP with the OpenAI API's shapes, so existing clients work:
//   POST /v1/completions       {"prompt": "...", "max_tokens": 32, "stream":
//   true} POST /v1/chat/completions  {"messages": [{"role": "user", "content":
//   "..."}]} GET  /v1/models, GET /health
// Requests run concurrently, batched by one ServingEngine; "stream": true
// answers with server-sent events, one per piece of text. HTTP is
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
#include <csignal>
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

/// The shapes of OpenAI's two APIs: a completion's choice carries "text";
/// a chat completion's a "message", or in a stream a "delta".
struct Shapes {
  bool chat;
  const char *object() const {
    return chat ? "chat.completion" : "text_completion";
  }
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
  options.packedWeights = !noPackedWeights;
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
                   {"queued", engine->queued()},
                   {"cancelled", engine->cancelled()}};
    res.set_content(health.dump(), "application/json");
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
  auto complete = [&](const httplib::Request &req, httplib::Response &res,
                      Shapes shapes) {
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
    if (!stream) {
      std::string text, piece;
      while (job->next(piece))
        text += piece;
      if (!job->error.empty())
        return job->serverFault
                   ? answerError(res, 500, job->error, "", "server_error")
                   : answerError(res, 400, job->error);
      json answer = head;
      answer["choices"] = json::array({shapes.choice(text, job->finishReason)});
      answer["usage"] = usage();
      return res.set_content(answer.dump(), "application/json");
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [job, head, usage,
                                                           shapes](
                                                              size_t,
                                                              httplib::DataSink
                                                                  &sink) {
      auto send = [&](const json &event) {
        std::string line = "data: " + event.dump() + "\n\n";
        return sink.write(line.data(), line.size());
      };
      std::string piece;
      bool first = true;
      while (job->next(piece)) {
        json event = head;
        event["choices"] = json::array({shapes.chunk(piece, nullptr, first)});
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
