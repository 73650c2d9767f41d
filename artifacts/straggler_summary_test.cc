#include "artifacts/straggler_summary.h"

#include <vector>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

RankReport Waits(int rank, const std::vector<double>& sync_seconds) {
  RankReport report;
  report.set_rank(rank);
  for (double s : sync_seconds) report.mutable_timing()->add_sync_seconds(s);
  return report;
}

TEST(StragglerSummaryTest, TheRankThatWaitsLeastCameLastByTheDifference) {
  // Rank 1 arrives 4 ms after rank 0 three times out of four; once rank 0
  // is 1 ms late.
  const std::vector<RankReport> reports = {Waits(0, {0.005, 0.005, 0.001, 0.005}),
                                           Waits(1, {0.001, 0.001, 0.002, 0.001})};
  const std::vector<RankLateness> lateness = SummarizeLateness(reports);
  ASSERT_EQ(lateness.size(), 2u);
  EXPECT_EQ(lateness[0].rank(), 0);
  EXPECT_EQ(lateness[0].times_last(), 1);
  EXPECT_EQ(lateness[1].times_last(), 3);
  EXPECT_EQ(lateness[1].updates(), 4);
  EXPECT_NEAR(lateness[1].median_lateness_seconds(), 0.004, 1e-12);
  EXPECT_NEAR(lateness[1].p90_lateness_seconds(), 0.004, 1e-12);
  EXPECT_NEAR(lateness[0].median_lateness_seconds(), 0.0, 1e-12);
  EXPECT_NEAR(lateness[0].p90_lateness_seconds(), 0.001, 1e-12);
  EXPECT_EQ(StragglerRank(lateness), 1);
}

TEST(StragglerSummaryTest, OnlyUpdatesEveryRankTimedCount) {
  const std::vector<RankReport> reports = {Waits(0, {0.003, 0.003, 0.003}),
                                           Waits(1, {0.001}), Waits(2, {0.002, 0.0})};
  const std::vector<RankLateness> lateness = SummarizeLateness(reports);
  ASSERT_EQ(lateness.size(), 3u);
  EXPECT_EQ(lateness[1].updates(), 1);
  EXPECT_EQ(lateness[1].times_last(), 1);
  EXPECT_NEAR(lateness[1].median_lateness_seconds(), 0.002, 1e-12);
}

TEST(StragglerSummaryTest, RanksThatWaitedAlikeHaveNoLastRank) {
  const std::vector<RankLateness> lateness =
      SummarizeLateness({Waits(0, {0.002, 0.002}), Waits(1, {0.002, 0.002})});
  ASSERT_EQ(lateness.size(), 2u);
  EXPECT_EQ(lateness[0].times_last(), 0);
  EXPECT_EQ(lateness[1].times_last(), 0);
  EXPECT_EQ(StragglerRank(lateness), -1);
}

TEST(StragglerSummaryTest, OneWorkerOrNoTimedUpdateNamesNoStraggler) {
  EXPECT_TRUE(SummarizeLateness({Waits(0, {0.001})}).empty());
  EXPECT_EQ(StragglerRank(SummarizeLateness({Waits(0, {}), Waits(1, {})})), -1);
}

}  // namespace
}  // namespace receipt_parity
