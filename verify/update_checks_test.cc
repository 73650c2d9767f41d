#include "verify/update_checks.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

Projection P(double dot, double magnitude, int64_t products = 1000) {
  Projection p;
  p.dot = dot;
  p.magnitude = magnitude;
  p.products = products;
  return p;
}

// Two ranks whose contributions 0.75 and -0.25 (magnitudes 40 and 30) sum
// to 0.5, every other check passing.
std::vector<RankUpdateReport> Healthy() {
  std::vector<RankUpdateReport> ranks(2);
  ranks[0].accounting = 10;
  ranks[0].expected_own = 10;
  ranks[1].accounting = 32;
  ranks[1].expected_own = 32;
  for (RankUpdateReport& r : ranks) {
    r.expected_total = 42;
    r.counted_rows = 2;
    r.expected_rows = 4;
    r.reduced = P(0.5, 50);
    r.stepped = P(0.5, 50);
    r.clip_factor = 1;
    r.replica = 77;
  }
  ranks[0].contribution = P(0.75, 40);
  ranks[1].contribution = P(-0.25, 30);
  return ranks;
}

UpdateCheckContext Context() {
  UpdateCheckContext context;
  context.total_update = 41;
  context.reduction_terms = 2;
  return context;
}

TEST(UpdateChecksTest, AHealthyUpdatePassesEveryCheck) {
  const UpdateCheckResult result = JudgeUpdate(Healthy(), Context());
  EXPECT_FALSE(result.failure.has_value());
  EXPECT_FALSE(result.not_finite);
  EXPECT_EQ(result.reduction_share, 0);
}

TEST(UpdateChecksTest, ARankWhoseRowsDifferIsNamed) {
  std::vector<RankUpdateReport> ranks = Healthy();
  ranks[1].accounting = 33;
  const UpdateCheckResult result = JudgeUpdate(ranks, Context());
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->check(), "accounting");
  EXPECT_EQ(result.failure->rank(), 1);
  EXPECT_EQ(result.failure->update(), 41);
  EXPECT_EQ(result.accounting_outliers, std::vector<int>{1});
}

TEST(UpdateChecksTest, RanksThatCoverTheBlockOtherwiseFailWithoutBlamingOne) {
  std::vector<RankUpdateReport> ranks = Healthy();
  ranks[1].accounting = 10;  // rank 1 trains rank 0's rows, as one worker would there
  ranks[1].expected_own = 10;
  const UpdateCheckResult result = JudgeUpdate(ranks, Context());
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->rank(), -1);
  EXPECT_THAT(result.failure->what(), HasSubstr("do not cover its block as one worker's do"));
}

TEST(UpdateChecksTest, AReducerThatAveragesFailsTheReductionUnlessItDeclaresIt) {
  std::vector<RankUpdateReport> ranks = Healthy();
  for (RankUpdateReport& r : ranks) r.reduced = P(0.25, 25);
  UpdateCheckResult result = JudgeUpdate(ranks, Context());
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->check(), "reduction");
  EXPECT_EQ(result.failure->rank(), 0);
  EXPECT_THAT(result.failure->what(), HasSubstr("sum to 0.5"));
  UpdateCheckContext averaging = Context();
  averaging.reduced_divisor = 2;
  result = JudgeUpdate(ranks, averaging);
  EXPECT_FALSE(result.failure.has_value()) << result.failure->what();
}

TEST(UpdateChecksTest, TheReductionBoundIsTheSumsRoundingAndNoMore) {
  const UpdateCheckContext context = Context();
  std::vector<RankUpdateReport> ranks = Healthy();
  const double bound = ReductionBound(ranks, 1, context);
  // One float32 addition of contributions of magnitude 70: about 70 u.
  EXPECT_GT(bound, 70 * 0x1p-24);
  EXPECT_LT(bound, 70 * 0x1p-24 * 1.001);
  ranks[1].reduced.dot = 0.5 + 0.9 * bound;
  EXPECT_FALSE(JudgeUpdate(ranks, context).failure.has_value());
  EXPECT_NEAR(JudgeUpdate(ranks, context).reduction_share, 0.9, 1e-6);
  ranks[1].reduced.dot = 0.5 + 1.1 * bound;
  const UpdateCheckResult result = JudgeUpdate(ranks, context);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->rank(), 1);
  EXPECT_THAT(result.failure->what(), HasSubstr("a sum of 2 float terms"));
}

TEST(UpdateChecksTest, MoreTermsWidenTheBoundAsGammaDoes) {
  UpdateCheckContext context = Context();
  const double two = ReductionBound(Healthy(), 0, context);
  context.reduction_terms = 5;
  EXPECT_NEAR(ReductionBound(Healthy(), 0, context) / two, 4, 1e-3);
}

TEST(UpdateChecksTest, AGradientSteppedUnclippedWhereClippingWasDueFails) {
  UpdateCheckContext context = Context();
  context.clipping = true;
  std::vector<RankUpdateReport> ranks = Healthy();
  for (RankUpdateReport& r : ranks) r.clip_factor = 0.5;  // stepped unclipped: 0.5
  UpdateCheckResult result = JudgeUpdate(ranks, context);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->check(), "clipping");
  EXPECT_THAT(result.failure->what(), HasSubstr("1 times its reduced gradient"));
  for (RankUpdateReport& r : ranks) r.stepped = P(0.25, 25);
  result = JudgeUpdate(ranks, context);
  EXPECT_FALSE(result.failure.has_value()) << result.failure->what();
}

TEST(UpdateChecksTest, ARankWhoseReplicaDiffersIsNamed) {
  std::vector<RankUpdateReport> ranks = Healthy();
  ranks.push_back(ranks[1]);
  ranks[2].contribution = P(0, 0);
  ranks[2].accounting = 0;
  ranks[2].expected_own = 0;
  ranks[2].replica = 78;
  const UpdateCheckResult result = JudgeUpdate(ranks, Context());
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->check(), "replicas");
  EXPECT_EQ(result.failure->rank(), 2);
  EXPECT_EQ(result.replica_outliers, std::vector<int>{2});
}

TEST(UpdateChecksTest, OneRanksNonFiniteReducedGradientIsAFailureEveryRanksIsNot) {
  std::vector<RankUpdateReport> ranks = Healthy();
  ranks[1].reduced = P(std::numeric_limits<double>::infinity(), 50);
  ranks[1].reduced_not_finite = true;
  UpdateCheckResult result = JudgeUpdate(ranks, Context());
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->check(), "reduction");
  EXPECT_EQ(result.failure->rank(), 1);
  ranks[0].reduced_not_finite = true;
  result = JudgeUpdate(ranks, Context());
  EXPECT_TRUE(result.not_finite);
  EXPECT_FALSE(result.failure.has_value());
}

}  // namespace
}  // namespace receipt_parity
