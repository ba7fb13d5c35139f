//===- Heatmap.cpp - cross-attention as an SVG heat map -------------------===//

#include "Heatmap.h"

#include <algorithm>
#include <cstdio>

namespace translate {

namespace {
constexpr int kCell = 34, kLabelWidth = 110, kHeader = 40, kGap = 30;

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '<'   ? "&lt;"
           : c == '>' ? "&gt;"
           : c == '&' ? "&amp;"
                      : std::string(1, c);
  return out;
}

/// White (0) to deep blue (1).
std::string color(float weight) {
  float w = std::clamp(weight, 0.0f, 1.0f);
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x",
                int(255 - w * (255 - 8)), int(255 - w * (255 - 48)),
                int(255 - w * (255 - 107)));
  return buffer;
}
} // namespace

std::string renderHeatmaps(const std::vector<Alignment> &alignments) {
  int width = kLabelWidth, height = 0;
  for (const Alignment &a : alignments) {
    width = std::max(width, kLabelWidth + int(a.source.size()) * kCell + 10);
    height += kHeader + int(a.output.size()) * kCell + kGap;
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(width) + "\" height=\"" +
                    std::to_string(height) +
                    "\" font-family=\"sans-serif\" font-size=\"14\">\n"
                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  int top = 0;
  for (const Alignment &a : alignments) {
    for (size_t j = 0; j < a.source.size(); j++)
      svg += "<text x=\"" + std::to_string(kLabelWidth + int(j) * kCell + 10) +
             "\" y=\"" + std::to_string(top + kHeader - 10) + "\">" +
             escape(a.source[j]) + "</text>\n";
    for (size_t i = 0; i < a.output.size(); i++) {
      int y = top + kHeader + int(i) * kCell;
      svg += "<text x=\"" + std::to_string(kLabelWidth - 8) + "\" y=\"" +
             std::to_string(y + kCell / 2 + 5) + "\" text-anchor=\"end\">" +
             escape(a.output[i]) + "</text>\n";
      for (size_t j = 0; j < a.source.size() && i < a.weights.size(); j++) {
        float w = j < a.weights[i].size() ? a.weights[i][j] : 0.0f;
        char title[32];
        std::snprintf(title, sizeof title, "%.3f", w);
        svg += "<rect x=\"" + std::to_string(kLabelWidth + int(j) * kCell) +
               "\" y=\"" + std::to_string(y) + "\" width=\"" +
               std::to_string(kCell - 1) + "\" height=\"" +
               std::to_string(kCell - 1) + "\" fill=\"" + color(w) +
               "\"><title>" + title + "</title></rect>\n";
      }
    }
    top += kHeader + int(a.output.size()) * kCell + kGap;
  }
  return svg + "</svg>\n";
}

} // namespace translate
