//===- Checkpoint.cpp - single-file, sharded and folder checkpoints -------===//

#include "attn/runtime/Checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::runtime {

namespace {
constexpr const char *kIndexName = "model.safetensors.index.json";
constexpr const char *kSingleName = "model.safetensors";

bool isDirectory(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}
bool exists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}
std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}
bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}
/// Whether the file at `path` starts as a GGUF file does.
bool startsAsGguf(const std::string &path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && GgufFile::hasMagic({magic, 4});
}
Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}
} // namespace

const TensorView *Checkpoint::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second;
}

std::string Checkpoint::fileOf(const std::string &name) const {
  auto it = fileOfTensor_.find(name);
  return it == fileOfTensor_.end() ? std::string() : paths_[it->second];
}

size_t Checkpoint::tensorBytes() const {
  size_t bytes = 0;
  for (const auto &[name, view] : tensors_)
    bytes += view->bytes;
  return bytes;
}

void Checkpoint::release(const TensorView &tensor) const {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(tensor.data) + page - 1) / page * page,
                  end = (uintptr_t(tensor.data) + tensor.bytes) / page * page;
  if (end > begin) // whole pages inside the tensor; advice, not a promise
    madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

void Checkpoint::close() {
  tensors_.clear();
  fileOfTensor_.clear();
  files_.clear();
  paths_.clear();
  ggufViews_.clear();
  gguf_.reset();
}

std::string_view Checkpoint::header(size_t file) const {
  return gguf_ ? gguf_->header() : files_[file]->header();
}

Status Checkpoint::openGguf(const std::string &path) {
  auto file = std::make_unique<GgufFile>();
  if (Status s = GgufFile::open(path, *file); !s)
    return s;
  for (const GgufTensor &tensor : file->tensors()) {
    TensorView view;
    view.name = tensor.name;
    view.shape = tensor.shape();
    view.data = tensor.data;
    view.bytes = tensor.bytes;
    const std::optional<TensorType> type = tensorTypeOf(tensor.type);
    if (!type)
      return invalid(path + ": tensor '" + tensor.name + "' is " +
                     name(tensor.type) +
                     ", which attnc does not run yet (it runs " +
                     ggmlReadableNames() + " tensors)");
    view.type = *type;
    ggufViews_.push_back(std::move(view));
  }
  for (size_t i = 0; i < ggufViews_.size(); i++) {
    tensors_[ggufViews_[i].name] = &ggufViews_[i];
    fileOfTensor_[ggufViews_[i].name] = 0;
  }
  paths_.push_back(path);
  gguf_ = std::move(file);
  return Status::ok();
}

Status Checkpoint::open(const std::string &path, Checkpoint &checkpoint) {
  checkpoint.close();
  std::string target = path;
  if (isDirectory(path)) {
    std::string index = path + "/" + kIndexName,
                single = path + "/" + kSingleName;
    if (exists(index))
      target = index;
    else if (exists(single))
      target = single;
    else
      return Status(StatusCode::NotFound, path + ": a model folder needs " +
                                              kIndexName + " or " +
                                              kSingleName);
  }
  Checkpoint result;
  if (!endsWith(target, ".json") && startsAsGguf(target)) {
    if (Status s = result.openGguf(target); !s)
      return s;
    checkpoint = std::move(result);
    return Status::ok();
  }
  auto addFile = [&](const std::string &file) -> Status {
    auto mapped = std::make_unique<SafetensorsFile>();
    if (Status s = SafetensorsFile::open(file, *mapped); !s)
      return s;
    const size_t fileIndex = result.files_.size();
    for (const TensorView &tensor : mapped->tensors()) {
      auto [it, inserted] = result.tensors_.emplace(tensor.name, &tensor);
      if (!inserted)
        return invalid("tensor '" + tensor.name + "' is in two shards: " +
                       result.paths_[result.fileOfTensor_[tensor.name]] +
                       " and " + file);
      result.fileOfTensor_[tensor.name] = fileIndex;
    }
    result.paths_.push_back(file);
    result.files_.push_back(std::move(mapped));
    return Status::ok();
  };

  if (!endsWith(target, ".json")) {
    if (Status s = addFile(target); !s)
      return s;
    checkpoint = std::move(result);
    return Status::ok();
  }

  // The index: {"metadata": {...}, "weight_map": {tensor: shard}}.
  std::ifstream in(target, std::ios::binary);
  if (!in)
    return Status(StatusCode::IoError, target + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json index = nlohmann::json::parse(text.str(), nullptr,
                                               /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object())
    return invalid(target + ": not a JSON object");
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object() || map->empty())
    return invalid(target +
                   ": needs \"weight_map\", an object of tensor: shard file");
  const std::string dir = directoryOf(target);
  std::map<std::string, std::string> shardOf; // tensor -> shard file name
  std::vector<std::string> shards;            // in order of first mention
  for (auto &[tensor, shard] : map->items()) {
    if (!shard.is_string())
      return invalid(target + ": weight_map." + tensor +
                     " must be a shard file name");
    std::string name = shard.get<std::string>();
    // Shards are files beside the index, never paths out of the folder.
    if (name.empty() || name.find('/') != std::string::npos || name == "." ||
        name == "..")
      return invalid(target + ": weight_map." + tensor + " names '" + name +
                     "', not a file beside the index");
    if (std::find(shards.begin(), shards.end(), name) == shards.end())
      shards.push_back(name);
    shardOf[tensor] = name;
  }
  for (const std::string &shard : shards) {
    std::string file = dir + "/" + shard;
    if (!exists(file)) {
      const std::string &some = std::find_if(shardOf.begin(), shardOf.end(),
                                             [&](const auto &entry) {
                                               return entry.second == shard;
                                             })
                                    ->first;
      return Status(StatusCode::NotFound,
                    target + ": shard " + shard + " (holding " + some +
                        ", among others) is missing");
    }
    if (Status s = addFile(file); !s)
      return s;
  }
  // The index and the shards agree tensor by tensor.
  std::string problems;
  auto add = [&](const std::string &problem) {
    problems += (problems.empty() ? "" : "; ") + problem;
  };
  for (const auto &[tensor, shard] : shardOf) {
    std::string in = result.fileOf(tensor);
    if (in.empty())
      add("the index puts " + tensor + " in " + shard + ", which lacks it");
    else if (in != dir + "/" + shard)
      add("the index puts " + tensor + " in " + shard + ", but it is in " + in);
  }
  for (const auto &[tensor, view] : result.tensors_)
    if (!shardOf.count(tensor))
      add(result.fileOf(tensor) + " holds " + tensor +
          ", which the index does not list");
  if (!problems.empty())
    return invalid(target + ": " + problems);
  checkpoint = std::move(result);
  return Status::ok();
}

