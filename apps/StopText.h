//===- StopText.h - generated text up to a stop string ------------*- C++ -*-===//
//
// OpenAI's "stop" and attn-run's --stop: generation ends when the text
// contains one of the strings, and the text shown ends just before it.
// Text that may be the start of a stop string is held back until the next
// piece says whether it is.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_STOPTEXT_H
#define ATTN_APPS_STOPTEXT_H

#include <algorithm>
#include <string>
#include <vector>

namespace attn::apps {

class StopText {
public:
  explicit StopText(std::vector<std::string> stops = {})
      : stops_(std::move(stops)) {
    stops_.erase(std::remove(stops_.begin(), stops_.end(), ""), stops_.end());
  }

  /// Adds a piece of generated text; returns what can be shown now, and
  /// sets `stopped` when a stop string was reached (nothing after it is
  /// ever shown).
  std::string add(const std::string &piece, bool &stopped) {
    stopped = false;
    pending_ += piece;
    size_t first = std::string::npos;
    for (const std::string &stop : stops_)
      first = std::min(first, pending_.find(stop));
    if (first != std::string::npos) {
      stopped = true;
      std::string shown = pending_.substr(0, first);
      pending_.clear();
      return shown;
    }
    // Hold back the longest tail that is a prefix of a stop string.
    size_t keep = 0;
    for (const std::string &stop : stops_)
      for (size_t n = std::min(stop.size() - 1, pending_.size()); n > keep;
           n--)
        if (pending_.compare(pending_.size() - n, n, stop, 0, n) == 0) {
          keep = n;
          break;
        }
    std::string shown = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return shown;
  }

  /// The end of generation: whatever was held back.
  std::string flush() {
    std::string shown;
    shown.swap(pending_);
    return shown;
  }

private:
  std::vector<std::string> stops_;
  std::string pending_;
};

} // namespace attn::apps

#endif // ATTN_APPS_STOPTEXT_H
