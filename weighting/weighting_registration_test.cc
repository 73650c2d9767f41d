// The built-in weighting plugins are registered under their stable names
// and build from their typed options. linkstatic = 1, so a registration
// dropped by the linker would show here.
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/plugin_registry.h"
#include "weighting/loss_weighting.h"
#include "weighting/loss_weighting_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

std::unique_ptr<LossWeighting> Build(const std::string& name,
                                     const google::protobuf::Message& options) {
  auto factory = FindFactory<LossWeighting>(name);
  EXPECT_TRUE(factory.ok()) << factory.status();
  if (!factory.ok()) return nullptr;
  auto weighting = (*factory)->Create(options);
  EXPECT_TRUE(weighting.ok()) << weighting.status();
  return weighting.ok() ? *std::move(weighting) : nullptr;
}

TEST(WeightingRegistrationTest, AllBuiltinsAreRegistered) {
  EXPECT_THAT(RegisteredNames(LossWeighting::kKind),
              IsSupersetOf({"class_balanced", "global_count", "rank_mean"}));
  ASSERT_TRUE(CheckRegistries().ok());
}

TEST(WeightingRegistrationTest, FactoriesBuildTheRightRules) {
  UpdateComposition update{{{{0, true}, {0, true}, {0, true}}, {{1, true}}},
                           {3, 1}};
  auto global_count = Build("global_count", GlobalCountOptions());
  auto rank_mean = Build("rank_mean", RankMeanOptions());
  auto class_balanced = Build("class_balanced", ClassBalancedOptions());
  ASSERT_TRUE(global_count && rank_mean && class_balanced);
  EXPECT_DOUBLE_EQ(global_count->Weights(update, 1)[0], 0.25);
  EXPECT_DOUBLE_EQ(rank_mean->Weights(update, 1)[0], 1.0);
  // Default power 1: c = (1/3, 1); sum = 3 * 1/3 + 1 = 2.
  EXPECT_DOUBLE_EQ(class_balanced->Weights(update, 1)[0], 0.5);
  EXPECT_DOUBLE_EQ(class_balanced->Weights(update, 0)[0], 1.0 / 6);

  ClassBalancedOptions uniform;
  uniform.set_power(0);
  auto power_zero = Build("class_balanced", uniform);
  ASSERT_TRUE(power_zero);
  EXPECT_DOUBLE_EQ(power_zero->Weights(update, 1)[0], 0.25);
}

TEST(WeightingRegistrationTest, BadOptionsNameTheField) {
  auto factory = FindFactory<LossWeighting>("class_balanced");
  ASSERT_TRUE(factory.ok());
  ClassBalancedOptions options;
  options.set_smoothing(-1);
  auto weighting = (*factory)->Create(options);
  EXPECT_EQ(weighting.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(weighting.status().message(),
              HasSubstr("class_balanced.smoothing"));
  auto wrong_type = (*factory)->Create(GlobalCountOptions());
  EXPECT_EQ(wrong_type.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace receipt_parity
