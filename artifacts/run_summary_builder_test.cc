#include "artifacts/run_summary_builder.h"

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

EpochRankRecord Epoch(int epoch, int rank, int accepted, int duplicates) {
  EpochRankRecord record;
  record.set_epoch(epoch);
  record.set_rank(rank);
  record.set_accepted_examples(accepted);
  record.set_duplicate_slots(duplicates);
  record.set_masked_slots(1);
  return record;
}

// Two ranks, four updates (two per epoch), no warm-up, windows of two.
struct TwoRanks {
  TwoRanks() {
    totals.world_size = 2;
    totals.training_views = 10;
    totals.accepted_per_update = {6, 4, 6, 4};
    totals.epoch_of_update = {0, 0, 1, 1};
    totals.epochs_finished = 2;
    totals.warmup_updates = 0;
    totals.window_updates = 2;
    for (int r = 0; r < 2; ++r) {
      RankReport& report = reports.emplace_back();
      report.set_rank(r);
      for (double loss : {1.0, 0.8, 0.6, 0.4}) report.add_update_loss(loss / 2 + 0.1 * r);
      for (double rate : {0.1, 0.05, 0.025, 0.0125}) report.add_update_learning_rate(rate);
      for (double norm : {3.0, 2.0, 1.0, 0.5}) report.add_update_gradient_norm(norm + r);
      for (double factor : {0.5, 0.75, 1.0, 1.0}) report.add_update_clip_factor(factor - 0.1 * r);
      RankTiming* timing = report.mutable_timing();
      timing->set_rank(r);
      for (double s : {0.1, 0.2, 0.1, 0.3}) timing->add_update_seconds(s * (r + 1));
      for (double s : {0.01, 0.02, 0.03, 0.04}) timing->add_sync_seconds(s);
    }
    *reports[0].add_per_rank() = Epoch(0, 0, 5, 0);
    *reports[1].add_per_rank() = Epoch(0, 1, 5, 0);
    *reports[0].add_per_rank() = Epoch(1, 0, 5, 1);
    *reports[1].add_per_rank() = Epoch(1, 1, 4, 0);
  }
  RunTotals totals;
  std::vector<RankReport> reports;
};

TEST(RunSummaryBuilderTest, LossCurveAddsTheRanksSharesAndCountsExamplesSeen) {
  const TwoRanks in;
  const RunSummary summary = BuildRunSummary(in.totals, in.reports);
  EXPECT_EQ(summary.world_size(), 2);
  EXPECT_EQ(summary.updates(), 4);
  ASSERT_EQ(summary.loss_curve_size(), 4);
  EXPECT_DOUBLE_EQ(summary.loss_curve(0).loss(), 1.1);  // 0.5 + 0.6
  EXPECT_EQ(summary.loss_curve(0).examples_seen(), 6);
  EXPECT_EQ(summary.loss_curve(3).examples_seen(), 20);
  EXPECT_EQ(summary.loss_curve(3).update(), 3);
  EXPECT_DOUBLE_EQ(summary.final_loss(), 0.5);  // 0.2 + 0.3
  EXPECT_EQ(summary.parity(), "not_checked");
}

// The rate, and rank 0's norm and factor, per update; every rank's factor.
TEST(RunSummaryBuilderTest, TheCurveCarriesTheRateAndTheClipping) {
  const TwoRanks in;
  const RunSummary summary = BuildRunSummary(in.totals, in.reports);
  ASSERT_EQ(summary.loss_curve_size(), 4);
  EXPECT_EQ(summary.loss_curve(1).learning_rate(), 0.05);
  EXPECT_EQ(summary.loss_curve(3).learning_rate(), 0.0125);
  EXPECT_EQ(summary.loss_curve(0).gradient_norm(), 3.0);
  EXPECT_EQ(summary.loss_curve(0).clip_factor(), 0.5);
  ASSERT_EQ(summary.loss_curve(0).rank_clip_factors_size(), 2);
  EXPECT_DOUBLE_EQ(summary.loss_curve(0).rank_clip_factors(1), 0.4);
}

