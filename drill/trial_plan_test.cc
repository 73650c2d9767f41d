#include "drill/trial_plan.h"

#include <map>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TrialPlanInputs Inputs(uint64_t seed, int trials, int world = 2) {
  TrialPlanInputs in;
  in.seed = seed;
  in.trials = trials;
  in.world_size = world;
  in.every_updates = 3;
  in.total_updates = 16;
  in.delay_window_us = {{KillPhase::kForwardBackward, 1500},
                        {KillPhase::kAllReduce, 4000},
                        {KillPhase::kValidationGather, 9000},
                        {KillPhase::kSave, 8000}};
  return in;
}

std::string Describe(const TrialPlan& plan) {
  std::string text;
  for (const PlannedTrial& t : plan.trials) text += t.Describe() + "\n";
  return text;
}

TEST(TrialPlanTest, TheSameSeedDrawsTheSameTrials) {
  absl::StatusOr<TrialPlan> a = PlanTrials(Inputs(11, 12));
  absl::StatusOr<TrialPlan> b = PlanTrials(Inputs(11, 12));
  absl::StatusOr<TrialPlan> c = PlanTrials(Inputs(12, 12));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(Describe(*a), Describe(*b));
  EXPECT_NE(Describe(*a), Describe(*c));
}

// The draws are mt19937_64's outputs through rejection sampling: these
// figures are the same with every standard library.
TEST(TrialPlanTest, ASeedsTrialsArePinned) {
  absl::StatusOr<TrialPlan> plan = PlanTrials(Inputs(7, 4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Describe(*plan),
            "rank 0 inside allreduce of update 13, 433 us after it begins\n"
            "rank 1 inside validation_gather of update 16, 5365 us after it begins\n"
            "rank 1 inside forward_backward of update 3, 1212 us after it begins\n"
            "rank 1 inside save of update 15, 5439 us after it begins\n");
}

TEST(TrialPlanTest, EveryRunOfPTrialsHitsEveryPhaseOnce) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    absl::StatusOr<TrialPlan> plan = PlanTrials(Inputs(seed, 9));
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->phases.size(), 4u);
    for (size_t start = 0; start + 4 <= plan->trials.size(); ++start) {
      std::set<KillPhase> seen;
      for (size_t i = start; i < start + 4; ++i) seen.insert(plan->trials[i].phase);
      EXPECT_EQ(seen.size(), 4u) << "seed " << seed << ":\n" << Describe(*plan);
    }
  }
}

TEST(TrialPlanTest, DrawsStayWhereARestartHasSomethingToResumeFrom) {
  std::map<KillPhase, std::set<int64_t>> updates;
  std::set<int> ranks;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const TrialPlanInputs in = Inputs(seed, 4);
    absl::StatusOr<TrialPlan> plan = PlanTrials(in);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const PlannedTrial& t : plan->trials) {
      ranks.insert(t.rank);
      updates[t.phase].insert(t.update);
      EXPECT_GE(t.delay_us, 0);
      EXPECT_LE(t.delay_us, in.delay_window_us.at(t.phase));
    }
  }
  EXPECT_THAT(ranks, ElementsAre(0, 1));
  // Updates every..total-1 for the update's own phases; the saves of
  // generation 2 and later; the run's one validation.
  std::set<int64_t> in_updates;
  for (int64_t u = 3; u < 16; ++u) in_updates.insert(u);
  EXPECT_EQ(updates[KillPhase::kForwardBackward], in_updates);
  EXPECT_EQ(updates[KillPhase::kAllReduce], in_updates);
  EXPECT_THAT(updates[KillPhase::kSave], ElementsAre(6, 9, 12, 15));
  EXPECT_THAT(updates[KillPhase::kValidationGather], ElementsAre(16));
}

TEST(TrialPlanTest, OneWorkerHasNoAllReduce) {
  EXPECT_THAT(PhasesOfRun(1, false), ElementsAre(KillPhase::kForwardBackward,
                                                 KillPhase::kValidationGather, KillPhase::kSave));
  absl::StatusOr<TrialPlan> plan = PlanTrials(Inputs(3, 6, /*world=*/1));
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const PlannedTrial& t : plan->trials) {
    EXPECT_NE(t.phase, KillPhase::kAllReduce);
    EXPECT_EQ(t.rank, 0);
  }
}

