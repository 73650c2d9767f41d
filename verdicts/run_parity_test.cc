#include "verdicts/run_parity.h"

#include <filesystem>
#include <string>

#include <ATen/ATen.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "parity/cross_device_tolerance.h"
#include "artifacts/first_step_record.h"
#include "artifacts/run_manifest.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// One parameter "w" = values after the step (zeros before it, so the
// step's change is values too), its gradient = values, one receipt.
FirstStep Step(const std::vector<float>& values) {
  FirstStep step;
  step.add_parameter_order("w");
  const NamedTensors tensors = {{"w", at::tensor(values)}};
  StoreNamedTensors(tensors, step.mutable_gradients());
  StoreNamedTensors(tensors, step.mutable_parameters_after());
  StoreNamedTensors({{"w", at::zeros({static_cast<int64_t>(values.size())})}},
                    step.mutable_parameters_before());
  RankBatch* batch = step.add_batch();
  batch->add_receipt_ids("r1");
  batch->add_valid(true);
  return step;
}

TrainingConfig Config(const std::string& device) {
  TrainingConfig config;
  config.set_device(device);
  config.mutable_parity()->set_rtol(1e-6);
  config.mutable_parity()->set_atol(1e-7);
  return config;
}

class RunParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/reference";
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(WriteArtifact(dir_ + "/first_step.json", MakeArtifactStamp("f", 1),
                              Step({1.0f, -2.0f}))
                    .ok());
  }
  void ReferenceOn(const std::string& device) {
    RunManifest manifest;
    manifest.mutable_platform()->set_device(device);
    ASSERT_TRUE(
        WriteArtifact(dir_ + "/run_manifest.json", MakeArtifactStamp("f", 1), manifest).ok());
  }
  std::string dir_;
};

// Off by 1e-5 relative: beyond the configured 1e-6, within the
// cross-device 2e-5.
const std::vector<float> kSlightlyOff = {1.00001f, -2.00002f};

TEST_F(RunParityTest, SameKindOfDeviceUsesTheConfiguredTolerance) {
  ReferenceOn("cpu");
  absl::StatusOr<ParityReport> report =
      CheckRunParity(Step(kSlightlyOff), dir_, Config("cpu"), true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->pass());
  EXPECT_EQ(report->rtol(), 1e-6);
  EXPECT_EQ(report->device(), "cpu");
  EXPECT_EQ(report->reference_device(), "cpu");
  EXPECT_THAT(report->tolerance_reason(), HasSubstr("the config's parity section"));
}

TEST_F(RunParityTest, AGpuRunAgainstACpuReferenceUsesTheCrossDeviceTolerance) {
  ReferenceOn("cpu");
  absl::StatusOr<ParityReport> report =
      CheckRunParity(Step(kSlightlyOff), dir_, Config("cuda"), true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->pass()) << report->failures(0);
  EXPECT_EQ(report->rtol(), kCrossDeviceRtol);
  EXPECT_EQ(report->atol(), kCrossDeviceAtol);
  EXPECT_EQ(report->reference_device(), "cpu");
  EXPECT_THAT(report->tolerance_reason(), HasSubstr("different kinds of device"));
  // Beyond it still fails, saying by how much against which tolerance.
  absl::StatusOr<ParityReport> far =
      CheckRunParity(Step({1.001f, -2.0f}), dir_, Config("cuda"), true);
  ASSERT_TRUE(far.ok());
  EXPECT_FALSE(far->pass());
  EXPECT_THAT(far->failures(0), HasSubstr("rtol 2e-05"));
}

TEST_F(RunParityTest, AReferenceWithoutAPlatformRecordWasMadeOnTheCpu) {
  absl::StatusOr<ParityReport> report =
      CheckRunParity(Step(kSlightlyOff), dir_, Config("cuda"), true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->reference_device(), "cpu");
  EXPECT_TRUE(report->pass());
}

// A derived tolerance (bf16) for the tensor "w" (or `name`): its budgets
// judge the gradients and the step's changes apart, the derivation
// recorded.
DerivedTolerance Derived(double gradient_atol, double parameter_atol, bool far_below,
                         const std::string& name = "w", double rtol = 0) {
  DerivedTolerance derived;
  derived.set_method("measured");
  derived.set_derived_for("bf16");
  derived.set_gradient_atol(gradient_atol);
  derived.set_parameter_atol(parameter_atol);
  derived.set_far_below_one_update(far_below);
  derived.set_most_share_of_one_update(0.1);
  derived.set_largest_share_of_one_update(far_below ? 0.01 : 0.9);
  TensorBudget* w = derived.add_tensors();
  w->set_name(name);
  w->set_gradient_atol(gradient_atol);
  w->set_parameter_atol(parameter_atol);
  w->set_gradient_rtol(rtol);
  w->set_parameter_rtol(rtol);
  w->set_judged(far_below);
  if (far_below) {
    derived.set_judged_tensors(1);
  } else {
    derived.add_not_judged_tensors(name);
  }
  return derived;
}