TEST(RunSummaryBuilderTest, EpochsSumTheRanksAndSayWhetherEveryViewWasSeenOnce) {
  const TwoRanks in;
  const RunSummary summary = BuildRunSummary(in.totals, in.reports);
  EXPECT_EQ(summary.per_rank_size(), 4);
  EXPECT_EQ(summary.timing_size(), 2);
  EXPECT_EQ(summary.epochs_completed(), 2);
  ASSERT_EQ(summary.epochs_size(), 2);
  EXPECT_EQ(summary.epochs(0).accepted_examples(), 10);
  EXPECT_EQ(summary.epochs(0).masked_slots(), 2);
  EXPECT_TRUE(summary.epochs(0).every_view_once());
  EXPECT_DOUBLE_EQ(summary.epochs(0).mean_loss(), (1.1 + 0.9) / 2);
  EXPECT_EQ(summary.epochs(1).accepted_examples(), 9);
  EXPECT_EQ(summary.epochs(1).duplicate_slots(), 1);
  EXPECT_FALSE(summary.epochs(1).every_view_once());
  EXPECT_EQ(summary.epochs(1).training_views(), 10);
}

TEST(RunSummaryBuilderTest, ThroughputTakesTheSlowestRankAndTheMedianWindow) {
  const TwoRanks in;
  const RunSummary summary = BuildRunSummary(in.totals, in.reports);
  // Rank 1 is slowest: 0.2, 0.4, 0.2, 0.6 s. Windows: 10 / 0.6, 10 / 0.8.
  EXPECT_DOUBLE_EQ(summary.examples_per_second(), (10 / 0.6 + 10 / 0.8) / 2);
  EXPECT_DOUBLE_EQ(summary.sync_seconds_per_update(), 0.1 / 4);
  EXPECT_DOUBLE_EQ(summary.sync_share(), 0.1 / 1.4);
}

TEST(RunSummaryBuilderTest, NamesTheStragglerFromTheRanksWaits) {
  TwoRanks in;
  // Rank 0 waits 3 ms longer at every update: rank 1 came 3 ms late.
  for (int i = 0; i < 4; ++i) {
    RankTiming* timing = in.reports[0].mutable_timing();
    timing->set_sync_seconds(i, timing->sync_seconds(i) + 0.003);
  }
  const RunSummary summary = BuildRunSummary(in.totals, in.reports);
  ASSERT_EQ(summary.lateness_size(), 2);
  EXPECT_EQ(summary.lateness(1).times_last(), 4);
  EXPECT_NEAR(summary.lateness(1).median_lateness_seconds(), 0.003, 1e-12);
  EXPECT_EQ(summary.straggler_rank(), 1);
  EXPECT_FALSE(summary.lateness_method().empty());
}

TEST(RunSummaryBuilderTest, WarmupUpdatesAreLeftOutOfTheThroughput) {
  TwoRanks in;
  in.totals.warmup_updates = 2;
  for (RankReport& report : in.reports) {  // timings start after the warm-up
    RankTiming* timing = report.mutable_timing();
    const RankTiming full = *timing;
    timing->clear_update_seconds();
    timing->clear_sync_seconds();
    for (int i = 2; i < 4; ++i) {
      timing->add_update_seconds(full.update_seconds(i));
      timing->add_sync_seconds(full.sync_seconds(i));
    }
  }
  const RunSummary summary = BuildRunSummary(in.totals, in.reports);
  EXPECT_EQ(summary.warmup_updates(), 2);
  EXPECT_DOUBLE_EQ(summary.examples_per_second(), 10 / 0.8);
  EXPECT_DOUBLE_EQ(summary.sync_seconds_per_update(), 0.07 / 2);
}

