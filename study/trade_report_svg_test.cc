#include "study/trade_report_svg.h"

#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/trade_report_builder.h"
#include "study/trade_report_test_inputs.h"
#include "drill/drill_report.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TradeReport Build(const TradeReportInputs& inputs) {
  absl::StatusOr<TradeReport> report = BuildTradeReport(inputs);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : TradeReport();
}

TEST(TradeReportSvgTest, IsOneStandaloneDocument) {
  const std::string svg = TradeReportSvg(Build(TestInputs()));
  EXPECT_THAT(svg, StartsWith("<?xml"));
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, EndsWith("</svg>\n"));
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<svg"), 1);
}

TEST(TradeReportSvgTest, DrawsBothLossCurvesPointByPoint) {
  const std::string svg = TradeReportSvg(Build(TestInputs()));
  // Both loss curves and the learning rate's line.
  EXPECT_EQ(Count(svg, "<polyline"), 3);
  // 4 points each: "x,y " four times.
  const size_t first = svg.find("<polyline points=\"");
  ASSERT_NE(first, std::string::npos);
  const std::string points =
      svg.substr(first + 18, svg.find('"', first + 18) - first - 18);
  EXPECT_EQ(Count(points, ","), 4);
  EXPECT_THAT(svg, HasSubstr("one worker"));
  EXPECT_THAT(svg, HasSubstr("two workers"));
  EXPECT_THAT(svg, HasSubstr("curves differ by at most 1e-06"));
}

TEST(TradeReportSvgTest, LabelsThroughputAndSync) {
  const std::string svg = TradeReportSvg(Build(TestInputs()));
  EXPECT_THAT(svg, HasSubstr(">1000<"));  // one worker's examples/s, rounded
  EXPECT_THAT(svg, HasSubstr(">2000<"));
  EXPECT_THAT(svg, HasSubstr("two workers = 2.00× one worker"));
  EXPECT_THAT(svg, HasSubstr("sync 1.00 ms = 10 % of an update"));
  EXPECT_THAT(svg, HasSubstr("two workers: rank 0 110, rank 1 111"));
}

// The y of the <text> holding exactly `text`; -1 when there is none.
double TextY(const std::string& svg, const std::string& text) {
  const std::regex element("<text x=\"[0-9.]+\" y=\"([0-9.]+)\"[^>]*>" + text +
                           "</text>");
  std::smatch match;
  return std::regex_search(svg, match, element) ? std::stod(match[1]) : -1;
}

TEST(TradeReportSvgTest, WithoutARunOverMpiThereAreTwoExamplesPerSecondBars) {
  const std::string svg = TradeReportSvg(Build(TestInputs()));
  EXPECT_THAT(svg, Not(HasSubstr("two (MPI)")));
  EXPECT_THAT(svg, Not(HasSubstr("Gloo")));
  EXPECT_EQ(Count(svg, "fill=\"#1b998b\""), 0);
  // The two bars where they always were: 24 high every 36 from y 131.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"730.0\" y=\"131.0\" width=\"75.0\" "
                             "height=\"24.0\""));
  EXPECT_THAT(svg, HasSubstr("<rect x=\"730.0\" y=\"167.0\" width=\"150.0\" "
                             "height=\"24.0\""));
}

TEST(TradeReportSvgTest, ARunOverMpiGetsAThirdBarAboveTheNextPanel) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_mpi = TestMpiRun();
  const std::string svg = TradeReportSvg(Build(inputs));
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_THAT(svg, HasSubstr(">two (MPI)</text>"));
  EXPECT_THAT(svg, HasSubstr(">2500</text>"));  // MPI's examples/s, rounded
  // The fastest bar is the longest: MPI's, 150 px; Gloo's 150 x 2000.5 / 2500.5.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"730.0\" y=\"191.0\" width=\"150.0\" "
                             "height=\"22.0\" fill=\"#1b998b\""));
  EXPECT_THAT(svg, HasSubstr("<rect x=\"730.0\" y=\"161.0\" width=\"120.0\" "
                             "height=\"22.0\""));
  EXPECT_THAT(svg, HasSubstr("two workers = 2.00× one worker"));
  // Both ratio lines end above the time-per-update panel's title.
  const double ratio = TextY(svg, "MPI = 1.25× Gloo, same final parameters");
  const double title = TextY(svg, "Time per update \\(ms\\)");
  ASSERT_GT(ratio, 0);
  ASSERT_GT(title, 0);
  EXPECT_LE(ratio + 4, title - 15);
  EXPECT_LT(TextY(svg, "two workers = 2.00× one worker"), ratio);
}

