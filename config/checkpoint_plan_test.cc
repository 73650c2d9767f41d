#include "config/checkpoint_plan.h"

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

TEST(CheckpointPlanTest, ASavingConfigSavesInItsRunFolder) {
  TrainingConfig config;
  config.mutable_checkpoint()->set_every_updates(5);
  config.mutable_checkpoint()->set_keep_last(3);
  const std::optional<CheckpointPlan> plan = PlanCheckpoints(config, "/runs/a");
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->folder, "/runs/a/checkpoints");
  EXPECT_EQ(plan->every_updates, 5);
  EXPECT_EQ(plan->keep_last, 3);
  EXPECT_FALSE(plan->async);
  config.mutable_checkpoint()->set_async(true);
  EXPECT_TRUE(PlanCheckpoints(config, "/runs/a")->async);
}

TEST(CheckpointPlanTest, EveryUpdatesZeroIsNoPlan) {
  TrainingConfig config;
  config.mutable_checkpoint()->set_keep_last(2);
  EXPECT_FALSE(PlanCheckpoints(config, "/runs/a").has_value());
}

TEST(CheckpointPlanDeathTest, AnUnvalidatedConfigIsAProgrammingError) {
  TrainingConfig config;
  config.mutable_checkpoint()->set_every_updates(2);  // keep_last left 0
  EXPECT_DEATH(PlanCheckpoints(config, "/runs/a"), "keep_last not validated");
}

}  // namespace
}  // namespace receipt_parity
