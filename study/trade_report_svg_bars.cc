#include "study/trade_report_svg_bars.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "study/svg_elements.h"
#include "study/trade_report_builder.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

using svg::Rect;
using svg::Text;
using svg::kBf16Color;
using svg::kMpiColor;
using svg::kOneColor;
using svg::kSyncColor;
using svg::kTwoColor;

struct Bar {
  std::string label;
  std::string color;
  double value;
};

// Right panel: examples/s, and time per update split into compute + sync.
// Where the right-hand panels draw: labels, then bars up to bar_max wide.
constexpr double kLabelX = 640, kBarX = 730, kBarMax = 150;

// The ratio lines under the examples/s bars: two over one, MPI over Gloo
// and bf16 over fp32 where measured.
std::vector<std::string> ThroughputRatios(const TradeReport& report) {
  std::vector<std::string> lines = {
      absl::StrFormat("two workers = %.2f× one worker",
                      report.two_over_one_examples_per_second())};
  const MpiFigures& mpi = report.two_workers_mpi();
  if (mpi.status() == kMeasured) {
    lines.push_back(absl::StrFormat(
        "MPI = %.2f× Gloo%s", mpi.over_gloo_examples_per_second(),
        mpi.final_parameters_equal_to_gloo() ? ", same final parameters"
                                             : ", final parameters differ"));
  }
  const PrecisionFigures& bf16 = report.two_workers_bf16();
  if (bf16.status() == kMeasured) {
    lines.push_back(absl::StrFormat("bf16 = %.2f× fp32, parity %s",
                                    bf16.over_fp32_examples_per_second(),
                                    bf16.parity_verdict()));
  }
  return lines;
}

// Examples per second, one bar per run (the runs over MPI and in bf16 when
// measured, the bars closer then), and the ratio lines.
std::string ThroughputBars(const TradeReport& report) {
  const RunFigures& one = report.one_worker();
  const RunFigures& two = report.two_workers();
  const MpiFigures& mpi = report.two_workers_mpi();
  const PrecisionFigures& bf16 = report.two_workers_bf16();
  std::vector<Bar> rates = {
      {"one worker", kOneColor, one.examples_per_second()},
      {"two workers", kTwoColor, two.examples_per_second()}};
  if (mpi.status() == kMeasured) {
    rates.push_back({"two (MPI)", kMpiColor, mpi.run().examples_per_second()});
  }
  if (bf16.status() == kMeasured) {
    rates.push_back({"two (bf16)", kBf16Color, bf16.run().examples_per_second()});
  }
  const std::vector<std::string> ratios = ThroughputRatios(report);
  // Bars and ratio lines end above the next panel's title (y 273): two bars
  // 24 high every 36, three 22 every 30, four 16 every 21; ratio lines every
  // 16, every 14 when there are three.
  const size_t bars = rates.size();
  const double step = bars <= 2 ? 36 : bars == 3 ? 30 : 21;
  const double height = bars <= 2 ? 24 : bars == 3 ? 22 : 16;
  const double line_step = ratios.size() > 2 ? 14 : 16;
  double y = 125;
  std::string svg = Text(kLabelX, y - 12, "Examples per second", 15,
                         "font-weight=\"bold\"");
  double max_rate = 1e-12;
  for (const Bar& bar : rates) max_rate = std::max(max_rate, bar.value);
  for (const Bar& bar : rates) {
    const double w = kBarMax * bar.value / max_rate;
    absl::StrAppend(&svg, Text(kLabelX, y + height - 2, bar.label, 13),
                    Rect(kBarX, y + 6, w, height, bar.color),
                    Text(kBarX + w + 6, y + height - 1,
                         absl::StrFormat("%.0f", bar.value), 13,
                         "font-weight=\"bold\""));
    y += step;
  }
  for (const std::string& line : ratios) {
    y += line_step;
    absl::StrAppend(&svg, Text(kLabelX, y, line, 13, "fill=\"#57606a\""));
  }
  return svg;
}

