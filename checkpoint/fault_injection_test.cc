#include "checkpoint/fault_injection.h"

#include <csignal>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

TEST(FaultInjectionTest, NamesAreTheStableOnesAndRoundTrip) {
  std::vector<std::string> names;
  for (KillPoint point : AllKillPoints()) {
    names.emplace_back(KillPointName(point));
    absl::StatusOr<KillPoint> parsed = ParseKillPoint(KillPointName(point));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, point);
  }
  EXPECT_THAT(names, ::testing::ElementsAre("before_shard", "mid_shard",
                                            "after_shard_before_rename",
                                            "before_manifest", "mid_manifest"));
}

TEST(FaultInjectionTest, UnknownNameListsTheValidOnes) {
  absl::StatusOr<KillPoint> parsed = ParseKillPoint("mid_shrad");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("\"mid_shrad\""));
  for (KillPoint point : AllKillPoints()) {
    EXPECT_THAT(parsed.status().message(), HasSubstr(KillPointName(point)));
  }
}

TEST(FaultInjectionTest, MakeFaultPlanValidates) {
  absl::StatusOr<FaultPlan> none = MakeFaultPlan(-1, "whatever", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->armed());

  absl::StatusOr<FaultPlan> plan = MakeFaultPlan(1, "mid_manifest", 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->armed());
  EXPECT_EQ(plan->rank, 1);
  EXPECT_EQ(plan->point, KillPoint::kMidManifest);
  EXPECT_EQ(plan->generation, 3);

  EXPECT_THAT(MakeFaultPlan(-2, "mid_shard", 1).status().message(),
              HasSubstr("kill rank -2"));
  EXPECT_THAT(MakeFaultPlan(0, "mid_shard", 0).status().message(),
              HasSubstr("kill generation 0"));
  EXPECT_THAT(MakeFaultPlan(0, "halfway", 1).status().message(),
              HasSubstr("unknown kill point \"halfway\""));
}

TEST(FaultInjectionTest, ReturnsUnlessRankPointAndGenerationAllMatch) {
  FaultPlan plan = *MakeFaultPlan(1, "mid_shard", 2);
  // Each call differs from the plan in one respect; the process survives.
  KillIfPlanned(plan, KillPoint::kMidShard, 0, 2);
  KillIfPlanned(plan, KillPoint::kBeforeShard, 1, 2);
  KillIfPlanned(plan, KillPoint::kMidShard, 1, 1);
  KillIfPlanned(FaultPlan(), KillPoint::kBeforeShard, 0, 0);
  SUCCEED();
}

TEST(FaultInjectionDeathTest, MatchingPlanDiesBySigkill) {
  FaultPlan plan = *MakeFaultPlan(1, "mid_shard", 2);
  EXPECT_EXIT(KillIfPlanned(plan, KillPoint::kMidShard, 1, 2),
              ::testing::KilledBySignal(SIGKILL), "");
}

TEST(KillHookTest, OnlyThePlannedPointRankAndGenerationGetAHook) {
  FaultPlan plan;
  EXPECT_FALSE(KillHook(plan, KillPoint::kMidShard, 0, 1));  // unarmed
  plan.rank = 1;
  plan.point = KillPoint::kMidShard;
  plan.generation = 2;
  EXPECT_TRUE(KillHook(plan, KillPoint::kMidShard, 1, 2));
  EXPECT_FALSE(KillHook(plan, KillPoint::kMidManifest, 1, 2));
  EXPECT_FALSE(KillHook(plan, KillPoint::kMidShard, 0, 2));
  EXPECT_FALSE(KillHook(plan, KillPoint::kMidShard, 1, 3));
}

}  // namespace
}  // namespace receipt_parity
