// world_size_change.svg (study/trade_report_svg.h): the world-size-change
// stage's loss curves against the run's update index, the uninterrupted
// run's and each continuation's from the update it resumed at, with the
// data-order and parameter differences in the legend.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "study/svg_elements.h"
#include "study/trade_report_svg.h"

namespace receipt_parity {
namespace {

using svg::Line;
using svg::NiceStep;
using svg::Rect;
using svg::Text;
using svg::TickLabel;

constexpr double kWidth = 900, kHeight = 520;
constexpr double kX0 = 80, kX1 = 600, kY0 = 70, kY1 = 440;
constexpr char kGridColor[] = "#e1e4e8";
// The uninterrupted run, then each continuation.
constexpr char kUninterruptedColor[] = "#6e7781";
constexpr const char* kContinuationColors[] = {svg::kOneColor, svg::kTwoColor, svg::kMpiColor};
constexpr const char* kContinuationDashes[] = {"7 4", "2 3", "10 3 2 3"};

struct Axes {
  double max_x = 1, max_y = 1, x_step = 1, y_step = 1;
  double px(double v) const { return kX0 + (kX1 - kX0) * v / max_x; }
  double py(double v) const { return kY1 - (kY1 - kY0) * v / max_y; }
};

Axes MakeAxes(const WorldSizeChangeFigures& f) {
  Axes a;
  a.max_x = 0;
  a.max_y = 0;
  auto widen = [&](const google::protobuf::RepeatedPtrField<LossPoint>& curve) {
    for (const LossPoint& p : curve) {
      a.max_x = std::max(a.max_x, static_cast<double>(p.update()));
      a.max_y = std::max(a.max_y, p.loss());
    }
  };
  widen(f.uninterrupted_loss_curve());
  for (const WorldSizeContinuation& c : f.continuations()) widen(c.loss_curve());
  a.x_step = NiceStep(a.max_x, 6);
  a.y_step = NiceStep(a.max_y, 6);
  a.max_x = std::max(a.x_step, std::ceil(a.max_x / a.x_step) * a.x_step);
  a.max_y = std::max(a.y_step, std::ceil(a.max_y / a.y_step) * a.y_step);
  return a;
}

std::string Frame(const Axes& a, const WorldSizeChangeFigures& f) {
  std::string svg = Text(kX0, 30, "Loss per update: the run continued on another number of "
                                  "workers, over the uninterrupted run",
                         15, "font-weight=\"bold\"");
  absl::StrAppend(&svg, Text(kX0, 50,
                             absl::StrCat("uninterrupted on ", f.world_size(),
                                          " workers (", f.source(), ")"),
                             12, "fill=\"#57606a\""));
  for (double v = 0; v <= a.max_x + a.x_step / 2; v += a.x_step) {
    absl::StrAppend(&svg, Line(a.px(v), kY0, a.px(v), kY1, kGridColor, 1),
                    Text(a.px(v), kY1 + 18, TickLabel(v, a.x_step), 12,
                         "text-anchor=\"middle\" fill=\"#57606a\""));
  }
  for (double v = 0; v <= a.max_y + a.y_step / 2; v += a.y_step) {
    absl::StrAppend(&svg, Line(kX0, a.py(v), kX1, a.py(v), kGridColor, 1),
                    Text(kX0 - 8, a.py(v) + 4, TickLabel(v, a.y_step), 12,
                         "text-anchor=\"end\" fill=\"#57606a\""));
  }
  absl::StrAppend(&svg, Line(kX0, kY1, kX1, kY1, "#57606a", 1.2),
                  Line(kX0, kY0, kX0, kY1, "#57606a", 1.2),
                  Text((kX0 + kX1) / 2, kY1 + 40, "update", 13, "text-anchor=\"middle\""));
  return svg;
}

std::string Curve(const Axes& a, const google::protobuf::RepeatedPtrField<LossPoint>& curve,
                  const std::string& color, double width, const std::string& attrs) {
  std::string points;
  for (const LossPoint& p : curve) {
    absl::StrAppendFormat(&points, "%.1f,%.1f ", a.px(p.update()), a.py(p.loss()));
  }
  return absl::StrFormat(
      "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
      "stroke-linejoin=\"round\" %s/>\n",
      points, color, width, attrs);
}

// "same receipts in every update" or "N of M updates train other receipts".
std::string DataOrder(const WorldSizeContinuation& c) {
  if (c.changed_updates() == 0) return "data order: every update the same";
  return absl::StrCat("data order: ", c.changed_updates(), " of ", c.remaining_updates(),
                      " updates differ");
}

std::string Parameters(const WorldSizeContinuation& c) {
  return c.final_parameters_equal() ? "parameters: bitwise equal at the end"
                                    : "parameters: differ at the end";
}

// The legend beside the plot: one entry per run, and the twin's data order.
std::string Legend(const WorldSizeChangeFigures& f) {
  const double x = kX1 + 24;
  double y = kY0 + 6;
  std::string svg = Line(x, y, x + 34, y, kUninterruptedColor, 5, "stroke-opacity=\"0.5\"");
  absl::StrAppend(&svg, Text(x + 42, y + 4, "uninterrupted", 13));
  for (int i = 0; i < f.continuations_size() && i < 3; ++i) {
    const WorldSizeContinuation& c = f.continuations(i);
    y += 74;
    absl::StrAppend(
        &svg,
        Line(x, y, x + 34, y, kContinuationColors[i], 2,
             absl::StrCat("stroke-dasharray=\"", kContinuationDashes[i], "\"")),
        Text(x + 42, y + 4,
             absl::StrCat("on ", c.new_world_size(), " from update ", c.resumed_at_update()),
             13),
        Text(x + 42, y + 22, DataOrder(c), 11, "fill=\"#57606a\""),
        Text(x + 42, y + 38, Parameters(c), 11, "fill=\"#57606a\""));
  }
  const WorldSizeContinuation& twin = f.duplicate_pad();
  y += 84;
  absl::StrAppend(
      &svg, Rect(x - 8, y - 18, kWidth - x - 4, 62, "#f6f8fa", "stroke=\"#d0d7de\""),
      Text(x, y, absl::StrCat(twin.policy(), " on ", twin.old_world_size(), " -> ",
                              twin.new_world_size(), " (allowed, not plotted):"),
           12),
      Text(x, y + 18, DataOrder(twin), 11, "fill=\"#57606a\""),
      Text(x, y + 34,
           absl::StrCat("duplicate slots ", twin.old_duplicate_slots(), " -> ",
                        twin.new_duplicate_slots(), ", ", twin.skipped_ids(), " skipped, ",
                        twin.repeated_ids(), " twice"),
           11, "fill=\"#57606a\""));
  return svg;
}

}  // namespace

std::string WorldSizeChangeSvg(const WorldSizeChangeFigures& figures) {
  const Axes axes = MakeAxes(figures);
  std::string svg = svg::DocumentStart(kWidth, kHeight);
  absl::StrAppend(&svg, Frame(axes, figures),
                  Curve(axes, figures.uninterrupted_loss_curve(), kUninterruptedColor, 5,
                        "stroke-opacity=\"0.5\""));
  for (int i = 0; i < figures.continuations_size() && i < 3; ++i) {
    absl::StrAppend(&svg, Curve(axes, figures.continuations(i).loss_curve(),
                                kContinuationColors[i], 2,
                                absl::StrCat("stroke-dasharray=\"", kContinuationDashes[i],
                                             "\"")));
  }
  absl::StrAppend(&svg, Legend(figures), "</svg>\n");
  return svg;
}

}  // namespace receipt_parity
