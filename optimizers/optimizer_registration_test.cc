// The built-in optimizer plugins are registered under their stable names
// and build from their typed options. linkstatic = 1, so a registration
// dropped by the linker would show here.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizers/builtin_optimizers.h"
#include "optimizers/optimizer_options.pb.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::testing::NotNull;

TEST(OptimizerRegistrationTest, AllBuiltinsAreRegistered) {
  EXPECT_THAT(RegisteredNames(OptimizerPlugin::kKind), IsSupersetOf({"adam", "adamw", "sgd"}));
  ASSERT_TRUE(CheckRegistries().ok());
}

TEST(OptimizerRegistrationTest, FactoriesBuildFromTheirOptions) {
  AdamWOptions options;
  options.set_lr(0.004);
  auto adamw = (*FindFactory<OptimizerPlugin>("adamw"))->Create(options);
  ASSERT_TRUE(adamw.ok()) << adamw.status();
  auto* typed = dynamic_cast<AdamOptimizer*>(adamw->get());
  ASSERT_THAT(typed, NotNull());
  EXPECT_TRUE(typed->decoupled());
  EXPECT_EQ(typed->options().lr(), 0.004);
  auto adam = (*FindFactory<OptimizerPlugin>("adam"))->Create(AdamOptions());
  ASSERT_TRUE(adam.ok());
  EXPECT_FALSE(dynamic_cast<AdamOptimizer*>(adam->get())->decoupled());
  auto sgd = (*FindFactory<OptimizerPlugin>("sgd"))->Create(SgdOptions());
  ASSERT_TRUE(sgd.ok());
  EXPECT_THAT(dynamic_cast<SgdOptimizer*>(sgd->get()), NotNull());
}

TEST(OptimizerRegistrationTest, OptionsOfAnotherTypeOrOutOfRangeAreRefused) {
  auto factory = FindFactory<OptimizerPlugin>("adam");
  ASSERT_TRUE(factory.ok());
  EXPECT_EQ((*factory)->Create(AdamWOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
  AdamOptions bad;
  bad.set_lr(0);
  EXPECT_THAT((*factory)->Create(bad).status().message(), HasSubstr("lr: must be"));
}

}  // namespace
}  // namespace receipt_parity
