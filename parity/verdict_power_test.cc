#include "parity/verdict_power.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

const VerdictPower* Find(const std::vector<VerdictPower>& powers, const std::string& verdict) {
  for (const VerdictPower& p : powers) {
    if (p.verdict() == verdict) return &p;
  }
  return nullptr;
}

TEST(VerdictPowerTest, TheFirstUpdatesIsItsElementWiseBudgetPerTensor) {
  ParityReport report;
  report.set_rtol(1e-6);
  report.set_atol(1e-7);
  TensorParity* w = report.add_gradients();
  w->set_name("w");
  w->set_rtol(1e-3);
  w->set_atol(2e-3);
  w->set_max_abs_reference(1.0);
  TensorParity* b = report.add_gradients();
  b->set_name("b");
  b->set_judged(false);
  b->set_max_abs_reference(0.5);
  // The change's budget is tighter for w: the smaller figure counts.
  TensorParity* w_change = report.add_parameters_after_step();
  w_change->set_name("w");
  w_change->set_rtol(1e-3);
  w_change->set_atol(1e-4);
  w_change->set_max_abs_reference(0.1);
  report.add_parameters_after_step()->set_name("b");
  const std::vector<VerdictPower> powers = VerdictPowers(report);
  const VerdictPower* first = Find(powers, "first_update");
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->tensors_size(), 2);
  EXPECT_TRUE(first->tensors(0).judged());
  EXPECT_NEAR(first->tensors(0).smallest_relative_change(), 2e-3, 1e-12);
  EXPECT_FALSE(first->tensors(1).judged());
  EXPECT_EQ(first->judged_tensors(), 1);
  EXPECT_NEAR(first->smallest_relative_change(), 2e-3, 1e-12);
  // No other verdict in the report, no other power.
  EXPECT_EQ(powers.size(), 1u);
}

TEST(VerdictPowerTest, TheWholeRunsIsTheWeakestJudgedShareAndLeavesDivergedTensorsOut) {
  ParityReport report;
  WholeRunParity* whole = report.mutable_whole_run();
  whole->set_mode("drift_budget");
  for (double share : {0.01, 0.05}) {
    UpdateParity* u = whole->add_updates();
    TensorDrift* w = u->add_tensors();
    w->set_name("w");
    w->set_judged(true);
    w->set_share_of_one_update(share);
    TensorDrift* b = u->add_tensors();
    b->set_name("b");
    b->set_judged(false);
    b->set_share_of_one_update(3.0);
  }
  const std::vector<VerdictPower> powers = VerdictPowers(report);
  const VerdictPower* power = Find(powers, "whole_run");
  ASSERT_NE(power, nullptr);
  ASSERT_EQ(power->tensors_size(), 2);
  EXPECT_EQ(power->tensors(0).name(), "w");
  EXPECT_DOUBLE_EQ(power->tensors(0).smallest_relative_change(), 0.05);
  EXPECT_FALSE(power->tensors(1).judged());
  EXPECT_DOUBLE_EQ(power->smallest_relative_change(), 0.05);
}

TEST(VerdictPowerTest, TheReplaysAndTheEveryUpdateChecksAreStated) {
  ParityReport report;
  report.set_world_size(3);
  report.mutable_every_update()->set_updates(10);
  ReplayVerdict* replay = report.mutable_replay();
  replay->set_replayed_updates(1);
  UpdateReplay* u = replay->add_updates();
  u->set_mode("bitwise");
  TensorPower* p = u->add_power();
  p->set_name("w");
  p->set_judged(true);
  p->set_smallest_relative_change(4e-6);
  UpdateReplay* skipped = replay->add_updates();
  skipped->set_mode("not_replayed");
  TensorPower* ignored = skipped->add_power();
  ignored->set_name("w");
  ignored->set_judged(true);
  ignored->set_smallest_relative_change(1.0);
  const std::vector<VerdictPower> powers = VerdictPowers(report);
  const VerdictPower* r = Find(powers, "replay");
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->smallest_relative_change(), 4e-6);
  const VerdictPower* every = Find(powers, "every_update");
  ASSERT_NE(every, nullptr);
  EXPECT_DOUBLE_EQ(every->smallest_relative_change(), 2 * 5.9604644775390625e-08);
  EXPECT_THAT(every->detects(), ::testing::HasSubstr("the accounting exactly"));
}

}  // namespace
}  // namespace receipt_parity
