#include "schedules/linear_warmup_cosine_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::StartsWith;

LinearWarmupCosineOptions Options(int64_t warmup, int64_t total,
                                  double min_factor) {
  LinearWarmupCosineOptions options;
  options.set_warmup_updates(warmup);
  options.set_total_updates(total);
  options.set_min_factor(min_factor);
  return options;
}

LinearWarmupCosineSchedule Make(int64_t warmup, int64_t total,
                                double min_factor) {
  absl::StatusOr<LinearWarmupCosineSchedule> schedule =
      LinearWarmupCosineSchedule::Create(Options(warmup, total, min_factor));
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return *schedule;
}

// The message of the status Create returns for `options`; "" when OK.
std::string Refusal(const LinearWarmupCosineOptions& options) {
  absl::Status status = LinearWarmupCosineSchedule::Create(options).status();
  EXPECT_TRUE(status.ok() ||
              status.code() == absl::StatusCode::kInvalidArgument)
      << status;
  return std::string(status.message());
}

// W = 4, T = 12, min 0: warmup 1/4, 2/4, 3/4, 1; the cosine runs over the 8
// updates 4..11, its angle pi * (u - 4) / 8.
TEST(LinearWarmupCosineScheduleTest, WarmupRisesLinearlyFromTheFirstUpdate) {
  LinearWarmupCosineSchedule schedule = Make(4, 12, 0.0);
  EXPECT_EQ(schedule.Factor(0), 0.25);
  EXPECT_EQ(schedule.Factor(1), 0.5);
  EXPECT_EQ(schedule.Factor(2), 0.75);
  EXPECT_EQ(schedule.Factor(3), 1.0);  // The last warmup update.
}

TEST(LinearWarmupCosineScheduleTest, CosineFallsFromOneToTheFloor) {
  LinearWarmupCosineSchedule schedule = Make(4, 12, 0.0);
  const double sqrt2 = std::sqrt(2.0);
  EXPECT_EQ(schedule.Factor(4), 1.0);  // The first cosine update: cos(0).
  EXPECT_DOUBLE_EQ(schedule.Factor(6), (2 + sqrt2) / 4);  // pi/4
  // pi/2: cos gives 6.1e-17, which 1 + cos rounds away.
  EXPECT_EQ(schedule.Factor(8), 0.5);
  EXPECT_DOUBLE_EQ(schedule.Factor(10), (2 - sqrt2) / 4);  // 3 pi/4
  // The last cosine update, 7 pi/8: (1 - cos(pi/8)) / 2.
  EXPECT_DOUBLE_EQ(schedule.Factor(11),
                   (1 - std::sqrt(2 + sqrt2) / 2) / 2);
  EXPECT_EQ(schedule.Factor(12), 0.0);  // total_updates: the floor.
  EXPECT_EQ(schedule.Factor(13), 0.0);
  EXPECT_EQ(schedule.Factor(std::numeric_limits<int64_t>::max()), 0.0);
}

TEST(LinearWarmupCosineScheduleTest, MinFactorIsTheFloorOfTheCosine) {
  LinearWarmupCosineSchedule schedule = Make(4, 12, 0.2);
  EXPECT_EQ(schedule.Factor(0), 0.25);  // The warmup ignores the floor.
  EXPECT_DOUBLE_EQ(schedule.Factor(4), 1.0);
  EXPECT_DOUBLE_EQ(schedule.Factor(8), 0.6);  // 0.2 + 0.8 * 0.5
  EXPECT_EQ(schedule.Factor(12), 0.2);
  EXPECT_EQ(schedule.Factor(1000000), 0.2);

  LinearWarmupCosineSchedule flat = Make(2, 6, 1.0);
  for (int64_t update = 1; update < 10; ++update) {
    EXPECT_EQ(flat.Factor(update), 1.0) << "update " << update;
  }
}

TEST(LinearWarmupCosineScheduleTest, WithoutWarmupTheCosineStartsAtZero) {
  LinearWarmupCosineSchedule schedule = Make(0, 8, 0.0);
  EXPECT_EQ(schedule.Factor(0), 1.0);
  EXPECT_EQ(schedule.Factor(4), 0.5);
  EXPECT_EQ(schedule.Factor(8), 0.0);

  LinearWarmupCosineSchedule one_update = Make(0, 1, 0.1);
  EXPECT_EQ(one_update.Factor(0), 1.0);
  EXPECT_EQ(one_update.Factor(1), 0.1);
}

TEST(LinearWarmupCosineScheduleTest, WarmupFactorIsOneCorrectlyRoundedDivision) {
  LinearWarmupCosineSchedule schedule = Make(3, 10, 0.0);
  EXPECT_EQ(schedule.Factor(0), 1.0 / 3);
  EXPECT_EQ(schedule.Factor(1), 2.0 / 3);
  EXPECT_EQ(schedule.Factor(2), 1.0);
}

