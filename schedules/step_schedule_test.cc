#include "schedules/step_schedule.h"

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

StepScheduleOptions Options(int64_t step_updates) {
  StepScheduleOptions options;
  options.set_step_updates(step_updates);
  return options;
}

StepScheduleOptions Options(int64_t step_updates, double gamma) {
  StepScheduleOptions options = Options(step_updates);
  options.set_gamma(gamma);
  return options;
}

StepSchedule Make(const StepScheduleOptions& options) {
  absl::StatusOr<StepSchedule> schedule = StepSchedule::Create(options);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return *schedule;
}

// The message of the status Create returns for `options`; "" when OK.
std::string Refusal(const StepScheduleOptions& options) {
  absl::Status status = StepSchedule::Create(options).status();
  EXPECT_TRUE(status.ok() ||
              status.code() == absl::StatusCode::kInvalidArgument)
      << status;
  return std::string(status.message());
}

TEST(StepScheduleTest, DecaysByGammaEveryStepUpdates) {
  StepSchedule schedule = Make(Options(3, 0.5));
  EXPECT_EQ(schedule.Factor(0), 1.0);
  EXPECT_EQ(schedule.Factor(2), 1.0);   // The last update before a decay.
  EXPECT_EQ(schedule.Factor(3), 0.5);   // The first decayed update.
  EXPECT_EQ(schedule.Factor(5), 0.5);
  EXPECT_EQ(schedule.Factor(6), 0.25);
  EXPECT_EQ(schedule.Factor(30), std::ldexp(1.0, -10));
  EXPECT_EQ(schedule.Factor(32), std::ldexp(1.0, -10));
}

TEST(StepScheduleTest, GammaDefaultsToOneTenth) {
  StepSchedule schedule = Make(Options(100));
  EXPECT_EQ(schedule.gamma(), 0.1);
  EXPECT_EQ(schedule.Factor(99), 1.0);
  EXPECT_EQ(schedule.Factor(100), 0.1);
  EXPECT_DOUBLE_EQ(schedule.Factor(200), 0.01);
  EXPECT_DOUBLE_EQ(schedule.Factor(399), 0.001);
}

TEST(StepScheduleTest, GammaOneKeepsTheRateAndTinyFactorsStayFinite) {
  StepSchedule flat = Make(Options(1, 1.0));
  EXPECT_EQ(flat.Factor(std::numeric_limits<int64_t>::max()), 1.0);
  StepSchedule steep = Make(Options(1, 0.5));
  EXPECT_EQ(steep.Factor(1000000), 0.0);  // Underflows to 0, never NaN.
}

TEST(StepScheduleTest, FactorDependsOnTheUpdateAlone) {
  const StepSchedule forward = Make(Options(4, 0.3));
  std::vector<int64_t> updates;
  for (int64_t update = 0; update < 40; ++update) updates.push_back(update);
  std::vector<double> expected;
  for (int64_t update : updates) expected.push_back(forward.Factor(update));

  const StepSchedule resumed = Make(Options(4, 0.3));
  std::vector<int64_t> shuffled = updates;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(5));
  for (int64_t update : shuffled) {
    EXPECT_EQ(resumed.Factor(update), expected[update]) << "update " << update;
  }
  for (auto it = updates.rbegin(); it != updates.rend(); ++it) {
    EXPECT_EQ(forward.Factor(*it), expected[*it]) << "update " << *it;
  }
}

TEST(StepScheduleTest, RefusesAbsentOrNonPositiveStepUpdates) {
  EXPECT_THAT(Refusal(StepScheduleOptions()),
              StartsWith("step_updates: required"));
  StepScheduleOptions gamma_only;
  gamma_only.set_gamma(0.5);
  EXPECT_THAT(Refusal(gamma_only), StartsWith("step_updates: required"));
  EXPECT_EQ(Refusal(Options(0)), "step_updates: must be > 0, got 0");
  EXPECT_EQ(Refusal(Options(-3)), "step_updates: must be > 0, got -3");
}

TEST(StepScheduleTest, RefusesGammaOutsideZeroToOne) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double gamma : {0.0, -0.5, 1.5, std::nan(""), inf, -inf}) {
    EXPECT_THAT(Refusal(Options(10, gamma)),
                StartsWith("gamma: must be in (0, 1], got "))
        << gamma;
  }
  EXPECT_EQ(Refusal(Options(10, 1.0)), "");
  EXPECT_EQ(Refusal(Options(10, 1e-9)), "");
}

TEST(StepScheduleTest, ServesEveryRun) {
  StepSchedule schedule = Make(Options(1000));
  EXPECT_TRUE(schedule.CheckRun(0).ok());
  EXPECT_TRUE(schedule.CheckRun(10).ok());
  EXPECT_TRUE(schedule.CheckRun(int64_t{1} << 40).ok());
}

TEST(StepScheduleDeathTest, NegativeUpdateIsABug) {
  StepSchedule schedule = Make(Options(3));
  EXPECT_DEATH(schedule.Factor(-1), "step: update index");
}

}  // namespace
}  // namespace receipt_parity