TEST_F(RunParityTest, ADerivedToleranceJudgesGradientsAndChangesApart) {
  ReferenceOn("cpu");
  // Off by 1e-5 and 2e-5: within 3e-5 on gradients and changes alike.
  double floor_rtol = -1, floor_atol = -1;
  absl::StatusOr<ParityReport> within = CheckRunParity(
      Step(kSlightlyOff), dir_, Config("cpu"), true,
      [&](const FirstStep&, double rtol, double atol) {
        floor_rtol = rtol;
        floor_atol = atol;
        return Derived(3e-5, 3e-5, true);
      });
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_TRUE(within->pass()) << within->failures(0);
  // The derivation is given the config's tolerance as its floor.
  EXPECT_EQ(floor_rtol, 1e-6);
  EXPECT_EQ(floor_atol, 1e-7);
  EXPECT_THAT(within->tolerance_reason(), HasSubstr("derived (bf16), per tensor and element-wise"));
  EXPECT_EQ(within->derived().method(), "measured");
  ASSERT_EQ(within->gradients_size(), 1);
  EXPECT_EQ(within->gradients(0).atol(), 3e-5);
  EXPECT_EQ(within->gradients(0).rtol(), 0);
  // The changes' own budget applies to them.
  absl::StatusOr<ParityReport> parameters = CheckRunParity(
      Step(kSlightlyOff), dir_, Config("cpu"), true,
      [](const FirstStep&, double, double) { return Derived(3e-5, 1e-6, true); });
  ASSERT_TRUE(parameters.ok());
  EXPECT_FALSE(parameters->pass());
  EXPECT_THAT(parameters->failures(0), HasSubstr("change of the parameter in the step of w"));
  EXPECT_THAT(parameters->failures(0), HasSubstr("atol 1e-06, its own derived budget"));
  // A derivation of other tensors is an error, not a verdict.
  absl::StatusOr<ParityReport> other = CheckRunParity(
      Step(kSlightlyOff), dir_, Config("cpu"), true,
      [](const FirstStep&, double, double) { return Derived(3e-5, 3e-5, true, "v"); });
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(), HasSubstr("tensor 0 is v, the run's w"));
}

// The step's change is compared, so the starts must be the same bits: a
// run that started elsewhere fails however well its change agrees.
TEST_F(RunParityTest, ARunThatStartedFromOtherParametersFails) {
  ReferenceOn("cpu");
  FirstStep elsewhere = Step({1.0f, -2.0f});
  StoreNamedTensors({{"w", at::tensor(std::vector<float>{0.5f, 0.0f})}},
                    elsewhere.mutable_parameters_before());
  absl::StatusOr<ParityReport> report = CheckRunParity(
      elsewhere, dir_, Config("cpu"), true,
      [](const FirstStep&, double, double) { return Derived(3e-5, 3e-5, true); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->pass());
  EXPECT_THAT(report->failures(report->failures_size() - 1),
              HasSubstr("the run started from other parameters than the reference (up to 0.5 "
                        "apart)"));
}

// rtol reads each element's own |ref|: a small element cannot move by the
// large one's share.
TEST_F(RunParityTest, ADerivedRtolIsElementWise) {
  ReferenceOn("cpu");
  ASSERT_TRUE(WriteArtifact(dir_ + "/first_step.json", MakeArtifactStamp("f", 1),
                            Step({1.0f, 0.001f}))
                  .ok());
  auto derive = [](const FirstStep&, double, double) {
    return Derived(1e-6, 1e-6, true, "w", 1e-3);
  };
  absl::StatusOr<ParityReport> large =
      CheckRunParity(Step({1.0009f, 0.001f}), dir_, Config("cpu"), true, derive);
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_TRUE(large->pass()) << large->failures(0);
  absl::StatusOr<ParityReport> small =
      CheckRunParity(Step({1.0f, 0.0011f}), dir_, Config("cpu"), true, derive);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->pass());
  EXPECT_THAT(small->failures(0), HasSubstr("rtol 0.001, atol 1e-06"));
}

// A first update no tensor of which numerics can judge is reported as such,
// not failed: the replay judges it, and the verdict line says so.
TEST_F(RunParityTest, AFirstUpdateWithNoJudgeableTensorIsReportedNotFailed) {
  ReferenceOn("cpu");
  absl::StatusOr<ParityReport> report = CheckRunParity(
      Step({1.5f, -2.0f}), dir_, Config("cpu"), true,
      [](const FirstStep&, double, double) { return Derived(1.0, 1.0, false); });
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->pass());
  EXPECT_FALSE(report->gradients(0).judged());
  ReplayVerdict replay;
  replay.set_replayed_updates(1);
  replay.set_bitwise_updates(1);
  replay.set_pass(true);
  UpdateReplay* u = replay.add_updates();
  u->set_update(0);
  u->set_mode("bitwise");
  u->set_pass(true);
  AddReplayVerdict(replay, &*report);
  EXPECT_THAT(ParityVerdictLine(*report),
              HasSubstr("first update: no tensor judgeable by numerics (bf16's rounding too "
                        "large a share of every tensor's update), all 1 left to the replay"));
}

