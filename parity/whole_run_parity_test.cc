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

// A point with two tensors, w and b, and (for a reference) what its step
// changed of each.
CheckedPoint Point2(int64_t update, double loss, std::vector<float> w, float b,
                    std::vector<double> change_norms = {}) {
  CheckedPoint p;
  p.update = update;
  p.loss = loss;
  p.parameters = {{"w", at::tensor(w, at::kFloat)}, {"b", at::tensor({b}, at::kFloat)}};
  p.change_norms = std::move(change_norms);
  return p;
}

TEST(CompareUpdateTest, ARunWithinTheTwinsGrownDriftPassesTensorByTensor) {
  // The twin drifted 0.01 from the reference in w and 1e-4 in b; the step
  // of update 10 changed w by 1.0 and b by 0.05.
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f, {1.0, 0.05});
  const CheckedPoint twin = Point2(10, 1.001, {1.01f, 2.0f}, 0.5001f);
  const CheckedPoint run = Point2(10, 1.003, {0.97f, 2.02f}, 0.5002f);
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok()) << parity.status();
  EXPECT_TRUE(parity->pass()) << parity->failures(0);
  EXPECT_TRUE(parity->judged());
  EXPECT_EQ(parity->judged_tensors(), 2);
  ASSERT_EQ(parity->tensors_size(), 2);
  const TensorDrift& w = parity->tensors(0);
  EXPECT_EQ(w.name(), "w");
  EXPECT_NEAR(w.twin_drift(), 0.01, 1e-6);
  EXPECT_NEAR(w.run_drift(), std::sqrt(0.03 * 0.03 + 0.02 * 0.02), 1e-6);
  EXPECT_NEAR(w.budget(), 0.04 + std::sqrt(2.0) * 1e-7, 1e-6);
  EXPECT_NEAR(w.share_of_one_update(), 0.04, 1e-5);
  EXPECT_TRUE(w.judged());
  EXPECT_TRUE(w.pass());
  EXPECT_NEAR(parity->tensors(1).twin_drift(), 1e-4, 1e-6);
  EXPECT_NEAR(parity->loss_budget(), 0.004 + 1e-7, 1e-9);
  // The pooled figures are reported beside them.
  EXPECT_NEAR(parity->twin_drift(), std::sqrt(0.01 * 0.01 + 1e-8), 1e-6);
}

TEST(CompareUpdateTest, AnErrorConfinedToOneSmallTensorFailsIt) {
  // b is 0.01 off where its twin drifted 1e-4: pooled with w's drift the
  // run would sit inside 4 x the twin's; tensor by tensor it fails.
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f, {1.0, 0.05});
  const CheckedPoint twin = Point2(10, 1.0, {1.01f, 2.0f}, 0.5001f);
  const CheckedPoint run = Point2(10, 1.0, {1.01f, 2.0f}, 0.51f);
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_LT(parity->drift_norm(), parity->budget_norm());
  EXPECT_FALSE(parity->pass());
  ASSERT_EQ(parity->failures_size(), 1);
  EXPECT_THAT(parity->failures(0), HasSubstr("update 10: parameter b is 0.01 from the reference"));
  EXPECT_THAT(parity->failures(0), HasSubstr("beyond its budget"));
  EXPECT_FALSE(parity->tensors(1).pass());
  EXPECT_TRUE(parity->tensors(0).pass());
}

TEST(CompareUpdateTest, TheLossIsJudgedAgainstTheTwinsSpread) {
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f, {1.0, 0.05});
  const CheckedPoint twin = Point2(10, 1.001, {1.01f, 2.0f}, 0.5001f);
  const CheckedPoint run = Point2(10, 1.2, {1.0f, 2.0f}, 0.5f);
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_FALSE(parity->pass());
  ASSERT_EQ(parity->failures_size(), 1);
  EXPECT_THAT(parity->failures(0), HasSubstr("the loss differs by 0.2"));
}