TEST(TradeReportSvgTest, RunsOverMpiAndInBf16GetFourBarsAboveTheNextPanel) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_mpi = TestMpiRun();
  inputs.two_workers_bf16 = TestBf16Run();
  const std::string svg = TradeReportSvg(Build(inputs));
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_THAT(svg, HasSubstr(">two (bf16)</text>"));
  EXPECT_THAT(svg, HasSubstr(">1800</text>"));  // bf16's examples/s, rounded
  // The fourth bar: 16 high, 21 below MPI's; 150 x 1800.5 / 2500.5 long.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"730.0\" y=\"194.0\" width=\"108.0\" "
                             "height=\"16.0\" fill=\"#bf3989\""));
  // Three ratio lines, all above the time-per-update panel's title.
  const double two = TextY(svg, "two workers = 2.00× one worker");
  const double mpi = TextY(svg, "MPI = 1.25× Gloo, same final parameters");
  const double bf16 = TextY(svg, "bf16 = 0.90× fp32, parity pass");
  const double title = TextY(svg, "Time per update \\(ms\\)");
  ASSERT_GT(two, 0);
  ASSERT_GT(mpi, two);
  ASSERT_GT(bf16, mpi);
  EXPECT_LE(bf16 + 4, title - 15);
}

TEST(TradeReportSvgTest, DrawsTheLearningRateOnItsOwnScale) {
  const std::string svg = TradeReportSvg(Build(TestInputs()));
  // TestRun's rates 0.01, 0.01, 0.005, 0.005: the largest labelled, a
  // dotted line from 0.01 (at 1/1.1 of the plot's height) down to half.
  EXPECT_THAT(svg, HasSubstr(">lr 0.01</text>"));
  EXPECT_THAT(svg, HasSubstr(">lr 0</text>"));
  EXPECT_EQ(Count(svg, "stroke=\"#6e7781\" stroke-width=\"1.2\" "
                       "stroke-dasharray=\"2 3\""),
            1);
  // y = 485 - 360 x rate / 0.011: 157.7 for 0.01, 321.4 for 0.005.
  EXPECT_THAT(svg, HasSubstr(",157.7 "));
  EXPECT_THAT(svg, HasSubstr(",321.4 "));

  // A run that recorded no rate draws none.
  TradeReport report = Build(TestInputs());
  for (LossPoint& p : *report.mutable_two_workers()->mutable_loss_curve()) {
    p.set_learning_rate(0);
  }
  EXPECT_THAT(TradeReportSvg(report), Not(HasSubstr(">lr 0</text>")));
}

TEST(TradeReportSvgTest, ShowsWhoCameLastToTheGradientSync) {
  const std::string svg = TradeReportSvg(Build(TestInputs()));
  EXPECT_THAT(svg, HasSubstr(">Last to the gradient sync (two workers)</text>"));
  EXPECT_THAT(svg, HasSubstr(">2 of 2; late 1.50 / 2.50 ms</text>"));
  EXPECT_THAT(svg, HasSubstr(">0 of 2; late 0.00 / 0.00 ms</text>"));
}