Status checkTensors(const Checkpoint &checkpoint,
                    const std::vector<ExpectedTensor> &expected,
                    const std::set<std::string> &tolerated) {
  std::string problems;
  auto add = [&](const std::string &problem) {
    problems += (problems.empty() ? "" : "; ") + problem;
  };
  std::set<std::string> wanted;
  for (const ExpectedTensor &want : expected) {
    wanted.insert(want.name);
    const TensorView *have = checkpoint.find(want.name);
    if (!have)
      add("missing " + want.name);
    else if (!readableAs(have->type, want.type) || have->shape != want.shape)
      add(want.name + " is " + name(have->type) + " " +
          describeShape(have->shape) + ", expected " + name(want.type) + " " +
          describeShape(want.shape));
  }
  for (const auto &[tensor, view] : checkpoint.tensors())
    if (!tolerated.count(tensor) && !wanted.count(tensor))
      add("unexpected " + tensor);
  if (problems.empty())
    return Status::ok();
  return Status(StatusCode::InvalidArgument, "weights: " + problems);
}

Status writeCheckpoint(const std::string &dir,
                       const std::vector<ExpectedTensor> &tensors,
                       const std::vector<const float *> &data, int shards) {
  if (tensors.size() != data.size() || shards < 1 ||
      size_t(shards) > std::max<size_t>(tensors.size(), 1))
    return invalid("writeCheckpoint: one data pointer per tensor, and 1 to "
                   "(tensors) shards");
  if (shards == 1)
    return writeSafetensors(dir + "/" + kSingleName, tensors, data);
  std::vector<size_t> bytes;
  size_t total = 0;
  for (const ExpectedTensor &tensor : tensors) {
    size_t count = 1;
    for (int64_t extent : tensor.shape)
      count *= size_t(extent);
    bytes.push_back(count * byteSize(tensor.type));
    total += bytes.back();
  }
  nlohmann::json weightMap = nlohmann::json::object();
  size_t next = 0, written = 0;
  for (int shard = 0; shard < shards; shard++) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors",
                  shard + 1, shards);
    // Up to this shard's share of the bytes; at least one tensor each, and
    // enough left for the shards after it.
    std::vector<ExpectedTensor> part;
    std::vector<const float *> partData;
    const size_t share = total * size_t(shard + 1) / size_t(shards);
    while (next < tensors.size() &&
           (part.empty() || written + bytes[next] <= share) &&
           tensors.size() - next > size_t(shards - shard - 1)) {
      part.push_back(tensors[next]);
      partData.push_back(data[next]);
      weightMap[tensors[next].name] = name;
      written += bytes[next++];
    }
    if (shard == shards - 1)
      for (; next < tensors.size(); written += bytes[next++]) {
        part.push_back(tensors[next]);
        partData.push_back(data[next]);
        weightMap[tensors[next].name] = name;
      }
    if (Status s = writeSafetensors(dir + "/" + name, part, partData); !s)
      return s;
  }
  nlohmann::json index = {{"metadata", {{"total_size", total}}},
                          {"weight_map", weightMap}};
  std::ofstream out(dir + "/" + kIndexName);
  out << index.dump(2) << "\n";
  if (!out)
    return Status(StatusCode::IoError,
                  "cannot write " + dir + "/" + kIndexName);
  return Status::ok();
}

} // namespace attn::runtime
