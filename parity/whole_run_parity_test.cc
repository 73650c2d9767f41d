#include "parity/whole_run_parity.h"

#include <cmath>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CheckedPoint Point(int64_t update, double loss, std::vector<float> w) {
  CheckedPoint p;
  p.update = update;
  p.loss = loss;
  p.parameters = {{"w", at::tensor(w, at::kFloat)}};
  return p;
}

absl::StatusOr<UpdateParity> Compared(const UpdateComparisonInputs& in) {
  absl::StatusOr<UpdateComparison> c = CompareUpdate(in);
  if (!c.ok()) return c.status();
  return c->parity;
}

TEST(CheckUpdatesTest, TheDefaultIsTheFirstTheLastAndThreeBetween) {
  EXPECT_THAT(DefaultCheckUpdates(152), ElementsAre(0, 37, 75, 113, 151));
  EXPECT_THAT(DefaultCheckUpdates(3), ElementsAre(0, 1, 2));
  EXPECT_THAT(DefaultCheckUpdates(1), ElementsAre(0));
}

TEST(CheckUpdatesTest, ConfiguredUpdatesAlwaysIncludeTheFirstAndStayInsideTheRun) {
  auto updates = CheckUpdates({40, 10, 40}, 50);
  ASSERT_TRUE(updates.ok()) << updates.status();
  EXPECT_THAT(*updates, ElementsAre(0, 10, 40));
  auto beyond = CheckUpdates({50}, 50);
  ASSERT_FALSE(beyond.ok());
  EXPECT_THAT(beyond.status().message(),
              HasSubstr("parity.check_updates: update 50 is beyond the run, whose updates "
                        "are 0..49"));
}

TEST(CompareUpdateTest, ARunWithinTheTwinsGrownDriftPasses) {
  // The twin drifted 0.01 from the reference: budget 4 x 0.01 + atol.
  const CheckedPoint first = Point(0, 2.0, {0, 0});
  const CheckedPoint reference = Point(10, 1.0, {1.0f, 2.0f});
  const CheckedPoint twin = Point(10, 1.001, {1.01f, 2.0f});
  const CheckedPoint run = Point(10, 1.003, {0.97f, 2.02f});
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok()) << parity.status();
  EXPECT_TRUE(parity->pass()) << parity->failures(0);
  // Distances over every parameter: the twin's 0.01, the run's
  // sqrt(0.03^2 + 0.02^2), the budget 4 x 0.01 + the tolerance's.
  EXPECT_NEAR(parity->twin_drift(), 0.01, 1e-6);
  EXPECT_NEAR(parity->drift_norm(), std::sqrt(0.03 * 0.03 + 0.02 * 0.02), 1e-6);
  EXPECT_NEAR(parity->budget_norm(), 0.04, 1e-6);
  EXPECT_NEAR(parity->largest_share_of_budget(), parity->drift_norm() / parity->budget_norm(), 1e-12);
  EXPECT_NEAR(parity->largest_share_of_budget(), 0.9, 0.01);
  EXPECT_NEAR(parity->loss_budget(), 0.004 + 1e-7, 1e-9);
  // Each tensor is reported, not judged, against its own twin-derived budget.
  EXPECT_NEAR(parity->parameters(0).atol(), 0.04 + 1e-7, 1e-6);
  EXPECT_FALSE(parity->parameters(0).judged());
  // 0.04 of the reference's movement since update 0, sqrt(1 + 4).
  EXPECT_NEAR(parity->largest_budget_share_of_training(), 0.04 / std::sqrt(5.0), 1e-4);
}

TEST(CompareUpdateTest, ARunBeyondTheBudgetFailsNamingTheTensorAndTheLoss) {
  const CheckedPoint first = Point(0, 2.0, {0, 0});
  const CheckedPoint reference = Point(10, 1.0, {1.0f, 2.0f});
  const CheckedPoint twin = Point(10, 1.001, {1.01f, 2.0f});
  const CheckedPoint run = Point(10, 1.2, {1.3f, 2.0f});
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_FALSE(parity->pass());
  ASSERT_EQ(parity->failures_size(), 2);
  EXPECT_THAT(parity->failures(0),
              HasSubstr("update 10: the parameters are 0.3 from the reference's"));
  EXPECT_THAT(parity->failures(0), HasSubstr("the tensor furthest off its own: w"));
  EXPECT_THAT(parity->failures(1), HasSubstr("the loss differs by 0.2"));
}