TEST(TradeReportSvgTest, ShowsEveryClassF1ForBothRuns) {
  TradeReport report = Build(TestInputs());
  report.mutable_two_workers()->mutable_validation()->mutable_per_class(1)->set_f1(
      0.25);
  const std::string svg = TradeReportSvg(report);
  EXPECT_THAT(svg, HasSubstr(">Validation F1 per class (receipts)</text>"));
  EXPECT_THAT(svg, HasSubstr(">good (6)</text>"));
  EXPECT_THAT(svg, HasSubstr(">blurry (2)</text>"));
  // good: 0.6 in both runs; blurry: 0.4 with one worker, 0.25 with two.
  EXPECT_EQ(Count(svg, ">0.600</text>"), 2);
  EXPECT_EQ(Count(svg, ">0.400</text>"), 1);
  EXPECT_EQ(Count(svg, ">0.250</text>"), 1);
  // Bars are F1 x 360 px wide.
  EXPECT_EQ(Count(svg, "width=\"216.0\" height=\"12.0\""), 2);
  EXPECT_EQ(Count(svg, "width=\"90.0\" height=\"12.0\""), 1);
}

TEST(TradeReportSvgTest, AClassTheTwoWorkerRunLacksHasOneBarAndThePictureGrows) {
  TradeReport report = Build(TestInputs());
  const std::string two_classes = TradeReportSvg(report);
  for (int i = 0; i < 6; ++i) {
    ClassMetrics* extra =
        report.mutable_one_worker()->mutable_validation()->add_per_class();
    extra->set_label("extra" + std::to_string(i));
    extra->set_f1(0.125);
  }
  const std::string svg = TradeReportSvg(report);
  EXPECT_EQ(Count(svg, ">0.125</text>"), 6);
  EXPECT_THAT(two_classes, HasSubstr("height=\"722\""));
  // 550 + 30 title + rows x 34 + 24 axis + 50 footnote's two lines: 2 rows 722,
  // 8 rows 926.
  EXPECT_THAT(svg, HasSubstr("height=\"926\" viewBox=\"0 0 1000 926\""));
}

TEST(TradeReportSvgTest, ShowsVerdicts) {
  TradeReportInputs inputs = TestInputs();
  std::string svg = TradeReportSvg(Build(inputs));
  EXPECT_THAT(svg, HasSubstr("parity, 2 workers: pass"));
  EXPECT_THAT(svg, HasSubstr("recovery: not measured"));
  EXPECT_THAT(svg, HasSubstr("checkpoint cost: not measured"));

  inputs.parity.message.set_pass(false);
  inputs.recovery = Sourced<RecoveryReport>{"recovery.json", TestRecovery(true)};
  inputs.checkpoint_cost =
      Sourced<CheckpointCost>{"run_summary.json", TestCheckpointCost()};
  svg = TradeReportSvg(Build(inputs));
  EXPECT_THAT(svg, HasSubstr("parity, 2 workers: FAIL"));
  EXPECT_THAT(svg, HasSubstr("recovery: pass"));
  EXPECT_THAT(svg, HasSubstr("checkpoint: 121 KiB, 30.0 ms (1.5× an fsync'd write)"));
}

// The right edge of every verdict chip (rounded rects).
std::vector<double> ChipRightEdges(const std::string& svg) {
  std::vector<double> edges;
  const std::regex chip("<rect x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\" "
                        "height=\"24\" rx=\"12\"");
  for (std::sregex_iterator it(svg.begin(), svg.end(), chip), end; it != end;
       ++it) {
    edges.push_back(std::stod((*it)[1]) + std::stod((*it)[2]));
  }
  return edges;
}

TEST(TradeReportSvgTest, VerdictChipsFitTheWidthEvenWhenLong) {
  TradeReportInputs inputs = TestInputs();
  inputs.simulated_parity.message.clear_split();
  for (int i = 0; i < 16; ++i) inputs.simulated_parity.message.add_split(100000);
  inputs.recovery = Sourced<RecoveryReport>{"recovery.json", TestRecovery(true)};
  CheckpointCost cost = TestCheckpointCost();
  cost.set_bytes_per_generation(1e12);
  cost.set_save_vs_sequential_ratio(12345.5);
  inputs.checkpoint_cost = Sourced<CheckpointCost>{"run_summary.json", cost};
  const std::string svg = TradeReportSvg(Build(inputs));
  const std::vector<double> edges = ChipRightEdges(svg);
  ASSERT_EQ(edges.size(), 4u);
  for (double edge : edges) EXPECT_LE(edge, 1000);
  EXPECT_THAT(svg, HasSubstr("parity, simulated 16 ranks: pass"));
}

