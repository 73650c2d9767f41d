#include "artifacts/tensorboard_curves.h"

#include <map>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

// Two ranks, four updates of a resumed attempt starting at update 10, two
// of them warm-up: rank 1 waited less in both timed updates (it came last).
RunSummary Summary() {
  RunSummary summary;
  summary.set_first_update(10);
  summary.set_warmup_updates(2);
  for (int u = 0; u < 4; ++u) {
    LossPoint* p = summary.add_loss_curve();
    p->set_update(u);
    p->set_examples_seen(8 * (u + 1) - (u == 3 ? 2 : 0));
    p->set_loss(1.0 - 0.1 * u);
    p->set_learning_rate(0.05);
    p->set_gradient_norm(2.0 + u);
    if (u != 1) p->set_mean_loss(0.5 - 0.05 * u);
  }
  for (int r = 0; r < 2; ++r) {
    RankTiming* t = summary.add_timing();
    t->set_rank(r);
    t->add_update_seconds(r == 0 ? 0.5 : 0.4);
    t->add_update_seconds(0.25);
    t->add_sync_seconds(r == 0 ? 0.2 : 0.05);
    t->add_sync_seconds(r == 0 ? 0.1 : 0.0);
  }
  return summary;
}

ValidationReport Validation() {
  ValidationReport validation;
  validation.set_update(14);
  validation.set_accuracy(0.75);
  validation.set_macro_f1(0.5);
  ClassMetrics* c = validation.add_per_class();
  c->set_label("blurry");
  c->set_precision(0.25);
  c->set_recall(1.0);
  c->set_f1(0.4);
  return validation;
}

std::map<std::pair<std::string, int64_t>, double> ByTagAndStep(
    const std::vector<ScalarPoint>& points) {
  std::map<std::pair<std::string, int64_t>, double> out;
  for (const ScalarPoint& p : points) {
    EXPECT_TRUE(out.emplace(std::make_pair(p.tag, p.step), p.value).second)
        << p.tag << " twice at step " << p.step;
  }
  return out;
}

TEST(TrainingCurvesTest, EveryCurveIsTheSummarysValueAtItsGlobalUpdate) {
  const ValidationReport validation = Validation();
  const auto curves = ByTagAndStep(TrainingCurves(Summary(), &validation));
  for (int u = 0; u < 4; ++u) {
    EXPECT_DOUBLE_EQ(curves.at({"train/loss", 10 + u}), 1.0 - 0.1 * u);
    EXPECT_DOUBLE_EQ(curves.at({"train/learning_rate", 10 + u}), 0.05);
    EXPECT_DOUBLE_EQ(curves.at({"train/gradient_norm", 10 + u}), 2.0 + u);
  }
  EXPECT_EQ(curves.count({"train/mean_loss", 11}), 0u);  // not sent for update 1
  EXPECT_DOUBLE_EQ(curves.at({"train/mean_loss", 13}), 0.35);
  // Timed updates 2 and 3 (steps 12, 13): 8 and 6 accepted examples.
  EXPECT_EQ(curves.count({"throughput/examples_per_second", 11}), 0u);
  EXPECT_DOUBLE_EQ(curves.at({"throughput/examples_per_second", 12}), 8 / 0.5);
  EXPECT_DOUBLE_EQ(curves.at({"throughput/examples_per_second", 13}), 6 / 0.25);
  EXPECT_DOUBLE_EQ(curves.at({"throughput/sync_share", 12}), 0.2 / 0.5);
  EXPECT_DOUBLE_EQ(curves.at({"lateness/rank_0", 12}), 0);
  EXPECT_DOUBLE_EQ(curves.at({"lateness/rank_1", 12}), 0.15);
  EXPECT_DOUBLE_EQ(curves.at({"lateness/rank_1", 13}), 0.1);
  EXPECT_DOUBLE_EQ(curves.at({"validation/accuracy", 14}), 0.75);
  EXPECT_DOUBLE_EQ(curves.at({"validation/macro_f1", 14}), 0.5);
  EXPECT_DOUBLE_EQ(curves.at({"validation/blurry/precision", 14}), 0.25);
  EXPECT_DOUBLE_EQ(curves.at({"validation/blurry/recall", 14}), 1.0);
  EXPECT_DOUBLE_EQ(curves.at({"validation/blurry/f1", 14}), 0.4);
  EXPECT_EQ(curves.size(), 4u * 3 + 3 + 2 * 2 + 2 * 2 + 2 + 3);
}

// A preempted attempt validated nothing: its file has the training curves
// alone.
TEST(TrainingCurvesTest, WithoutValidationThereAreNoValidationCurves) {
  const ValidationReport validation = Validation();
  const size_t with = TrainingCurves(Summary(), &validation).size();
  const std::vector<ScalarPoint> without = TrainingCurves(Summary(), nullptr);
  EXPECT_EQ(without.size(), with - (2 + 3));  // accuracy, macro F1, one class's three
  for (const ScalarPoint& p : without) {
    EXPECT_NE(p.tag.rfind("validation/", 0), 0u) << p.tag;
  }
}

TEST(TrainingCurvesTest, OneRankHasNoLateness) {
  RunSummary summary = Summary();
  summary.mutable_timing()->RemoveLast();
  const ValidationReport validation = Validation();
  for (const ScalarPoint& p : TrainingCurves(summary, &validation)) {
    EXPECT_NE(p.tag.rfind("lateness/", 0), 0u) << p.tag;
  }
}

TEST(TrainingCurvesTest, EveryAttemptMarksARestartAtItsFirstUpdate) {
  const ValidationReport validation = Validation();
  EventFileContents file = TrainingCurvesFile(Summary(), &validation, 5.0);
  EXPECT_EQ(file.restart_step, 10);
  EXPECT_EQ(file.wall_time, 5.0);
  RunSummary fresh = Summary();
  fresh.set_first_update(0);
  EXPECT_EQ(TrainingCurvesFile(fresh, &validation, 5.0).restart_step, 0);
}

}  // namespace
}  // namespace receipt_parity