TEST(CompareUpdateTest, TheBudgetIsTheDriftsEnvelopeSoFar) {
  // The twin happens to sit on the reference at update 10, but it drifted
  // 0.01 in w at an earlier checked update and 0.002 in loss at some update.
  const CheckedPoint first = Point(0, 2.0, {0, 0});
  const CheckedPoint reference = Point(10, 1.0, {1.0f, 2.0f});
  const CheckedPoint twin = Point(10, 1.0, {1.0f, 2.0f});
  const CheckedPoint run = Point(10, 1.005, {1.03f, 2.0f});
  UpdateComparisonInputs in{&run, &reference, &twin, &first, 0, 1e-7};
  auto alone = Compared(in);
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->pass());
  in.earlier_drift = 0.01;
  in.loss_drift_envelope = 0.002;
  auto enveloped = CompareUpdate(in);
  ASSERT_TRUE(enveloped.ok()) << enveloped.status();
  EXPECT_TRUE(enveloped->parity.pass()) << enveloped->parity.failures(0);
  EXPECT_NEAR(enveloped->parity.twin_loss_drift(), 0.002, 1e-12);
  EXPECT_EQ(enveloped->drift, 0.01);
}

TEST(CompareUpdateTest, ABudgetNearWhatTrainingMovedIsNotJudged) {
  // The twin drifted as far as training moved the tensor.
  const CheckedPoint first = Point(0, 2.0, {0.9f, 2.0f});
  const CheckedPoint reference = Point(10, 1.0, {1.0f, 2.0f});
  const CheckedPoint twin = Point(10, 1.0, {1.1f, 2.0f});
  const CheckedPoint run = Point(10, 1.0, {1.0f, 2.0f});
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_FALSE(parity->judged());
  EXPECT_FALSE(parity->pass());
  EXPECT_EQ(parity->failures_size(), 0);
  EXPECT_THAT(parity->not_judged(), HasSubstr("this update is not judged"));
  // A whole run with an update not judged passes on the ones judged.
  WholeRunParity verdict = WholeRunHeader({0, 10}, 2);
  UpdateParity first_update;
  first_update.set_judged(true);
  first_update.set_pass(true);
  AddCheckedUpdate(first_update, &verdict);
  AddCheckedUpdate(*parity, &verdict);
  EXPECT_TRUE(verdict.pass());
  EXPECT_EQ(verdict.judged_updates(), 1);
}

TEST(CompareUpdateTest, BitwiseModeAsksForTheSameBits) {
  const CheckedPoint reference = Point(3, 1.0, {1.0f, 2.0f});
  const CheckedPoint same = Point(3, 1.0, {1.0f, 2.0f});
  auto pass = Compared({&same, &reference, nullptr, nullptr, 1e-6, 1e-7});
  ASSERT_TRUE(pass.ok());
  EXPECT_TRUE(pass->pass());
  EXPECT_TRUE(pass->bitwise_equal());
  const CheckedPoint near = Point(3, 1.0, {std::nextafter(1.0f, 2.0f), 2.0f});
  auto fail = Compared({&near, &reference, nullptr, nullptr, 1e-6, 1e-7});
  ASSERT_TRUE(fail.ok());
  EXPECT_FALSE(fail->pass());
  EXPECT_THAT(fail->failures(0), HasSubstr("(bitwise mode)"));
}

TEST(CompareUpdateTest, PointsOfAnotherUpdateAreRefused) {
  const CheckedPoint reference = Point(3, 1.0, {1.0f});
  const CheckedPoint run = Point(4, 1.0, {1.0f});
  auto parity = Compared({&run, &reference, nullptr, nullptr, 0, 0});
  ASSERT_FALSE(parity.ok());
  EXPECT_THAT(parity.status().message(), HasSubstr("reference point is of update 3"));
}

TEST(WholeRunParityTest, PassesOnlyWhenEveryCheckedUpdateIsThereAndPasses) {
  WholeRunParity verdict = WholeRunHeader({0, 5}, 2);
  EXPECT_EQ(verdict.mode(), "drift_budget");
  UpdateParity ok;
  ok.set_update(0);
  ok.set_pass(true);
  AddCheckedUpdate(ok, &verdict);
  EXPECT_FALSE(verdict.pass());  // update 5 is missing
  ok.set_update(5);
  AddCheckedUpdate(ok, &verdict);
  EXPECT_TRUE(verdict.pass());
  UpdateParity bad;
  bad.set_update(5);
  bad.set_pass(false);
  WholeRunParity failing = WholeRunHeader({0}, 0);
  EXPECT_EQ(failing.mode(), "bitwise");
  AddCheckedUpdate(bad, &failing);
  EXPECT_FALSE(failing.pass());
  EXPECT_EQ(NotJudged({0, 5}, "stopped").mode(), "not_judged");
}

}  // namespace
}  // namespace receipt_parity