// Time per update, compute then sync, one stacked bar per run, and the
// legend; `*y` ends below the legend.
std::string UpdateTimeBars(const TradeReport& report, double* y) {
  const RunFigures& one = report.one_worker();
  const RunFigures& two = report.two_workers();
  *y = 285;
  std::string svg = Text(kLabelX, *y - 12, "Time per update (ms)", 15,
                         "font-weight=\"bold\"");
  const double max_update =
      std::max({one.update_seconds(), two.update_seconds(), 1e-12});
  for (const RunFigures* run : {&one, &two}) {
    const bool is_one = run == &one;
    const double total = run->update_seconds();
    const double sync = std::min(run->sync_seconds_per_update(), total);
    const double w_total = kBarMax * total / max_update;
    const double w_sync = kBarMax * sync / max_update;
    absl::StrAppend(&svg,
                    Text(kLabelX, *y + 22, is_one ? "one worker" : "two workers",
                         13),
                    Rect(kBarX, *y + 6, w_total - w_sync, 24,
                         is_one ? kOneColor : kTwoColor),
                    Rect(kBarX + w_total - w_sync, *y + 6, w_sync, 24,
                         kSyncColor),
                    Text(kBarX + w_total + 6, *y + 23,
                         absl::StrFormat("%.2f", 1000 * total), 13,
                         "font-weight=\"bold\""));
    absl::StrAppend(
        &svg, Text(kBarX, *y + 46,
                   absl::StrFormat("sync %.2f ms = %.0f %% of an update",
                                   1000 * run->sync_seconds_per_update(),
                                   100 * run->sync_share()),
                   12, absl::StrCat("fill=\"", kSyncColor, "\"")));
    *y += 62;
  }
  absl::StrAppend(&svg, Rect(kLabelX, *y + 8, 6, 12, kOneColor),
                  Rect(kLabelX + 6, *y + 8, 6, 12, kTwoColor),
                  Text(kLabelX + 18, *y + 18, "forward, backward, step", 12),
                  Rect(kLabelX + 175, *y + 8, 12, 12, kSyncColor),
                  Text(kLabelX + 193, *y + 18, "gradient sync", 12));
  return svg;
}

// Peak memory, one line per run, from `y` down; `*y` ends at the last line.
std::string MemoryLines(const TradeReport& report, double* y) {
  std::string svg = Text(kLabelX, *y, "Peak resident memory per rank (MiB)", 15,
                         "font-weight=\"bold\"");
  for (const RunFigures* run : {&report.one_worker(), &report.two_workers()}) {
    std::string line =
        run == &report.one_worker() ? "one worker: " : "two workers: ";
    for (int i = 0; i < run->ranks_size(); ++i) {
      absl::StrAppendFormat(&line, "%srank %d %.0f", i > 0 ? ", " : "",
                            run->ranks(i).rank(), run->ranks(i).peak_rss_mib());
    }
    *y += 20;
    absl::StrAppend(&svg, Text(kLabelX, *y, line, 13));
  }
  return svg;
}

// Who came last to the gradient reduction with two workers: per rank, a
// bar as long as its share of the timed updates it was last at, with its
// median and p90 lateness; from `y` down.
std::string StragglerBars(const TradeReport& report, double y) {
  const RunFigures& two = report.two_workers();
  std::string svg = Text(kLabelX, y, "Last to the gradient sync (two workers)", 15,
                         "font-weight=\"bold\"");
  if (two.lateness_size() == 0) {
    return absl::StrCat(svg, Text(kLabelX, y + 20, "not measured", 13,
                                  "fill=\"#57606a\""));
  }
  // Each rank's figures on their own line under its bar, from the bar's
  // start: beside a long bar they would leave the picture.
  for (const RankLateness& rank : two.lateness()) {
    const double share =
        rank.updates() > 0 ? static_cast<double>(rank.times_last()) / rank.updates() : 0;
    const bool straggler = rank.rank() == two.straggler_rank();
    absl::StrAppend(
        &svg, Text(kLabelX, y + 24, absl::StrCat("rank ", rank.rank()), 13,
                   straggler ? "font-weight=\"bold\"" : ""),
        Rect(kBarX, y + 10, kBarMax * share, 18, straggler ? kTwoColor : kSyncColor),
        Text(kBarX, y + 40,
             absl::StrFormat("%d of %d; late %.2f / %.2f ms", rank.times_last(),
                             rank.updates(), 1000 * rank.median_lateness_seconds(),
                             1000 * rank.p90_lateness_seconds()),
             11));
    y += 38;
  }
  return absl::StrCat(svg, Text(kLabelX, y + 24,
                                "bar: share of timed updates last; late: median / p90",
                                11, "fill=\"#57606a\""));
}

}  // namespace

std::string BarsPanel(const TradeReport& report) {
  double y = 0;
  std::string svg = ThroughputBars(report);
  absl::StrAppend(&svg, UpdateTimeBars(report, &y));
  y += 50;
  absl::StrAppend(&svg, MemoryLines(report, &y));
  absl::StrAppend(&svg, StragglerBars(report, y + 38));
  return svg;
}

}  // namespace receipt_parity
