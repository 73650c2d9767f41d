#include "schedules/constant_schedule.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

TEST(ConstantScheduleTest, EveryUpdateGetsTheBaseRate) {
  ConstantSchedule schedule;
  for (int64_t update : {int64_t{0}, int64_t{1}, int64_t{999},
                         int64_t{1} << 40,
                         std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(schedule.Factor(update), 1.0) << "update " << update;
  }
}

TEST(ConstantScheduleTest, ServesEveryRun) {
  ConstantSchedule schedule;
  EXPECT_TRUE(schedule.CheckRun(0).ok());
  EXPECT_TRUE(schedule.CheckRun(1).ok());
  EXPECT_TRUE(schedule.CheckRun(int64_t{1} << 40).ok());
}

TEST(ConstantScheduleDeathTest, NegativeUpdateIsABug) {
  ConstantSchedule schedule;
  EXPECT_DEATH(schedule.Factor(-1), "constant: update index");
}

}  // namespace
}  // namespace receipt_parity
