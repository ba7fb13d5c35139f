//===- Bpe.cpp - tokenizer.json's BPE "model" -----------------------------===//
//
// Byte-pair encoding as the `tokenizers` library does it: a word starts as
// one symbol per character (or, with byte_fallback, per byte of a character
// the vocabulary lacks, spelled "<0xAB>"), then the adjacent pair with the
// lowest merge rank is merged, leftmost first among equal ranks, until no
// pair has a merge. A heap of candidate pairs with lazy invalidation keeps
// long words (a CJK sentence is one \p{L}+ word) at O(n log n).
//
//===----------------------------------------------------------------------===//

#include "TokenizerParts.h"
#include "Utf8.h"

#include <cstdio>
#include <queue>

namespace attn::runtime::tokenizer {

BpeModel BpeModel::fromJson(const json &value, const std::string &at) {
  JsonObject object(value, at);
  std::string type = object.string("type", "BPE");
  if (type != "BPE")
    object.unknownType(type, "BPE models");
  if (object.has("dropout") &&
      !(object.value.at("dropout").is_number() &&
        object.value.at("dropout").get<double>() == 0.0))
    object.fail("dropout", "BPE dropout is not supported (it makes encoding "
                           "random); set it to null");

  BpeModel model;
  JsonObject vocabulary = object.object("vocab");
  model.vocabulary.reserve(vocabulary.value.size());
  for (const auto &[token, id] : vocabulary.value.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= kTokenIdLimit)
      vocabulary.fail(token, "expected an id in [0, 2^24)");
    model.vocabulary[token] = int32_t(id.get<int64_t>());
  }
  auto idOf = [&](const std::string &token, const std::string &where) {
    auto it = model.vocabulary.find(token);
    if (it == model.vocabulary.end())
      throw TokenizerError(where + ": '" + token +
                           "' is not in the vocabulary");
    return it->second;
  };

  model.prefix_ = object.string("continuing_subword_prefix", "");
  model.suffix_ = object.string("end_of_word_suffix", "");
  model.fuseUnknown_ = object.boolean("fuse_unk", false);
  model.byteFallback_ = object.boolean("byte_fallback", false);
  model.ignoreMerges_ = object.boolean("ignore_merges", false);
  if (object.has("unk_token"))
    model.unknown_ =
        idOf(object.string("unk_token"), object.at + ".unk_token");
  for (int b = 0; b < 256; b++) {
    char spelled[8];
    std::snprintf(spelled, sizeof spelled, "<0x%02X>", b);
    auto it = model.vocabulary.find(spelled);
    model.byteTokens_[b] = it == model.vocabulary.end() ? -1 : it->second;
  }

  if (!object.has("merges") || !object.value.at("merges").is_array())
    object.fail("merges", "expected an array");
  const json &merges = object.value.at("merges");
  model.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); rank++) {
    std::string where =
        object.at + ".merges[" + std::to_string(rank) + "]";
    std::string left, right;
    const json &merge = merges[rank];
    if (merge.is_string()) { // "left right"
      const std::string &line = merge.get_ref<const std::string &>();
      size_t space = line.find(' ');
      if (space == std::string::npos ||
          line.find(' ', space + 1) != std::string::npos)
        throw TokenizerError(where + ": expected two tokens separated by "
                                     "one space");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) { // ["left", "right"]
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      throw TokenizerError(where + ": expected \"left right\" or [left, right]");
    }
    std::string joined = left + (right.rfind(model.prefix_, 0) == 0
                                     ? right.substr(model.prefix_.size())
                                     : right);
    // One at a time: the first token missing is the one named.
    int32_t leftId = idOf(left, where);
    int32_t rightId = idOf(right, where);
    int32_t mergedId = idOf(joined, where);
    model.merges_[pairKey(leftId, rightId)] = {int32_t(rank), mergedId};
  }
  return model;
}

void BpeModel::symbolsOf(std::string_view word,
                         std::vector<int32_t> &symbols) const {
  int32_t pendingUnknown = 0; // unknown characters not yet emitted
  auto flushUnknown = [&] {
    if (pendingUnknown && unknown_ >= 0)
      symbols.insert(symbols.end(), fuseUnknown_ ? 1 : pendingUnknown,
                     unknown_);
    pendingUnknown = 0;
  };
  std::string spelled;
  for (size_t at = 0; at < word.size();) {
    size_t length = utf8::characterLength(word, at);
    spelled.clear();
    if (at > 0)
      spelled += prefix_;
    spelled.append(word.substr(at, length));
    if (at + length == word.size())
      spelled += suffix_;
    std::string_view character = word.substr(at, length);
    at += length;
    if (auto it = vocabulary.find(spelled); it != vocabulary.end()) {
      flushUnknown();
      symbols.push_back(it->second);
      continue;
    }
    if (byteFallback_) {
      bool all = true;
      for (unsigned char b : character)
        all &= byteTokens_[b] >= 0;
      if (all) {
        flushUnknown();
        for (unsigned char b : character)
          symbols.push_back(byteTokens_[b]);
        continue;
      }
    }
    // tokenizers drops a character it cannot spell when there is no
    // unk_token; byte-level vocabularies spell every byte.
    pendingUnknown++;
  }
  flushUnknown();
}

void BpeModel::encode(std::string_view word, std::vector<int32_t> &ids) const {
  if (ignoreMerges_)
    if (auto it = vocabulary.find(std::string(word)); it != vocabulary.end()) {
      ids.push_back(it->second);
      return;
    }
  std::vector<int32_t> symbol;
  symbolsOf(word, symbol);
  size_t n = symbol.size();
  // A doubly linked list over `symbol`; merged-away entries are dead.
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> dead(n, false);
  for (size_t i = 0; i < n; i++) {
    prev[i] = int32_t(i) - 1;
    next[i] = i + 1 < n ? int32_t(i + 1) : -1;
  }
  struct Candidate {
    int32_t rank, position, merged;
    bool operator>(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank
                                : position > other.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0 || next[left] < 0)
      return;
    auto it = merges_.find(pairKey(symbol[left], symbol[next[left]]));
    if (it != merges_.end())
      queue.push({it->second.rank, left, it->second.merged});
  };
  for (size_t i = 0; i + 1 < n; i++)
    consider(int32_t(i));
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    int32_t left = top.position;
    if (dead[left] || next[left] < 0)
      continue;
    int32_t right = next[left];
    // Stale when either side has merged since this pair was pushed.
    auto it = merges_.find(pairKey(symbol[left], symbol[right]));
    if (it == merges_.end() || it->second.merged != top.merged)
      continue;
    symbol[left] = top.merged;
    dead[right] = true;
    next[left] = next[right];
    if (next[right] >= 0)
      prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  for (size_t i = 0; i < n; i++)
    if (!dead[i])
      ids.push_back(symbol[i]);
}

} // namespace attn::runtime::tokenizer