// A text's estimated right edge (or left, for text-anchor end): 0.55 em a
// character, DejaVu Sans's average advance for mixed text; rotated axis
// labels and centred ones are left out.
struct TextExtent {
  std::string text;
  double left = 0;
  double right = 0;
};

std::vector<TextExtent> TextExtents(const std::string& svg) {
  static const std::regex text(
      "<text x=\"([-0-9.]+)\" y=\"[-0-9.]+\" font-size=\"([0-9.]+)\" ([^>]*)>([^<]*)</text>");
  std::vector<TextExtent> extents;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text);
       it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[3];
    if (attrs.find("transform") != std::string::npos ||
        attrs.find("middle") != std::string::npos) {
      continue;
    }
    const std::string content = (*it)[4];
    double characters = 0;
    for (unsigned char c : content) characters += (c & 0xC0) != 0x80;
    const double x = std::stod((*it)[1]);
    const double width = 0.55 * std::stod((*it)[2]) * characters;
    const bool end = attrs.find("text-anchor=\"end\"") != std::string::npos;
    extents.push_back({content, end ? x - width : x, end ? x : x + width});
  }
  return extents;
}

// Every text of the picture lies inside its 1000 px, long figures included
// (a straggler's lateness beside a full bar once ran off the right edge).
TEST(TradeReportSvgTest, EveryTextFitsTheWidth) {
  TradeReportInputs inputs = TestInputs();
  inputs.two_workers_mpi = TestMpiRun();
  inputs.two_workers_bf16 = TestBf16Run();
  TradeReport report = Build(inputs);
  for (RankLateness& rank : *report.mutable_two_workers()->mutable_lateness()) {
    rank.set_times_last(11200);
    rank.set_updates(11200);
    rank.set_median_lateness_seconds(0.99999);
    rank.set_p90_lateness_seconds(9.99999);
  }
  const std::vector<TextExtent> extents = TextExtents(TradeReportSvg(report));
  ASSERT_GT(extents.size(), 20u);
  for (const TextExtent& e : extents) {
    EXPECT_GE(e.left, 0) << e.text;
    EXPECT_LE(e.right, 1000) << e.text;
  }
}

TEST(TradeReportSvgTest, EscapesText) {
  TradeReportInputs inputs = TestInputs();
  TradeReport report = Build(inputs);
  report.mutable_parity()->set_verdict("<&>");
  const std::string svg = TradeReportSvg(report);
  EXPECT_THAT(svg, HasSubstr("parity, 2 workers: &lt;&amp;&gt;"));
}

TEST(TradeReportSvgTest, TheWorldSizeChangeOverlaysEachContinuationOnTheUninterruptedRun) {
  TradeReportInputs inputs = TestInputs();
  inputs.world_size_change = TestWorldSizeChange();
  const std::string svg = WorldSizeChangeSvg(Build(inputs).world_size_change());
  EXPECT_THAT(svg, StartsWith("<?xml"));
  EXPECT_THAT(svg, EndsWith("</svg>\n"));
  // The uninterrupted run and the two continuations: three curves, the
  // uninterrupted one of 4 points, each continuation of 2.
  EXPECT_EQ(Count(svg, "<polyline"), 3);
  EXPECT_THAT(svg, HasSubstr("on 3 from update 2"));
  EXPECT_THAT(svg, HasSubstr("on 1 from update 2"));
  EXPECT_THAT(svg, HasSubstr("parameters: bitwise equal at the end"));
  EXPECT_THAT(svg, HasSubstr("parameters: differ at the end"));
  EXPECT_THAT(svg, HasSubstr("data order: 2 of 3 updates differ"));
  EXPECT_EQ(Count(svg, "data order: every update the same"), 2);
}

TEST(TradeReportSvgTest, AnEmptyReportStillDraws) {
  const std::string svg = TradeReportSvg(TradeReport());
  EXPECT_THAT(svg, EndsWith("</svg>\n"));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
}

}  // namespace
}  // namespace receipt_parity