TEST(TrialPlanTest, ABackgroundSaveAddsItsPhaseAtTheSaves) {
  EXPECT_THAT(PhasesOfRun(2, true),
              ElementsAre(KillPhase::kForwardBackward, KillPhase::kAllReduce,
                          KillPhase::kValidationGather, KillPhase::kSave,
                          KillPhase::kSaveBackground));
  EXPECT_THAT(PreemptionPhasesOfRun(2, true),
              ElementsAre(KillPhase::kForwardBackward, KillPhase::kAllReduce, KillPhase::kSave,
                          KillPhase::kSaveBackground));
  TrialPlanInputs in = Inputs(7, 10, /*world=*/2);
  in.async_save = true;
  absl::StatusOr<TrialPlan> plan = PlanTrials(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int background = 0;
  for (const PlannedTrial& t : plan->trials) {
    if (t.phase != KillPhase::kSaveBackground) continue;
    ++background;
    // A save of generation 2 or later: generation 1 is advertised first.
    EXPECT_EQ(t.update % 3, 0);
    EXPECT_GE(t.update, 6);
  }
  EXPECT_EQ(background, 2);  // 10 trials over 5 phases
}

TEST(TrialPlanTest, TrainFlagsArmTheTrial) {
  PlannedTrial t;
  t.rank = 1;
  t.phase = KillPhase::kValidationGather;
  t.update = 16;
  t.delay_us = 250;
  EXPECT_THAT(t.TrainFlags(), ElementsAre("--kill_rank=1", "--kill_phase=validation_gather",
                                          "--kill_update=16", "--kill_delay_us=250"));
  EXPECT_EQ(t.Describe(), "rank 1 inside validation_gather of update 16, 250 us after it begins");
}

// SIGTERM trials come after the SIGKILL ones, which stay what the seed
// drew without them; they cycle through the three phases a preemption can
// come in, from the run's first half.
TEST(TrialPlanTest, SigtermTrialsFollowAndLeaveTheKillsAlone) {
  absl::StatusOr<TrialPlan> kills = PlanTrials(Inputs(7, 4));
  TrialPlanInputs in = Inputs(7, 4);
  in.sigterm_trials = 6;
  absl::StatusOr<TrialPlan> both = PlanTrials(in);
  ASSERT_TRUE(kills.ok() && both.ok());
  ASSERT_EQ(both->trials.size(), 10u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(both->trials[i].Describe(), kills->trials[i].Describe());
    EXPECT_FALSE(both->trials[i].preempt);
  }
  std::set<KillPhase> first_three, last_three;
  for (size_t i = 4; i < 10; ++i) {
    const PlannedTrial& t = both->trials[i];
    EXPECT_TRUE(t.preempt);
    EXPECT_EQ(t.number, static_cast<int>(i) + 1);
    EXPECT_THAT(t.Describe(), HasSubstr("SIGTERM to rank "));
    (i < 7 ? first_three : last_three).insert(t.phase);
  }
  const std::set<KillPhase> preemptible = {KillPhase::kForwardBackward, KillPhase::kAllReduce,
                                           KillPhase::kSave};
  EXPECT_EQ(first_three, preemptible);
  EXPECT_EQ(last_three, preemptible);
}

TEST(TrialPlanTest, SigtermTrialsStopInTheRunsFirstHalf) {
  std::map<KillPhase, std::set<int64_t>> updates;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    TrialPlanInputs in = Inputs(seed, 0);
    in.sigterm_trials = 3;
    absl::StatusOr<TrialPlan> plan = PlanTrials(in);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const PlannedTrial& t : plan->trials) updates[t.phase].insert(t.update);
  }
  EXPECT_THAT(updates[KillPhase::kForwardBackward], ElementsAre(3, 4, 5, 6, 7, 8));
  EXPECT_THAT(updates[KillPhase::kAllReduce], ElementsAre(3, 4, 5, 6, 7, 8));
  EXPECT_THAT(updates[KillPhase::kSave], ElementsAre(6));
  EXPECT_EQ(updates.count(KillPhase::kValidationGather), 0u);
}

TEST(TrialPlanTest, ASigtermTrialsFlagsSendSigterm) {
  PlannedTrial t;
  t.rank = 0;
  t.phase = KillPhase::kSave;
  t.update = 6;
  t.preempt = true;
  EXPECT_THAT(t.TrainFlags(), ElementsAre("--kill_rank=0", "--kill_phase=save", "--kill_update=6",
                                          "--kill_delay_us=0", "--kill_signal=SIGTERM"));
  EXPECT_EQ(t.Describe(), "SIGTERM to rank 0 inside save of update 6, 0 us after it begins");
}

TEST(TrialPlanTest, RefusesWhatCannotBeDrawn) {
  TrialPlanInputs in = Inputs(1, 0);
  EXPECT_THAT(PlanTrials(in).status().message(), HasSubstr("--trials=0"));
  in = Inputs(1, 4);
  in.sigterm_trials = -1;
  EXPECT_THAT(PlanTrials(in).status().message(), HasSubstr("--sigterm_trials=-1"));
  in = Inputs(1, 4);
  in.total_updates = 5;  // one generation (every 3)
  absl::Status status = PlanTrials(in).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("at least two generations: it has 5 updates and "
                                          "saves every 3"));
  in = Inputs(1, 4);
  in.delay_window_us[KillPhase::kSave] = -1;
  EXPECT_THAT(PlanTrials(in).status().message(), HasSubstr("delay window of save"));
}

}  // namespace
}  // namespace receipt_parity