// A tensor above the gate is not judged, and the others still are: its
// difference, however large, does not fail the run; theirs does.
TEST_F(RunParityTest, ATensorTheBudgetCannotResolveIsNotJudged) {
  ReferenceOn("cpu");
  auto two_tensors = [](const std::vector<float>& w, const std::vector<float>& b) {
    FirstStep step = Step(w);
    step.add_parameter_order("b");
    const NamedTensors tensor = {{"b", at::tensor(b)}};
    StoreNamedTensors(tensor, step.mutable_gradients());
    StoreNamedTensors(tensor, step.mutable_parameters_after());
    StoreNamedTensors({{"b", at::zeros({1})}}, step.mutable_parameters_before());
    return step;
  };
  ASSERT_TRUE(WriteArtifact(dir_ + "/first_step.json", MakeArtifactStamp("f", 1),
                            two_tensors({1.0f, -2.0f}, {0.5f}))
                  .ok());
  auto derive = [](const FirstStep&, double, double) {
    DerivedTolerance derived = Derived(1e-3, 1e-3, /*far_below=*/true);
    derived.set_far_below_one_update(false);
    TensorBudget* b = derived.add_tensors();
    b->set_name("b");
    b->set_gradient_atol(1e-3);
    b->set_parameter_atol(1e-3);
    derived.add_not_judged_tensors("b");
    return derived;
  };
  absl::StatusOr<ParityReport> b_off =
      CheckRunParity(two_tensors({1.0f, -2.0f}, {0.9f}), dir_, Config("cpu"), true, derive);
  ASSERT_TRUE(b_off.ok()) << b_off.status();
  EXPECT_TRUE(b_off->pass()) << b_off->failures(0);
  EXPECT_FALSE(b_off->gradients(1).judged());
  EXPECT_FALSE(b_off->gradients(1).pass());
  EXPECT_TRUE(b_off->gradients(0).judged());
  // With no replay, the line says the tensor was judged by nothing.
  EXPECT_THAT(ParityVerdictLine(*b_off),
              HasSubstr("first update: 1 of 2 tensors judged by numerics within their derived "
                        "bf16 budgets, 1 judged by no verdict (no replay) (b)"));
  absl::StatusOr<ParityReport> w_off =
      CheckRunParity(two_tensors({1.1f, -2.0f}, {0.5f}), dir_, Config("cpu"), true, derive);
  ASSERT_TRUE(w_off.ok());
  EXPECT_FALSE(w_off->pass());
  EXPECT_THAT(w_off->failures(0), HasSubstr("gradient of w"));
}

TEST_F(RunParityTest, TwoGpusAreTheSameKind) {
  ReferenceOn("cuda:0");
  absl::StatusOr<ParityReport> report =
      CheckRunParity(Step(kSlightlyOff), dir_, Config("cuda"), true);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->pass());
  EXPECT_EQ(report->rtol(), 1e-6);
}

}  // namespace
}  // namespace receipt_parity

namespace receipt_parity {
namespace {

// Issue 50: an update whose reports were lost with a rank is said on the
// verdict line, and leaves the report passing; an unverified one does not.
TEST(EveryUpdateVerdictLineTest, AnUpdateLostWithARankIsSaidNotCountedAndDoesNotFail) {
  EveryUpdateVerdict lost;
  lost.set_updates(40);
  lost.set_verified(39);
  lost.add_checks("reduction");
  lost.add_lost_with_rank(12);
  lost.add_lost_with_rank_why("its reports rode the abandoned reduction");
  lost.set_pass(true);
  ParityReport report;
  report.set_pass(true);
  AddEveryUpdateVerdict(lost, &report);
  EXPECT_TRUE(report.pass());
  EXPECT_THAT(ParityVerdictLine(report),
              ::testing::HasSubstr("every update (39 of 40) verified (reduction) but update 12, "
                                   "not judged: its reports were lost with a rank"));
  EveryUpdateVerdict unverified = lost;
  unverified.set_pass(false);
  unverified.set_not_verified("updates 12 to 12 were trained by an attempt that recorded no "
                              "every-update checks");
  ParityReport failing;
  failing.set_pass(true);
  AddEveryUpdateVerdict(unverified, &failing);
  EXPECT_FALSE(failing.pass());
}

}  // namespace
}  // namespace receipt_parity
