//===- Heatmap.h - cross-attention as an SVG heat map -----------*- C++ -*-===//

#ifndef ATTN_EXAMPLES_TRANSLATE_HEATMAP_H
#define ATTN_EXAMPLES_TRANSLATE_HEATMAP_H

#include <string>
#include <vector>

namespace translate {

/// One input's alignment: `weights[i][j]` is how much output word i
/// attended to source character j (rows sum to 1).
struct Alignment {
  std::vector<std::string> source, output;
  std::vector<std::vector<float>> weights;
};

/// Renders the alignments as one SVG, a heat map per input stacked
/// vertically: source characters across, output words down.
std::string renderHeatmaps(const std::vector<Alignment> &alignments);

} // namespace translate

#endif // ATTN_EXAMPLES_TRANSLATE_HEATMAP_H
