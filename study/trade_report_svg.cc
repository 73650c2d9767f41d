#include "study/trade_report_svg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "study/svg_elements.h"
#include "study/trade_report_builder.h"
#include "study/trade_report_svg_bars.h"
#include "study/trade_report_svg_classes.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

using svg::Line;
using svg::NiceStep;
using svg::Rect;
using svg::TickLabel;
using svg::Text;
using svg::kOneColor;
using svg::kRateColor;
using svg::kTwoColor;

constexpr int kWidth = 1000;
// Without per-class rows; the class panel below the loss panel adds to it.
constexpr int kMinHeight = 700;
constexpr double kClassPanelTop = 550;
constexpr char kPassColor[] = "#1a7f37";
constexpr char kFailColor[] = "#cf222e";
constexpr char kGreyColor[] = "#6e7781";
constexpr char kGridColor[] = "#e1e4e8";

std::string VerdictColor(const std::string& verdict) {
  if (verdict == kPass) return kPassColor;
  if (verdict == kFail) return kFailColor;
  return kGreyColor;
}

// Characters of UTF-8 `text` (not bytes: "×" is one).
double Characters(const std::string& text) {
  double count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

// The width of a chip for `text` at font size `size` (bold, about 0.57 em a
// character, plus padding).
double ChipWidth(const std::string& text, double size) {
  return 0.57 * size * Characters(text) + 18;
}

// A rounded label with a coloured outline.
std::string Chip(double x, double y, const std::string& text,
                 const std::string& color, double size) {
  const double width = ChipWidth(text, size);
  return absl::StrCat(
      absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                      "height=\"24\" rx=\"12\" fill=\"white\" stroke=\"%s\" "
                      "stroke-width=\"2\"/>\n",
                      x, y, width, color),
      Text(x + width / 2, y + 16.5, text, size,
           absl::StrCat("text-anchor=\"middle\" font-weight=\"bold\" fill=\"",
                        color, "\"")));
}

// "3+1", or "16 ranks" when spelling the split out would be long.
std::string SplitLabel(const ParityFigures& parity) {
  if (parity.split_size() > 4) return absl::StrCat(parity.split_size(), " ranks");
  return absl::StrJoin(parity.split(), "+");
}

std::string Verdicts(const TradeReport& report) {
  std::string svg;
  const CheckpointFigures& checkpoint = report.checkpoint_cost();
  std::string cost_text = absl::StrCat("checkpoint cost: ", kNotMeasured);
  std::string cost_color = kGreyColor;
  if (checkpoint.status() == kMeasured) {
    const CheckpointCost& cost = checkpoint.cost();
    cost_color = "#24292f";
    cost_text = absl::StrFormat("checkpoint: %.0f KiB, %.1f ms",
                                cost.bytes_per_generation() / 1024,
                                1000 * cost.save_seconds_median());
    if (cost.save_vs_sequential_ratio() > 0) {
      absl::StrAppendFormat(&cost_text, " (%.1f× an fsync'd write)",
                            cost.save_vs_sequential_ratio());
    }
  }
  struct Item {
    std::string text;
    std::string color;
  };
  const std::vector<Item> items = {
      {absl::StrCat("parity, 2 workers: ", report.parity().verdict()),
       VerdictColor(report.parity().verdict())},
      {absl::StrCat("parity, simulated ", SplitLabel(report.simulated_parity()),
                    ": ", report.simulated_parity().verdict()),
       VerdictColor(report.simulated_parity().verdict())},
      {absl::StrCat("recovery: ", report.recovery().verdict()),
       VerdictColor(report.recovery().verdict())},
      {cost_text, cost_color},
  };
  // One row across the page: a smaller font when the texts are long (the
  // text part of a chip's width scales with the font size).
  constexpr double kGap = 10, kLeft = 30;
  double size = 13;
  const double fixed = items.size() * (ChipWidth("", size) + kGap);
  double text_width = 0;
  for (const Item& item : items) {
    text_width += ChipWidth(item.text, size) - ChipWidth("", size);
  }
  const double room = kWidth - 2 * kLeft - fixed;
  if (text_width > room) size = std::max(8.0, size * room / text_width);
  double x = kLeft;
  for (const Item& item : items) {
    absl::StrAppend(&svg, Chip(x, 52, item.text, item.color, size));
    x += ChipWidth(item.text, size) + kGap;
  }
  return svg;
}