TEST(LinearWarmupCosineScheduleTest, RisesThenFallsWithinTheFloorAndOne) {
  LinearWarmupCosineSchedule schedule = Make(7, 50, 0.05);
  double previous = 0;
  for (int64_t update = 0; update < 60; ++update) {
    const double factor = schedule.Factor(update);
    ASSERT_TRUE(std::isfinite(factor)) << "update " << update;
    if (update < 7) {
      EXPECT_GT(factor, previous) << "update " << update;
    } else {
      EXPECT_LE(factor, previous) << "update " << update;
      EXPECT_GE(factor, 0.05) << "update " << update;
    }
    EXPECT_LE(factor, 1.0) << "update " << update;
    previous = factor;
  }
}

// A resumed run asks for its first update without having asked for the ones
// before: the factors must not depend on what was asked before, or on which
// object answers.
TEST(LinearWarmupCosineScheduleTest, FactorDependsOnTheUpdateAlone) {
  const LinearWarmupCosineSchedule forward = Make(5, 40, 0.01);
  std::vector<int64_t> updates;
  for (int64_t update = 0; update < 45; ++update) updates.push_back(update);
  std::vector<double> expected;
  for (int64_t update : updates) expected.push_back(forward.Factor(update));

  const LinearWarmupCosineSchedule resumed = Make(5, 40, 0.01);
  std::vector<int64_t> shuffled = updates;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(11));
  for (int64_t update : shuffled) {
    EXPECT_EQ(resumed.Factor(update), expected[update]) << "update " << update;
  }
  for (auto it = updates.rbegin(); it != updates.rend(); ++it) {
    EXPECT_EQ(forward.Factor(*it), expected[*it]) << "update " << *it;
  }
}

TEST(LinearWarmupCosineScheduleTest, RefusesNegativeWarmup) {
  EXPECT_EQ(Refusal(Options(-1, 10, 0)),
            "warmup_updates: must be >= 0, got -1");
}

TEST(LinearWarmupCosineScheduleTest, RefusesAbsentTotalUpdates) {
  LinearWarmupCosineOptions options;
  options.set_warmup_updates(10);
  EXPECT_THAT(Refusal(options), StartsWith("total_updates: required"));
  EXPECT_THAT(Refusal(LinearWarmupCosineOptions()),
              StartsWith("total_updates: required"));
}

TEST(LinearWarmupCosineScheduleTest, RefusesTotalUpdatesNotAfterTheWarmup) {
  EXPECT_EQ(Refusal(Options(100, 50, 0)),
            "total_updates: must be > warmup_updates (100), got 50");
  EXPECT_EQ(Refusal(Options(100, 100, 0)),
            "total_updates: must be > warmup_updates (100), got 100");
  EXPECT_EQ(Refusal(Options(0, 0, 0)),
            "total_updates: must be > warmup_updates (0), got 0");
  EXPECT_EQ(Refusal(Options(0, -5, 0)),
            "total_updates: must be > warmup_updates (0), got -5");
}

TEST(LinearWarmupCosineScheduleTest, RefusesMinFactorOutsideZeroToOne) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double min_factor : {-0.1, 1.5, std::nan(""), inf, -inf}) {
    EXPECT_THAT(Refusal(Options(0, 10, min_factor)),
                StartsWith("min_factor: must be in [0, 1], got "))
        << min_factor;
  }
  EXPECT_EQ(Refusal(Options(0, 10, 0)), "");
  EXPECT_EQ(Refusal(Options(0, 10, 1)), "");
}

TEST(LinearWarmupCosineScheduleTest, CheckRunRefusesAWarmupLongerThanTheRun) {
  LinearWarmupCosineSchedule schedule = Make(500, 1000, 0);
  absl::Status status = schedule.CheckRun(120);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "warmup_updates: 500 is more than the run's 120 updates");
  EXPECT_FALSE(schedule.CheckRun(499).ok());
  EXPECT_TRUE(schedule.CheckRun(500).ok());   // Warmup only.
  EXPECT_TRUE(schedule.CheckRun(800).ok());   // Stops part way down.
  EXPECT_TRUE(schedule.CheckRun(5000).ok());  // Holds the floor.
  EXPECT_TRUE(Make(0, 10, 0).CheckRun(0).ok());
}

TEST(LinearWarmupCosineScheduleDeathTest, NegativeUpdateIsABug) {
  LinearWarmupCosineSchedule schedule = Make(4, 12, 0);
  EXPECT_DEATH(schedule.Factor(-1), "linear_warmup_cosine: update index");
}

}  // namespace
}  // namespace receipt_parity