TEST(CompareUpdateTest, TheBudgetIsTheDriftsEnvelopeSoFarPerTensor) {
  // The twin happens to sit on the reference at update 10, but it drifted
  // 0.01 in w at an earlier checked update and 0.002 in loss at some update.
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f, {1.0, 0.05});
  const CheckedPoint twin = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f);
  const CheckedPoint run = Point2(10, 1.005, {1.03f, 2.0f}, 0.5f);
  UpdateComparisonInputs in{&run, &reference, &twin, &first, 0, 1e-7};
  auto alone = Compared(in);
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->pass());
  in.earlier_drift = 0.01;
  in.earlier_tensor_drifts = {0.01, 0};
  in.loss_drift_envelope = 0.002;
  auto enveloped = CompareUpdate(in);
  ASSERT_TRUE(enveloped.ok()) << enveloped.status();
  EXPECT_TRUE(enveloped->parity.pass()) << enveloped->parity.failures(0);
  EXPECT_NEAR(enveloped->parity.twin_loss_drift(), 0.002, 1e-12);
  EXPECT_EQ(enveloped->drift, 0.01);
  EXPECT_EQ(enveloped->tensor_drifts, (std::vector<double>{0.01, 0}));
}

TEST(CompareUpdateTest, ATensorWhoseRoundingOutgrewOneUpdateIsDivergedNotFailed) {
  // w: the twin drifted 0.1 where the step changed it by 0.5 (budget 80 %
  // of it): diverged, and the run's 0.3 does not fail it. b stays judged.
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f, {0.5, 0.05});
  const CheckedPoint twin = Point2(10, 1.0, {1.1f, 2.0f}, 0.5001f);
  const CheckedPoint run = Point2(10, 1.0, {1.3f, 2.0f}, 0.5002f);
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_TRUE(parity->pass());
  EXPECT_TRUE(parity->judged());
  EXPECT_EQ(parity->judged_tensors(), 1);
  EXPECT_THAT(parity->diverged_tensors(), ElementsAre("w"));
  EXPECT_FALSE(parity->tensors(0).judged());
  EXPECT_NEAR(parity->tensors(0).share_of_one_update(), 0.8, 1e-5);
}

TEST(CompareUpdateTest, AnUpdateDivergedInEveryTensorJudgesItsLossAndSaysSo) {
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f, {0.5, 0.001});
  const CheckedPoint twin = Point2(10, 1.01, {1.1f, 2.0f}, 0.51f);
  const CheckedPoint run = Point2(10, 1.02, {1.3f, 2.0f}, 0.6f);
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_FALSE(parity->judged());
  EXPECT_EQ(parity->judged_tensors(), 0);
  EXPECT_THAT(parity->not_judged(), HasSubstr("diverged: rounding alone has moved the drift "
                                              "twin"));
  EXPECT_THAT(parity->not_judged(), HasSubstr("the loss is judged"));
  EXPECT_TRUE(parity->pass());
  // Its loss beyond 4 x the twin's spread still fails.
  const CheckedPoint lost = Point2(10, 1.5, {1.3f, 2.0f}, 0.6f);
  auto failing = Compared({&lost, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(failing.ok());
  EXPECT_FALSE(failing->pass());
  EXPECT_THAT(failing->failures(0), HasSubstr("the loss differs by 0.5"));
  // A whole run whose updates all pass passes, counting the judged ones.
  WholeRunParity verdict = WholeRunHeader({0, 10}, 2);
  EXPECT_EQ(verdict.most_share_of_one_update(), 0.1);
  UpdateParity first_update;
  first_update.set_judged(true);
  first_update.set_pass(true);
  AddCheckedUpdate(first_update, &verdict);
  AddCheckedUpdate(*parity, &verdict);
  EXPECT_TRUE(verdict.pass());
  EXPECT_EQ(verdict.judged_updates(), 1);
  AddCheckedUpdate(*failing, &verdict);
  EXPECT_FALSE(verdict.pass());
}

TEST(CompareUpdateTest, AReferenceWithoutChangeNormsJudgesNoTensorAndSaysWhy) {
  const CheckedPoint first = Point2(0, 2.0, {0, 0}, 0.4f);
  const CheckedPoint reference = Point2(10, 1.0, {1.0f, 2.0f}, 0.5f);
  const CheckedPoint twin = Point2(10, 1.0, {1.01f, 2.0f}, 0.5f);
  const CheckedPoint run = Point2(10, 1.0, {1.01f, 2.0f}, 0.5f);
  auto parity = Compared({&run, &reference, &twin, &first, 0, 1e-7});
  ASSERT_TRUE(parity.ok());
  EXPECT_FALSE(parity->judged());
  EXPECT_THAT(parity->not_judged(), HasSubstr("does not record what this update changed"));
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