// The loss panel's plot area and scales: examples seen (x) and loss (y),
// each from 0 to a round number above the largest point of either run.
struct LossAxes {
  static constexpr double x0 = 80, x1 = 560, y0 = 125, y1 = 485;
  double max_x = 0, max_y = 0;
  double x_step = 1, y_step = 1;

  double px(double v) const { return x0 + (x1 - x0) * v / max_x; }
  double py(double v) const { return y1 - (y1 - y0) * v / max_y; }
};

LossAxes MakeLossAxes(const RunFigures& one, const RunFigures& two) {
  LossAxes axes;
  for (const RunFigures* run : {&one, &two}) {
    for (const LossPoint& p : run->loss_curve()) {
      axes.max_x = std::max(axes.max_x, static_cast<double>(p.examples_seen()));
      axes.max_y = std::max(axes.max_y, p.loss());
    }
  }
  axes.x_step = NiceStep(axes.max_x, 6);
  axes.y_step = NiceStep(axes.max_y, 6);
  axes.max_x = std::max(axes.x_step, std::ceil(axes.max_x / axes.x_step) * axes.x_step);
  axes.max_y = std::max(axes.y_step, std::ceil(axes.max_y / axes.y_step) * axes.y_step);
  return axes;
}

// The title, the grid with its tick labels, the axes and their labels.
std::string LossFrame(const LossAxes& a) {
  std::string svg;
  absl::StrAppend(&svg, Text(a.x0, a.y0 - 12, "Training loss against examples seen",
                             15, "font-weight=\"bold\""));
  for (double v = 0; v <= a.max_x + a.x_step / 2; v += a.x_step) {
    absl::StrAppend(&svg, Line(a.px(v), a.y0, a.px(v), a.y1, kGridColor, 1),
                    Text(a.px(v), a.y1 + 18, TickLabel(v, a.x_step), 12,
                         "text-anchor=\"middle\" fill=\"#57606a\""));
  }
  for (double v = 0; v <= a.max_y + a.y_step / 2; v += a.y_step) {
    absl::StrAppend(&svg, Line(a.x0, a.py(v), a.x1, a.py(v), kGridColor, 1),
                    Text(a.x0 - 8, a.py(v) + 4, TickLabel(v, a.y_step), 12,
                         "text-anchor=\"end\" fill=\"#57606a\""));
  }
  absl::StrAppend(&svg, Line(a.x0, a.y1, a.x1, a.y1, "#57606a", 1.2),
                  Line(a.x0, a.y0, a.x0, a.y1, "#57606a", 1.2));
  absl::StrAppend(&svg, Text((a.x0 + a.x1) / 2, a.y1 + 40, "examples seen (global)",
                             13, "text-anchor=\"middle\""));
  absl::StrAppend(
      &svg, Text(0, 0, "training loss", 13,
                 absl::StrFormat("text-anchor=\"middle\" transform=\"translate("
                                 "%.1f,%.1f) rotate(-90)\"",
                                 a.x0 - 48, (a.y0 + a.y1) / 2)));
  return svg;
}

// One run's loss curve.
std::string LossCurve(const LossAxes& a, const RunFigures& run,
                      const std::string& color, double width,
                      const std::string& attrs) {
  std::string points;
  for (const LossPoint& p : run.loss_curve()) {
    absl::StrAppendFormat(&points, "%.1f,%.1f ", a.px(p.examples_seen()),
                          a.py(p.loss()));
  }
  return absl::StrFormat(
      "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
      "stroke-width=\"%.1f\" stroke-linejoin=\"round\" %s/>\n",
      points, color, width, attrs);
}

