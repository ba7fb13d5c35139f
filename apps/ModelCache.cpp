//===- ModelCache.cpp - compiled model libraries, keyed by config ---------===//

#include "ModelCache.h"

#include "attn/runtime/Gguf.h"
#include "attn/runtime/PlanSchema.h"
#include "attn/runtime/Version.h"
#include "attn/runtime/attnc_library.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <unistd.h>

namespace attn::apps {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string defaultCacheDir() {
  if (auto dir = llvm::sys::Process::GetEnv("ATTNC_CACHE_DIR"))
    return *dir;
  if (auto dir = llvm::sys::Process::GetEnv("XDG_CACHE_HOME"))
    return *dir + "/attnc";
  if (auto home = llvm::sys::Process::GetEnv("HOME"))
    return *home + "/.cache/attnc";
  return "/tmp/attnc-cache";
}

llvm::Expected<std::string> findAttnc(const std::string &given) {
  if (!given.empty())
    return given;
  if (auto fromEnv = llvm::sys::Process::GetEnv("ATTNC"))
    return *fromEnv;
  // attnc is installed (and built) beside attn-run.
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable("attn-run", &anchor);
  llvm::SmallString<256> beside(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(beside, "attnc");
  if (llvm::sys::fs::can_execute(beside))
    return std::string(beside);
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("attnc"))
    return *onPath;
  return error("attnc not found beside this program or on PATH (--attnc, or "
               "$ATTNC, names it)");
}

/// What "host" stands for: the target attnc resolves it to on this CPU.
std::string describeTarget(const std::string &target) {
  if (target != "host")
    return target;
  std::string text = "host:" + llvm::sys::getHostCPUName().str();
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    if (feature.second)
      text += "," + feature.first().str();
  return text;
}

} // namespace

bool isGgufFile(const std::string &path) {
  if (llvm::sys::fs::is_directory(path))
    return false;
  auto head = llvm::MemoryBuffer::getFileSlice(path, 4, 0);
  return head && runtime::GgufFile::hasMagic(
                     {(*head)->getBufferStart(), (*head)->getBufferSize()});
}

std::string folderName(const std::string &dir) {
  llvm::SmallString<256> folder(dir);
  llvm::sys::fs::make_absolute(folder);
  llvm::sys::path::remove_dots(folder, /*remove_dot_dot=*/true);
  while (folder.size() > 1 && folder.back() == '/')
    folder.pop_back();
  return llvm::sys::path::filename(folder).str();
}

std::string packedWeightsPath(const std::string &library,
                              const std::string &modelDir) {
  llvm::SmallString<256> folder(modelDir);
  llvm::sys::fs::make_absolute(folder);
  llvm::sys::path::remove_dots(folder, /*remove_dot_dot=*/true);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(library));
  llvm::sys::path::append(
      path, "weights-" +
                llvm::utohexstr(llvm::xxh3_64bits(folder.str()),
                                /*LowerCase=*/true, 16) +
                ".attnpack");
  return std::string(path);
}

llvm::Expected<std::string> findOrCompile(const std::string &modelDir,
                                          const CompileOptions &options,
                                          llvm::raw_ostream &log,
                                          bool &compiled) {
  compiled = false;
  // A folder's config.json, or a GGUF file itself (its header: the
  // metadata and the tensor table, and the one tensor attnc reads).
  llvm::SmallString<256> config(modelDir);
  std::string key;
  if (isGgufFile(modelDir)) {
    runtime::GgufFile file;
    if (runtime::Status s = runtime::GgufFile::open(modelDir, file); !s)
      return error(s.message());
    key = std::string(file.header());
    // What attnc reads of the tensor data: Llama 3's RoPE factors.
    if (const runtime::GgufTensor *freqs = file.tensor("rope_freqs.weight"))
      key.append(reinterpret_cast<const char *>(freqs->data), freqs->bytes);
  } else {
    llvm::sys::path::append(config, "config.json");
    auto text = llvm::MemoryBuffer::getFile(config);
    if (!text)
      return error(config + ": cannot be read: " + text.getError().message());
    key = (*text)->getBuffer().str();
  }
  // Fields separated by NUL bytes, so that no two configurations run together.
  // The library ABI and the plan's version too: a library cached before
  // either changed would be refused.
  for (const std::string &field :
       {std::string("attnc ") + ATTNC_VERSION + " library ABI " +
            std::to_string(ATTNC_LIBRARY_ABI) + " plan_version " +
            std::to_string(plan::kVersion),
        describeTarget(options.target)})
    (key += '\0') += field;
  for (const std::string &arg : options.attncArgs)
    (key += '\0') += arg;
  std::string cacheDir =
      options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir;
  // <cache>/<folder name>-<hash>: readable, and unique per configuration.
  llvm::SmallString<256> entry(cacheDir);
  llvm::sys::path::append(entry, folderName(modelDir) + "-" +
                                     llvm::utohexstr(llvm::xxh3_64bits(key),
                                                     /*LowerCase=*/true, 16));
  llvm::SmallString<256> library(entry);
  llvm::sys::path::append(library, "libmodel.so");
  if (llvm::sys::fs::exists(library))
    return std::string(library);

  llvm::Expected<std::string> attnc = findAttnc(options.attnc);
  if (!attnc)
    return attnc.takeError();
  if (std::error_code ec = llvm::sys::fs::create_directories(cacheDir))
    return error("cannot create '" + cacheDir + "': " + ec.message());
  // Compiled into a folder of its own, then renamed: a run that stops half
  // way, or two runs at once, never leave a partial entry.
  std::string scratch = std::string(entry) + ".partial-" +
                        std::to_string(::getpid());
  std::vector<std::string> args = {*attnc,       std::string(config),
                                   "-o",         scratch,
                                   "--shared",   "--name=model",
                                   "--progress", "--target=" + options.target};
  args.insert(args.end(), options.attncArgs.begin(), options.attncArgs.end());
  log << "attn-run: compiling " << config << " for this machine ("
      << options.target << "; first run of this configuration, cached in "
      << entry << ")\n";
  log.flush();
  auto start = std::chrono::steady_clock::now();
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*attnc, argRefs, std::nullopt, {}, 0,
                                         0, &message);
  if (status != 0) {
    llvm::sys::fs::remove_directories(scratch);
    return error("attnc failed on " + config +
                 (message.empty() ? "" : " (" + message + ")"));
  }
  if (std::error_code ec = llvm::sys::fs::rename(scratch, entry)) {
    llvm::sys::fs::remove_directories(scratch);
    if (!llvm::sys::fs::exists(library)) // another run won the race: fine
      return error("cannot move the library into '" + entry +
                   "': " + ec.message());
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  log << llvm::format("attn-run: compiled in %.1f s\n", seconds);
  compiled = true;
  return std::string(library);
}

} // namespace attn::apps
