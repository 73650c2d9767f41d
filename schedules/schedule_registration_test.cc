// The built-in learning-rate schedules are registered under kind
// "lr_schedule" with their stable names and build from their typed options.
// linkstatic = 1, so a registration dropped by the linker would show here.
#include <memory>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/plugin_registry.h"
#include "plugins/plugin_selection.h"
#include "schedules/lr_schedule.h"
#include "schedules/schedule_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::IsSupersetOf;
using ::testing::StartsWith;

std::unique_ptr<LearningRateSchedule> Build(
    const std::string& name, const google::protobuf::Message& options) {
  auto factory = FindFactory<LearningRateSchedule>(name);
  EXPECT_TRUE(factory.ok()) << factory.status();
  if (!factory.ok()) return nullptr;
  auto schedule = (*factory)->Create(options);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return schedule.ok() ? *std::move(schedule) : nullptr;
}

absl::Status CreateStatus(const std::string& name,
                          const google::protobuf::Message& options) {
  auto factory = FindFactory<LearningRateSchedule>(name);
  if (!factory.ok()) return factory.status();
  return (*factory)->Create(options).status();
}

TEST(ScheduleRegistrationTest, AllBuiltinsAreRegisteredUnderTheirKind) {
  EXPECT_STREQ(LearningRateSchedule::kKind, "lr_schedule");
  EXPECT_THAT(RegisteredNames("lr_schedule"),
              IsSupersetOf({"constant", "linear_warmup_cosine", "step"}));
  ASSERT_TRUE(CheckRegistries().ok());
}

TEST(ScheduleRegistrationTest, EachFactoryTakesItsOwnOptionsType) {
  const std::pair<std::string, std::string> expected[] = {
      {"constant", "receipt_parity.ConstantScheduleOptions"},
      {"linear_warmup_cosine", "receipt_parity.LinearWarmupCosineOptions"},
      {"step", "receipt_parity.StepScheduleOptions"},
  };
  for (const auto& [name, options_type] : expected) {
    auto factory = FindFactory<LearningRateSchedule>(name);
    ASSERT_TRUE(factory.ok()) << factory.status();
    EXPECT_EQ((*factory)->name(), name);
    EXPECT_EQ((*factory)->CreateEmptyOptions()->GetDescriptor()->full_name(),
              options_type);
  }
}

TEST(ScheduleRegistrationTest, FactoriesBuildTheRightSchedules) {
  auto constant = Build("constant", ConstantScheduleOptions());
  LinearWarmupCosineOptions cosine_options;
  cosine_options.set_warmup_updates(2);
  cosine_options.set_total_updates(6);
  auto cosine = Build("linear_warmup_cosine", cosine_options);
  StepScheduleOptions step_options;
  step_options.set_step_updates(2);
  step_options.set_gamma(0.5);
  auto step = Build("step", step_options);
  ASSERT_TRUE(constant && cosine && step);

  EXPECT_EQ(constant->Factor(7), 1.0);
  EXPECT_EQ(cosine->Factor(0), 0.5);
  EXPECT_EQ(cosine->Factor(2), 1.0);
  EXPECT_EQ(cosine->Factor(4), 0.5);
  EXPECT_EQ(cosine->Factor(6), 0.0);
  EXPECT_EQ(step->Factor(1), 1.0);
  EXPECT_EQ(step->Factor(4), 0.25);
  EXPECT_FALSE(cosine->CheckRun(1).ok());
  EXPECT_TRUE(cosine->CheckRun(2).ok());
}

TEST(ScheduleRegistrationTest, OptionsOfAnotherTypeAreRefused) {
  const absl::Status statuses[] = {
      CreateStatus("constant", StepScheduleOptions()),
      CreateStatus("linear_warmup_cosine", ConstantScheduleOptions()),
      CreateStatus("step", LinearWarmupCosineOptions()),
  };
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), StartsWith("plugin '"));
  }
}

TEST(ScheduleRegistrationTest, InvalidOptionsAreRefusedByCreate) {
  absl::Status no_total =
      CreateStatus("linear_warmup_cosine", LinearWarmupCosineOptions());
  EXPECT_EQ(no_total.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_total.message()),
              StartsWith("total_updates: required"));
  absl::Status no_step = CreateStatus("step", StepScheduleOptions());
  EXPECT_EQ(no_step.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_step.message()),
              StartsWith("step_updates: required"));
}

// How a config's `lr_schedule` selection will resolve: options packed in an
// Any, errors prefixed with the selection's field.
TEST(ScheduleRegistrationTest, ResolvesFromAPluginSelection) {
  PluginSelection constant;
  constant.set_name("constant");
  auto from_name_alone =
      CreateSelectedPlugin<LearningRateSchedule>(constant, "lr_schedule");
  ASSERT_TRUE(from_name_alone.ok()) << from_name_alone.status();
  EXPECT_EQ((*from_name_alone)->Factor(0), 1.0);

  PluginSelection step;
  step.set_name("step");
  StepScheduleOptions step_options;
  step_options.set_step_updates(10);
  step.mutable_options()->PackFrom(step_options);
  auto packed = CreateSelectedPlugin<LearningRateSchedule>(step, "lr_schedule");
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ((*packed)->Factor(10), 0.1);

  PluginSelection cosine;
  cosine.set_name("linear_warmup_cosine");
  auto refused =
      CreateSelectedPlugin<LearningRateSchedule>(cosine, "lr_schedule");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              StartsWith("lr_schedule.options: total_updates: required"));
}

}  // namespace
}  // namespace receipt_parity