// The legend, in the top corner that hides fewer points.
std::string LossLegend(const LossAxes& a, const TradeReport& report) {
  constexpr double kLegendWidth = 222, kLegendHeight = 70;
  auto points_under = [&](double rx, double ry) {
    int count = 0;
    for (const RunFigures* run : {&report.one_worker(), &report.two_workers()}) {
      for (const LossPoint& p : run->loss_curve()) {
        const double x = a.px(p.examples_seen()), y = a.py(p.loss());
        if (x >= rx && x <= rx + kLegendWidth && y >= ry &&
            y <= ry + kLegendHeight) {
          ++count;
        }
      }
    }
    return count;
  };
  const double ly = a.y0 + 10;
  const double left = a.x0 + 10, right = a.x1 - kLegendWidth - 8;
  const double lx = points_under(left, ly) < points_under(right, ly) ? left : right;
  std::string svg;
  absl::StrAppend(&svg, Rect(lx, ly, kLegendWidth, kLegendHeight, "white",
                             "stroke=\"#d0d7de\" fill-opacity=\"0.92\""));
  absl::StrAppend(&svg,
                  Line(lx + 10, ly + 18, lx + 44, ly + 18, kOneColor, 4.5,
                       "stroke-opacity=\"0.55\""),
                  Text(lx + 52, ly + 22, "one worker", 13));
  absl::StrAppend(&svg,
                  Line(lx + 10, ly + 40, lx + 44, ly + 40, kTwoColor, 2,
                       "stroke-dasharray=\"7 4\""),
                  Text(lx + 52, ly + 44, "two workers", 13));
  const std::string gap =
      report.loss_curves_max_abs_diff() >= 0
          ? absl::StrFormat("curves differ by at most %.2g",
                            report.loss_curves_max_abs_diff())
          : std::string("curves not comparable point by point");
  absl::StrAppend(&svg, Text(lx + 10, ly + 62, gap, 11, "fill=\"#57606a\""));
  return svg;
}

// The rate each update of `run` stepped with, as a thin dotted line on its
// own scale (0 at the bottom, the largest rate near the top, both labelled
// "lr" on the right-hand axis); nothing when the run recorded no rate.
std::string LearningRateLine(const LossAxes& a, const RunFigures& run) {
  double max_rate = 0;
  for (const LossPoint& p : run.loss_curve()) {
    max_rate = std::max(max_rate, p.learning_rate());
  }
  if (!(max_rate > 0)) return "";
  // A constant rate would lie on the top edge; keep it below the frame.
  const double top = 1.1 * max_rate;
  std::string points;
  for (const LossPoint& p : run.loss_curve()) {
    absl::StrAppendFormat(&points, "%.1f,%.1f ", a.px(p.examples_seen()),
                          a.y1 - (a.y1 - a.y0) * p.learning_rate() / top);
  }
  const double label_y = a.y1 - (a.y1 - a.y0) * max_rate / top;
  return absl::StrCat(
      absl::StrFormat(
          "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
          "stroke-width=\"1.2\" stroke-dasharray=\"2 3\"/>\n",
          points, kRateColor),
      Text(a.x1 + 6, label_y + 4, absl::StrFormat("lr %.3g", max_rate), 11,
           absl::StrCat("fill=\"", kRateColor, "\"")),
      Text(a.x1 + 6, a.y1 + 4, "lr 0", 11,
           absl::StrCat("fill=\"", kRateColor, "\"")));
}

// Left panel: loss against examples seen, and the two-worker run's
// learning rate per update.
std::string LossPanel(const TradeReport& report) {
  const LossAxes axes = MakeLossAxes(report.one_worker(), report.two_workers());
  return absl::StrCat(
      LossFrame(axes), LearningRateLine(axes, report.two_workers()),
      LossCurve(axes, report.one_worker(), kOneColor, 4.5, "stroke-opacity=\"0.55\""),
      LossCurve(axes, report.two_workers(), kTwoColor, 2, "stroke-dasharray=\"7 4\""),
      LossLegend(axes, report));
}

// The picture's height: room for the class panel and the footnote.
int PictureHeight(const TradeReport& report) {
  return std::max(kMinHeight, static_cast<int>(std::ceil(
                                  kClassPanelTop + ClassF1PanelHeight(report) + 50)));
}

}  // namespace

std::string TradeReportSvg(const TradeReport& report) {
  const int height = PictureHeight(report);
  std::string svg = svg::DocumentStart(kWidth, height);
  absl::StrAppend(&svg, Text(30, 34,
                             "Receipt classifier: one worker against two", 20,
                             "font-weight=\"bold\""));
  absl::StrAppend(&svg, Verdicts(report), LossPanel(report), BarsPanel(report),
                  ClassF1Panel(report, kClassPanelTop));
  // Two lines: one would run past the picture's right edge.
  absl::StrAppend(
      &svg,
      Text(30, height - 28,
           absl::StrFormat("Loss: global weighted loss of each update. Examples/s: median "
                           "over timing windows after %d warm-up updates.",
                           report.two_workers().warmup_updates()),
           11, "fill=\"#57606a\""),
      Text(30, height - 14, "Sync: time in the gradient reducer. From trade_report.json.", 11,
           "fill=\"#57606a\""));
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace receipt_parity
