#include "study/trade_report_svg_classes.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "study/svg_elements.h"

namespace receipt_parity {
namespace {

using svg::Line;
using svg::Rect;
using svg::Text;

// Labels from x = 30; F1 0..1 maps to kBarX..kBarX + kBarMax.
constexpr double kLabelX = 30, kBarX = 160, kBarMax = 360;
constexpr double kTitleHeight = 30, kRowHeight = 34, kAxisHeight = 24;
constexpr char kGridColor[] = "#e1e4e8";

// The F1 of `label` in `validation`, or -1 when it has no such class.
double F1Of(const ValidationFigures& validation, const std::string& label) {
  for (const ClassMetrics& c : validation.per_class()) {
    if (c.label() == label) return c.f1();
  }
  return -1;
}

std::string F1Bar(double y, double f1, const char* color) {
  if (f1 < 0) return "";
  const double w = kBarMax * std::clamp(f1, 0.0, 1.0);
  return absl::StrCat(Rect(kBarX, y, w, 12, color),
                      Text(kBarX + w + 6, y + 10.5, absl::StrFormat("%.3f", f1),
                           11, "font-weight=\"bold\""));
}

std::string Grid(double y0, double y1) {
  std::string svg;
  for (int i = 0; i <= 4; ++i) {
    const double x = kBarX + kBarMax * i / 4.0;
    absl::StrAppend(&svg, Line(x, y0, x, y1, kGridColor, 1),
                    Text(x, y1 + 16, absl::StrFormat("%.2f", i / 4.0), 11,
                         "text-anchor=\"middle\" fill=\"#57606a\""));
  }
  return svg;
}

}  // namespace

double ClassF1PanelHeight(const TradeReport& report) {
  return kTitleHeight +
         kRowHeight * report.one_worker().validation().per_class_size() +
         kAxisHeight;
}

std::string ClassF1Panel(const TradeReport& report, double top) {
  const ValidationFigures& one = report.one_worker().validation();
  const ValidationFigures& two = report.two_workers().validation();
  std::string svg = Text(kLabelX, top + 15,
                         "Validation F1 per class (receipts)", 15,
                         "font-weight=\"bold\"");
  absl::StrAppend(&svg, Rect(kBarX + 200, top + 5, 12, 12, svg::kOneColor),
                  Text(kBarX + 217, top + 15, "one worker", 12),
                  Rect(kBarX + 300, top + 5, 12, 12, svg::kTwoColor),
                  Text(kBarX + 317, top + 15, "two workers", 12));
  const double rows_top = top + kTitleHeight;
  const double rows_bottom = rows_top + kRowHeight * one.per_class_size();
  absl::StrAppend(&svg, Grid(rows_top, rows_bottom));
  double y = rows_top;
  for (const ClassMetrics& c : one.per_class()) {
    absl::StrAppend(
        &svg,
        Text(kLabelX, y + 20, absl::StrFormat("%s (%d)", c.label(), c.support()),
             13),
        F1Bar(y + 4, c.f1(), svg::kOneColor),
        F1Bar(y + 18, F1Of(two, c.label()), svg::kTwoColor));
    y += kRowHeight;
  }
  return svg;
}

}  // namespace receipt_parity
