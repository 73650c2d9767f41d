#include "study/svg_elements.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
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

std::string DocumentStart(double width, double height) {
  return absl::StrCat(
      absl::StrFormat(
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"%s\" fill=\"#24292f\">\n",
          width, height, width, height, kFont),
      Rect(0, 0, width, height, "white"));
}

double NiceStep(double range, int target) {
  if (!(range > 0)) return 1;
  const double raw = range / target;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string TickLabel(double value, double step) {
  const int digits = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  return absl::StrFormat("%.*f", digits, value);
}

}  // namespace svg
}  // namespace receipt_parity
