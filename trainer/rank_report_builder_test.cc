#include "trainer/rank_report_builder.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {
namespace {

UpdateResult Update(double loss, double sync, int64_t slots, int64_t accepted) {
  UpdateResult result;
  result.weighted_loss = loss;
  result.sync_seconds = sync;
  result.local_slots = slots;
  result.global_accepted = accepted;
  return result;
}

TEST(RankReportBuilderTest, TimesOnlyTheUpdatesAfterTheWarmup) {
  RankReportBuilder builder(1, 2, 47);
  builder.AddUpdate(Update(0.5, 0.01, 3, 6), 0, 0.1);
  builder.AddUpdate(Update(0.4, 0.02, 3, 6), 0, 0.2);
  builder.AddUpdate(Update(0.3, 0.03, 2, 5), 1, 0.3);
  EXPECT_EQ(builder.updates(), 3);
  const RankReport report = builder.Finish({}, 0, "");
  ASSERT_EQ(report.update_loss_size(), 3);
  EXPECT_DOUBLE_EQ(report.update_loss(2), 0.3);
  ASSERT_EQ(RankReportBuilder::kWarmupUpdates, 2);
  ASSERT_EQ(report.timing().update_seconds_size(), 1);
  EXPECT_DOUBLE_EQ(report.timing().update_seconds(0), 0.3);
  EXPECT_DOUBLE_EQ(report.timing().sync_seconds(0), 0.03);
  EXPECT_EQ(report.timing().update_examples(0), 2);

  const RunTotals& totals = builder.totals();
  EXPECT_EQ(totals.world_size, 2);
  EXPECT_EQ(totals.training_views, 47);
  EXPECT_EQ(totals.warmup_updates, RankReportBuilder::kWarmupUpdates);
  EXPECT_EQ(totals.accepted_per_update, (std::vector<int64_t>{6, 6, 5}));
  EXPECT_EQ(totals.epoch_of_update, (std::vector<int64_t>{0, 0, 1}));
}

TEST(RankReportBuilderTest, TheLoopIsTimedFromTheFirstTimedUpdatesStart) {
  RankReportBuilder untimed(0, 1, 10);
  untimed.AddUpdate(Update(0.5, 0, 1, 1), 0, 0.1);
  untimed.FinishLoop();  // no update after the warm-up: nothing timed
  EXPECT_EQ(untimed.Finish({}, 0, "").timing().loop_seconds(), 0);

  RankReportBuilder builder(0, 1, 10);
  builder.AddUpdate(Update(0.5, 0, 1, 1), 0, 5.0);  // warm-up: not in the loop
  builder.AddUpdate(Update(0.5, 0, 1, 1), 0, 5.0);
  builder.AddUpdate(Update(0.5, 0, 1, 1), 0, 0.25);  // began 0.25 s ago
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  builder.FinishLoop();
  const double loop = builder.Finish({}, 0, "").timing().loop_seconds();
  EXPECT_GE(loop, 0.27);
  EXPECT_LT(loop, 5.0);
}

TEST(RankReportBuilderTest, KeepsOnlyItsOwnRanksEpochRecords) {
  auto policy = MaskedTailFactory().Create(MaskedTailOptions());
  ASSERT_TRUE(policy.ok());
  OrderRequest request;
  request.num_examples = 47;
  request.world_size = 3;
  request.seed = 3;
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(**policy, request, {4, 4, 4});
  ASSERT_TRUE(plan.ok());
  RankReportBuilder builder(2, 3, 47);
  builder.AddEpoch(*plan, 0, plan->num_updates());
  builder.AddEpoch(*plan, 1, 2);
  const RankReport report = builder.Finish({}, 0, "");
  ASSERT_EQ(report.per_rank_size(), 2);
  EXPECT_EQ(report.per_rank(0).rank(), 2);
  EXPECT_EQ(report.per_rank(0).updates(), plan->num_updates());
  EXPECT_EQ(report.per_rank(0).slots(), 16);  // 48 slots over 3 ranks
  EXPECT_EQ(report.per_rank(1).updates(), 1);
  EXPECT_EQ(report.per_rank(1).slots(), 4);
  // The first epoch ran to its end; the second stopped inside.
  EXPECT_EQ(builder.totals().epochs_finished, 1);
}

TEST(RankReportBuilderTest, FinishAddsTheFinalFigures) {
  RankReportBuilder builder(1, 2, 10);
  ReduceStats stats;
  stats.collectives = 12;
  stats.bytes = 4096;
  const RankReport report = builder.Finish(stats, 321.5, "abc");
  EXPECT_EQ(report.rank(), 1);
  EXPECT_EQ(report.timing().rank(), 1);
  EXPECT_DOUBLE_EQ(report.timing().peak_rss_mib(), 321.5);
  EXPECT_EQ(report.timing().collectives(), 12);
  EXPECT_DOUBLE_EQ(report.timing().bytes_reduced(), 4096);
  EXPECT_EQ(report.final_parameter_hash(), "abc");
}

TEST(RankReportBuilderTest, PeakRssIsThisProcesssHighWaterMark) {
  const double peak = PeakRssMib();
  EXPECT_GT(peak, 1);      // a process with glibc and gtest loaded
  EXPECT_LT(peak, 4096);   // and not the launcher's or the machine's
}

}  // namespace
}  // namespace receipt_parity
