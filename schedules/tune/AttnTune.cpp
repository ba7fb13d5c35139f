//===- AttnTune.cpp - schedule tuning by benchmark ------------------------===//
//
// attn-tune PLAN.json --db=FILE [options]
//
// Reads a plan attnc wrote (`attnc model.json --emit=header -o DIR` is
// enough: no kernels need compiling), and for each attention kernel in it
// searches a pruned grid of schedules: every candidate is built with the
// same pipeline builder attnc uses, JIT-compiled for this machine, and timed
// by Google Benchmark (real time, median of repetitions). The best candidate
// enters the tuning database under the kernel's name and --target when it
// beats the plan's schedule by --min-speedup; otherwise the entry keeps the
// plan's schedule, so a second run resumes instead of retuning it.
// `attnc --schedule-db=FILE --target=NAME` then uses the entries.
//
//===----------------------------------------------------------------------===//

#include "Candidates.h"
#include "Measure.h"
#include "TuneReport.h"

#include "attn/runtime/PlanSchema.h"
#include "attn/schedules/Roofline.h"

#include <nlohmann/json.hpp>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

using nlohmann::json;
using namespace attn::tune;
namespace plan = attn::plan;

namespace {

constexpr const char *kUsage =
    R"(usage: attn-tune PLAN.json --db=FILE [options] [benchmark flags]

Tunes the schedules of every attention kernel of an attnc plan
(<name>_plan.json from `attnc MODEL --emit=header -o DIR`) on this machine
and records the winners in a tuning database for `attnc --schedule-db`.

  --db=FILE            tuning database to read and update (created if absent)
  --target=NAME        the attnc --target the entries are for
                       (default: x86-64-dispatch on x86-64, else host)
  --kernel=SYMBOL      tune only this kernel (repeatable)
  --budget=SECONDS     stop starting candidates after this long (default 600)
  --length=N           prefill tokens / decode context to time at (default:
                       the layers' max length, at most 2048 / 8192)
  --batch=N            decode sequences per step (default: max_batch, <= 16)
  --repetitions=N      Google Benchmark repetitions per candidate (default 3)
  --min-time=SECONDS   per repetition (default 0.1)
  --min-speedup=X      a winner must beat the default by this (default 1.03)
  --retune             tune kernels the database already has
  --report=DIR         write <kernel>.svg charts and table.txt there
)";

struct Options {
  std::string plan, db, target, reportDir;
  std::set<std::string> kernels;
  double budget = 600, minSpeedup = 1.03;
  int length = 0, batch = 0;
  bool retune = false;
  TimingOptions timing;
};

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "attn-tune: error: %s\n%s", message.c_str(), kUsage);
  std::exit(1);
}

/// Takes attn-tune's own flags out of argv; the rest go to Google Benchmark.
Options parseOptions(int &argc, char **argv) {
  Options o;
#if defined(__x86_64__)
  o.target = "x86-64-dispatch";
#else
  o.target = "host";
#endif
  int kept = 1;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> std::optional<std::string> {
      std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0)
        return arg.substr(prefix.size());
      return std::nullopt;
    };
    auto number = [&](const std::string &text, const char *flag) {
      char *end = nullptr;
      double x = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || !(x > 0))
        usageError(std::string(flag) + " expects a positive number, got '" +
                   text + "'");
      return x;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (auto v = value("--db")) {
      o.db = *v;
    } else if (auto v = value("--target")) {
      o.target = *v;
    } else if (auto v = value("--kernel")) {
      o.kernels.insert(*v);
    } else if (auto v = value("--budget")) {
      o.budget = number(*v, "--budget");
    } else if (auto v = value("--length")) {
      o.length = int(number(*v, "--length"));
    } else if (auto v = value("--batch")) {
      o.batch = int(number(*v, "--batch"));
    } else if (auto v = value("--repetitions")) {
      o.timing.repetitions = int(number(*v, "--repetitions"));
    } else if (auto v = value("--min-time")) {
      o.timing.minSeconds = number(*v, "--min-time");
    } else if (auto v = value("--min-speedup")) {
      o.minSpeedup = number(*v, "--min-speedup");
    } else if (arg == "--retune") {
      o.retune = true;
    } else if (auto v = value("--report")) {
      o.reportDir = *v;
    } else if (arg.rfind("--benchmark", 0) == 0) {
      argv[kept++] = argv[i];
    } else if (arg.rfind("-", 0) == 0) {
      usageError("unknown option '" + arg + "'");
    } else if (o.plan.empty()) {
      o.plan = arg;
    } else {
      usageError("one plan at a time, got '" + o.plan + "' and '" + arg + "'");
    }
  }
  argc = kept;
  if (o.plan.empty())
    usageError("no plan given");
  if (o.db.empty())
    usageError("--db=FILE is required");
  return o;
}

