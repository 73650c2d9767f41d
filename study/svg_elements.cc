#include "study/svg_elements.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace receipt_parity {
namespace svg {

std::string Escape(const std::string& text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"},
                                    {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string Text(double x, double y, const std::string& text, double size,
                 const std::string& attrs) {
  return absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" %s>%s</text>\n", x, y,
      size, attrs, Escape(text));
}

std::string Line(double x1, double y1, double x2, double y2,
                 const std::string& stroke, double width,
                 const std::string& attrs) {
  return absl::StrFormat(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
      "stroke-width=\"%.1f\" %s/>\n",
      x1, y1, x2, y2, stroke, width, attrs);
}

std::string Rect(double x, double y, double w, double h,
                 const std::string& fill, const std::string& attrs) {
  return absl::StrFormat(
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
      "fill=\"%s\" %s/>\n",
      x, y, std::max(0.0, w), std::max(0.0, h), fill, attrs);
}

}  // namespace svg
}  // namespace receipt_parity