TEST(RunSummaryBuilderTest, NoUpdatesGiveAnEmptySummary) {
  RunTotals totals;
  const RunSummary summary = BuildRunSummary(totals, {RankReport()});
  EXPECT_EQ(summary.updates(), 0);
  EXPECT_EQ(summary.loss_curve_size(), 0);
  EXPECT_DOUBLE_EQ(summary.final_loss(), 0);
  EXPECT_DOUBLE_EQ(summary.examples_per_second(), 0);
  EXPECT_DOUBLE_EQ(summary.sync_share(), 0);
}

TEST(RunSummaryBuilderTest, ThroughputWithSavesDividesByTheSlowestLoop) {
  TwoRanks in;
  EXPECT_DOUBLE_EQ(BuildRunSummary(in.totals, in.reports).examples_per_second_with_saves(), 0);
  in.reports[0].mutable_timing()->set_loop_seconds(2.0);
  in.reports[1].mutable_timing()->set_loop_seconds(2.5);
  // 20 accepted examples over rank 1's 2.5 s loop.
  EXPECT_DOUBLE_EQ(BuildRunSummary(in.totals, in.reports).examples_per_second_with_saves(), 8);
  // The warm-up's examples are not in the timed loop.
  in.totals.warmup_updates = 1;
  EXPECT_DOUBLE_EQ(BuildRunSummary(in.totals, in.reports).examples_per_second_with_saves(),
                   14 / 2.5);
}

TEST(RunSummaryBuilderTest, BlockedTimeHasItsMedianAndItsShareOfTheSave) {
  CheckpointCost cost;
  for (double s : {0.4, 0.2, 0.2}) cost.add_save_seconds(s);
  for (double s : {0.01, 0.03, 0.02}) cost.add_blocked_seconds(s);
  FinishCheckpointCost(&cost);
  EXPECT_DOUBLE_EQ(cost.blocked_seconds_median(), 0.02);
  EXPECT_DOUBLE_EQ(cost.blocked_vs_save_ratio(), 0.1);
  CheckpointCost none;
  FinishCheckpointCost(&none);
  EXPECT_DOUBLE_EQ(none.blocked_vs_save_ratio(), 0);
}

TEST(RunSummaryBuilderTest, MedianAndCheckpointCost) {
  EXPECT_DOUBLE_EQ(Median({}), 0);
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  CheckpointCost cost;
  for (double s : {0.3, 0.1, 0.2}) cost.add_save_seconds(s);
  for (double s : {0.1, 0.05, 0.1}) cost.add_sequential_write_seconds(s);
  FinishCheckpointCost(&cost);
  EXPECT_DOUBLE_EQ(cost.save_seconds_median(), 0.2);
  EXPECT_DOUBLE_EQ(cost.sequential_write_seconds_median(), 0.1);
  EXPECT_DOUBLE_EQ(cost.save_vs_sequential_ratio(), 2);
  CheckpointCost none;
  FinishCheckpointCost(&none);
  EXPECT_DOUBLE_EQ(none.save_vs_sequential_ratio(), 0);
}

TEST(RunSummaryBuilderTest, EachSavePhaseHasItsOwnMedian) {
  CheckpointCost cost;
  for (double shard : {0.004, 0.001, 0.002}) {
    SavePhases* save = cost.add_save_phases();
    save->set_shard(shard);
    save->set_manifest(0.01 - shard);  // the order differs from the shard's
    save->set_prune(0.5);
  }
  FinishCheckpointCost(&cost);
  EXPECT_DOUBLE_EQ(cost.save_phases_median().shard(), 0.002);
  EXPECT_DOUBLE_EQ(cost.save_phases_median().manifest(), 0.008);
  EXPECT_DOUBLE_EQ(cost.save_phases_median().prune(), 0.5);
  EXPECT_DOUBLE_EQ(cost.save_phases_median().verify(), 0);
  CheckpointCost none;
  FinishCheckpointCost(&none);
  EXPECT_DOUBLE_EQ(none.save_phases_median().shard(), 0);
}

}  // namespace
}  // namespace receipt_parity