json readJson(const std::string &path, bool mayBeAbsent) {
  std::ifstream file(path);
  if (!file) {
    if (mayBeAbsent)
      return json{{"entries", json::array()}};
    usageError("cannot read " + path);
  }
  json value = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_object())
    usageError(path + ": not a JSON object");
  return value;
}

int intField(const json &object, const char *key, int fallback = 0) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>()
                                                       : fallback;
}

Schedule readSchedule(const json &object) {
  Schedule s;
  s.queryBlock = intField(object, "query_block", s.queryBlock);
  s.kvChunk = intField(object, "kv_chunk", s.kvChunk);
  s.qkTileKeys = intField(object, "qk_tile_keys", s.qkTileKeys);
  s.pvTileRows = intField(object, "pv_tile_rows", s.pvTileRows);
  s.splitKeys = intField(object, "split_keys", s.splitKeys);
  s.vectorWidth = intField(object, "vector_width", s.vectorWidth);
  return s;
}

/// The plan's attention kernels at their tuning shapes.
std::vector<TunedKernel> readKernels(const json &plan, const Options &o) {
  if (plan.value(plan::kPlanVersion, 0) != plan::kVersion)
    usageError(o.plan + ": a plan of another version (plan_version " +
               plan.value(plan::kPlanVersion, json(0)).dump() +
               "); this attn-tune reads " + std::to_string(plan::kVersion));
  if (!plan.contains(plan::kKernels) || !plan[plan::kKernels].is_array())
    usageError(o.plan + ": no \"kernels\" list (a plan from an older attnc?)");
  // Longest sequence each kernel serves: its layers' cache lengths, else
  // the embeddings' positions.
  std::map<std::string, int> longest;
  int positions = 0;
  for (const json &op : plan.value(plan::kOps, json::array()))
    positions = std::max(positions, intField(op, plan::kMaxPositions));
  for (const json &layer : plan.value(plan::kLayers, json::array())) {
    int length = positions;
    if (layer.contains(plan::kKvCache))
      length = std::max(length, intField(layer[plan::kKvCache], plan::kMaxLength));
    for (const char *key : {plan::kPrefillKernel, plan::kDecodeKernel})
      if (layer.contains(key) && layer[key].is_string())
        longest[layer[key].get<std::string>()] =
            std::max(longest[layer[key].get<std::string>()], length);
  }
  const int maxBatch = intField(plan, plan::kMaxBatch, 1);
  std::vector<TunedKernel> kernels;
  for (const json &k : plan[plan::kKernels]) {
    TunedKernel t;
    t.symbol = k.value(plan::kSymbol, "");
    if (!o.kernels.empty() && !o.kernels.count(t.symbol))
      continue;
    t.prefill = k.value(plan::kFamily, "") == plan::kPrefill;
    auto fill = [&](attn::AttentionSettings &spec) {
      spec.numQueryHeads = intField(k, plan::kNumQueryHeads);
      spec.numKvHeads = intField(k, plan::kNumKvHeads);
      spec.headDim = intField(k, plan::kHeadDim);
      spec.causal = k.value(plan::kCausal, false);
      spec.window = intField(k, plan::kWindow);
      spec.scale = k.value(plan::kScale, 0.0f);
      spec.softcap = k.value(plan::kSoftcap, 0.0f);
      spec.alibi = k.value(plan::kAlibi, false);
      spec.sinks = k.value(plan::kSinks, false);
    };
    fill(t.sdpa);
    static_cast<attn::AttentionSettings &>(t.decode) = t.sdpa;
    t.sdpa.functionName = t.decode.functionName = "candidate";
    t.sdpa.keyPadding = k.value(plan::kKeyPadding, false);
    if (k.value(plan::kComputeDtype, "f32") == "bf16")
      t.sdpa.compute = attn::SdpaCompute::BF16;
    t.decode.pageSize = intField(k, plan::kPageSize, 16);
    std::string dtype = k.value(plan::kKvDtype, "f32");
    if (!attn::parseCacheDType(dtype, t.decode.cacheElement))
      usageError(o.plan + ": kernel " + t.symbol + " has kv_dtype '" + dtype +
                 "'");
    if (k.contains(plan::kSchedule))
      t.current = readSchedule(k[plan::kSchedule]);
    t.source = k.contains(plan::kSchedule)
                   ? k[plan::kSchedule].value(plan::kSource, "")
                   : "";
    const std::string name = k.value(plan::kName, "");
    int served = longest.count(name) ? longest[name] : 0;
    t.length =
        o.length ? o.length
                 : std::min(served > 0 ? served : 512, t.prefill ? 2048 : 8192);
    t.batch = o.batch ? o.batch : std::min(maxBatch, 16);
    if (t.symbol.empty() || t.sdpa.numQueryHeads < 1 || t.sdpa.numKvHeads < 1 ||
        t.sdpa.headDim < 1)
      usageError(o.plan + ": a kernel entry lacks its symbol, heads or "
                          "head_dim");
    kernels.push_back(t);
  }
  if (!o.kernels.empty() && kernels.size() != o.kernels.size())
    usageError("--kernel names a kernel the plan does not have");
  return kernels;
}

