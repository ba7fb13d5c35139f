//===- TuneReport.cpp - attn-tune's table and pictures --------------------===//

#include "TuneReport.h"

#include <algorithm>
#include <cstdio>

namespace attn::tune {
namespace {
std::string format(const char *pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '<'   ? "&lt;"
           : c == '>' ? "&gt;"
           : c == '&' ? "&amp;"
                      : std::string(1, c);
  return out;
}
} // namespace

std::string renderTable(const std::vector<KernelResult> &results) {
  std::string text;
  for (const KernelResult &r : results) {
    const bool prefill = r.kernel.prefill;
    text += r.kernel.symbol + " (" +
            (prefill ? "length " + std::to_string(r.kernel.length)
                     : "batch " + std::to_string(r.kernel.batch) +
                           ", context " + std::to_string(r.kernel.length)) +
            ")\n";
    for (size_t i = 0; i < r.measured.size(); i++) {
      const Measured &m = r.measured[i];
      text += (i == r.best ? "  * " : "    ") + m.schedule.describe(prefill) +
              format("  %9.3f ms", m.seconds * 1e3) +
              format("  %8.2f GFLOP/s", m.gflops) +
              format("  %8.2f GB/s", m.gbps) +
              (m.isDefault ? "  (default)" : "") + "\n";
    }
    text += format("  best/default %.2fx", r.speedup()) +
            (r.keptDefault ? ": the default stays\n" : ": tuned\n");
  }
  return text;
}

std::string renderSvg(const KernelResult &r, const Limits &limits) {
  const bool prefill = r.kernel.prefill;
  auto value = [&](const Measured &m) { return prefill ? m.gflops : m.gbps; };
  const double roof = prefill ? limits.fmaGflops : limits.triadGBps;
  double top = roof;
  for (const Measured &m : r.measured)
    top = std::max(top, value(m));
  const int rowHeight = 18, left = 330, width = 420,
            height = 60 + rowHeight * int(r.measured.size()) + 30;
  auto x = [&](double v) { return left + v / top * width; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(left + width + 40) + "\" height=\"" +
                    std::to_string(height) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n"
                    "<text x=\"10\" y=\"20\" font-size=\"14\">" +
                    escape(r.kernel.symbol) + ": " +
                    (prefill ? "GFLOP/s" : "GB/s") + " per schedule candidate" +
                    "</text>\n";
  int y = 40;
  for (size_t i = 0; i < r.measured.size(); i++, y += rowHeight) {
    const Measured &m = r.measured[i];
    const char *fill = i == r.best ? "#2a7" : m.isDefault ? "#c44" : "#89a";
    svg += "<text x=\"" + std::to_string(left - 6) + "\" y=\"" +
           std::to_string(y + 12) + "\" text-anchor=\"end\">" +
           escape(m.schedule.describe(prefill)) + "</text>\n";
    svg += "<rect x=\"" + std::to_string(left) + "\" y=\"" +
           std::to_string(y + 2) + "\" width=\"" +
           format("%.1f", x(value(m)) - left) + "\" height=\"" +
           std::to_string(rowHeight - 4) + "\" fill=\"" + fill + "\"/>\n";
    svg += "<text x=\"" + format("%.1f", x(value(m)) + 4) + "\" y=\"" +
           std::to_string(y + 12) + "\">" + format("%.1f", value(m)) +
           "</text>\n";
  }
  auto rule = [&](double v, const char *color, const std::string &label) {
    svg += "<line x1=\"" + format("%.1f", x(v)) + "\" y1=\"36\" x2=\"" +
           format("%.1f", x(v)) + "\" y2=\"" + std::to_string(y + 4) +
           "\" stroke=\"" + color + "\" stroke-dasharray=\"4 3\"/>\n" +
           "<text x=\"" + format("%.1f", x(v)) + "\" y=\"" +
           std::to_string(y + 18) + "\" fill=\"" + color +
           "\" text-anchor=\"middle\">" + escape(label) + "</text>\n";
  };
  rule(value(r.measured[0]), "#c44", "default");
  if (roof > 0)
    rule(roof, "#555",
         prefill ? "fp32 FMA peak " + format("%.0f", roof)
                 : "STREAM triad " + format("%.1f", roof));
  return svg + "</svg>\n";
}

} // namespace attn::tune