json scheduleJson(const Schedule &s) {
  return json{{"query_block", s.queryBlock},  {"kv_chunk", s.kvChunk},
              {"qk_tile_keys", s.qkTileKeys}, {"pv_tile_rows", s.pvTileRows},
              {"split_keys", s.splitKeys},    {"vector_width", s.vectorWidth}};
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  return "unknown";
}

/// One line per candidate; on a terminal, one line rewritten in place.
class Progress {
public:
  Progress(int total) : total_(total), tty_(isatty(STDERR_FILENO)) {}
  void update(const std::string &what, double elapsed) {
    done_++;
    double eta = done_ ? elapsed / done_ * std::max(0, total_ - done_) : 0;
    char text[256];
    std::snprintf(text, sizeof text, "[%3d/%3d] %-60.60s ETA %3d:%02d", done_,
                  total_, what.c_str(), int(eta) / 60, int(eta) % 60);
    std::fprintf(stderr, tty_ ? "\r%s" : "%s\n", text);
    std::fflush(stderr);
  }
  void more(int count) { total_ += count; }
  void finish() {
    if (tty_)
      std::fputc('\n', stderr);
  }

private:
  int total_, done_ = 0;
  bool tty_;
};

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  json plan = readJson(o.plan, false);
  std::vector<TunedKernel> kernels = readKernels(plan, o);
  json db = readJson(o.db, true);
  if (!db.contains("entries") || !db["entries"].is_array())
    usageError(o.db + ": expected {\"entries\": [...]}");
  auto hasEntry = [&](const std::string &symbol) {
    for (const json &e : db["entries"])
      if (e.value("kernel", "") == symbol && e.value("target", "") == o.target)
        return true;
    return false;
  };

  const int threads = std::max(1u, std::thread::hardware_concurrency());
  attn::Roofline roofline = attn::measureRoofline(threads);
  std::printf("attn-tune: %s, %d threads, fp32 FMA peak %.1f GFLOP/s, STREAM "
              "triad %.1f GB/s; target %s\n",
              cpuModel().c_str(), threads, roofline.fmaGflops,
              roofline.triadGBps, o.target.c_str());
  const long l2Bytes = 1L << 20;
  const Halide::Target jit = Halide::get_jit_target_from_environment();

  std::vector<TunedKernel> todo;
  for (const TunedKernel &k : kernels) {
    if (!o.retune && hasEntry(k.symbol)) {
      std::printf("%s: in the database already (--retune to tune again)\n",
                  k.symbol.c_str());
      continue;
    }
    if (k.source == "db")
      std::printf("note: %s's plan schedule came from a database; it is the "
                  "baseline here\n",
                  k.symbol.c_str());
    todo.push_back(k);
  }
  int total = 0;
  for (const TunedKernel &k : todo)
    total += 1 + int(candidates(k, 0, k.current, l2Bytes).size());
  Progress progress(total);
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };

  std::vector<KernelResult> results;
  bool outOfTime = false;

  for (const TunedKernel &k : todo) {
    KernelBench bench(k);
    KernelResult result{k, {}, 0, true};
    const double flops = flopsPerCall(k), bytes = kvBytesPerCall(k);
    auto measure = [&](const Schedule &s, bool isDefault) {
      for (const Measured &m : result.measured)
        if (m.schedule == s)
          return;
      double seconds = bench.secondsPerCall(s, jit, o.timing);
      result.measured.push_back({s, seconds, flops / seconds / 1e9,
                                 bytes / seconds / 1e9, isDefault});
      if (seconds < result.measured[result.best].seconds)
        result.best = result.measured.size() - 1;
      progress.update(k.symbol + " " + s.describe(k.prefill), elapsed());
    };
    try {
      // The first timings of a process run on a cold thread pool and
      // clock: one untimed pass over the first kernel's default first.
      if (results.empty())
        bench.secondsPerCall(k.current, jit, o.timing);
      measure(k.current, true);
      for (int stage = 0; stage < stages(k) && !outOfTime; stage++) {
        std::vector<Schedule> list = candidates(
            k, stage, result.measured[result.best].schedule, l2Bytes);
        if (stage > 0)
          progress.more(int(list.size()));
        for (const Schedule &s : list) {
          if (elapsed() > o.budget) {
            outOfTime = true;
            break;
          }
          measure(s, false);
        }
      }
    } catch (const std::exception &e) {
      progress.finish();
      std::fprintf(stderr, "attn-tune: %s: %s\n", k.symbol.c_str(), e.what());
      return 1;
    }
    // The search measured the default first and each candidate once;
    // machine noise and warm-up favour late runs. Confirm the winner
    // against the default in alternation and judge by those medians.
    if (result.best != 0 && !outOfTime) {
      std::vector<double> base, best;
      for (int round = 0; round < 3; round++) {
        base.push_back(
            bench.secondsPerCall(result.measured[0].schedule, jit, o.timing));
        best.push_back(bench.secondsPerCall(
            result.measured[result.best].schedule, jit, o.timing));
      }
      std::sort(base.begin(), base.end());
      std::sort(best.begin(), best.end());
      for (auto [index, seconds] :
           {std::pair{size_t(0), base[1]}, std::pair{result.best, best[1]}}) {
        Measured &m = result.measured[index];
        m.seconds = seconds;
        m.gflops = flops / seconds / 1e9;
        m.gbps = bytes / seconds / 1e9;
      }
      if (result.measured[0].seconds <= result.measured[result.best].seconds)
        result.best = 0;
    }
    result.keptDefault = result.speedup() < o.minSpeedup;
    results.push_back(result);
  }
  progress.finish();
  if (outOfTime)
    std::printf("attn-tune: the budget of %.0f s ran out; kernels not reached "
                "stay untuned, tuned ones are saved\n",
                o.budget);

  // Entries: replace this target's entry of each tuned kernel.
  json entries = json::array();
  std::set<std::string> tuned;
  for (const KernelResult &r : results)
    tuned.insert(r.kernel.symbol);
  for (const json &e : db["entries"])
    if (!(e.value("target", "") == o.target &&
          tuned.count(e.value("kernel", ""))))
      entries.push_back(e);
  const std::string cpu = cpuModel();
  for (const KernelResult &r : results) {
    const Measured &chosen = r.keptDefault ? r.measured[0] : r.measured[r.best];
    entries.push_back(json{
        {"kernel", r.kernel.symbol},
        {"target", o.target},
        {"schedule", scheduleJson(chosen.schedule)},
        {"gflops", chosen.gflops},
        {"gbps", chosen.gbps},
        {"default_gflops", r.measured[0].gflops},
        {"speedup",
         chosen.seconds > 0 ? r.measured[0].seconds / chosen.seconds : 1.0},
        {"shape", r.kernel.prefill ? json{{"length", r.kernel.length}}
                                   : json{{"batch", r.kernel.batch},
                                          {"context", r.kernel.length}}},
        {"candidates", r.measured.size()},
        {"cpu", cpu}});
  }
  db["entries"] = entries;
  std::ofstream out(o.db);
  out << db.dump(2) << "\n";
  if (!out)
    usageError("cannot write " + o.db);

  std::string table = renderTable(results);
  std::fputs(table.c_str(), stdout);
  if (!o.reportDir.empty()) {
    std::ofstream(o.reportDir + "/table.txt") << table;
    for (const KernelResult &r : results)
      std::ofstream(o.reportDir + "/" + r.kernel.symbol + ".svg")
          << renderSvg(r, {roofline.fmaGflops, roofline.triadGBps});
  }
  int faster = 0;
  for (const KernelResult &r : results)
    faster += r.speedup() >= 1.15;
  std::printf("attn-tune: %zu kernels tuned, %d at >= 1.15x their default, "
              "database %s\n",
              results.size(), faster, o.db.c_str());
  return 0;
}
