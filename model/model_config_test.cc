#include "model/model_config.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

ModelSettings Settings(const std::string& architecture,
                       std::vector<int> conv_channels,
                       std::vector<int> hidden_units, int64_t side = 32) {
  ModelSettings s;
  s.config.set_architecture(architecture);
  for (int c : conv_channels) s.config.add_conv_channels(c);
  for (int h : hidden_units) s.config.add_hidden_units(h);
  s.input_shape = {1, side, side};
  s.num_classes = 4;
  return s;
}

TEST(BuiltInParameterCountTest, CountsWeightsAndBiasesOfEveryLayer) {
  // conv 1->8 (72 + 8), conv 8->16 (1152 + 16), 16 x 8 x 8 -> 32 (32768 +
  // 32), 32 -> 4 (128 + 4).
  EXPECT_DOUBLE_EQ(BuiltInParameterCount(Settings("cnn", {8, 16}, {32})),
                   80 + 1168 + 32800 + 132);
  EXPECT_DOUBLE_EQ(BuiltInParameterCount(Settings("linear", {}, {})), 1024 * 4 + 4);
}

TEST(ValidateModelSettingsTest, AcceptsEveryBuiltInArchitecture) {
  EXPECT_TRUE(ValidateModelSettings(Settings("cnn", {8, 16}, {32})).ok());
  EXPECT_TRUE(ValidateModelSettings(Settings("mlp", {}, {64, 8})).ok());
  EXPECT_TRUE(ValidateModelSettings(Settings("linear", {}, {})).ok());
}

TEST(ValidateModelSettingsTest, EveryBadSettingNamesItsField) {
  const std::vector<std::pair<ModelSettings, std::string>> cases = {
      {Settings("rnn", {}, {}), "model.architecture: unknown 'rnn'; known: cnn, mlp, linear"},
      {Settings("", {}, {}), "model.architecture: unknown ''"},
      {Settings("cnn", {8, 0}, {}), "model.conv_channels: must be positive, got 0"},
      {Settings("mlp", {}, {-3}), "model.hidden_units: must be positive, got -3"},
      {Settings("cnn", {}, {8}), "model.conv_channels: a cnn needs at least one conv layer"},
      {Settings("cnn", {4, 4, 4, 4, 4, 4}, {}), "S divisible by 64, got 1x32x32"},
      {Settings("linear", {}, {8}), "model.hidden_units: a linear model has no hidden layers"},
      {Settings("mlp", {}, {8}, 0), "model: input shape 1x0x0 has a non-positive side"},
      // 2^31 - 1 units after 1024 inputs: 2.2e12 parameters, refused before
      // LibTorch would try to allocate them.
      {Settings("mlp", {}, {2147483647}),
       "model.hidden_units: a model of 2.21e+12 parameters needs about"},
  };
  for (const auto& [settings, expected] : cases) {
    absl::Status status = ValidateModelSettings(settings);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expected;
    EXPECT_THAT(status.message(), HasSubstr(expected));
  }
  ModelSettings no_classes = Settings("linear", {}, {});
  no_classes.num_classes = 0;
  EXPECT_THAT(ValidateModelSettings(no_classes).message(),
              HasSubstr("needs at least one class"));
}

ModelSettings WithDropout(ModelSettings settings, float p) {
  settings.config.set_dropout(p);
  return settings;
}

TEST(ValidateModelSettingsTest, KeyedDropoutIsAProbabilityAfterHiddenLayers) {
  EXPECT_TRUE(ValidateModelSettings(WithDropout(Settings("mlp", {}, {8}), 0.5)).ok());
  EXPECT_TRUE(ValidateModelSettings(WithDropout(Settings("cnn", {8}, {8}), 0)).ok());
  const std::vector<std::pair<ModelSettings, std::string>> cases = {
      {WithDropout(Settings("mlp", {}, {8}), 1), "model.dropout: 1 is outside [0, 1)"},
      {WithDropout(Settings("mlp", {}, {8}), -0.1f), "model.dropout: -0.1 is outside [0, 1)"},
      {WithDropout(Settings("mlp", {}, {8}), std::nanf("")), "model.dropout: nan is outside"},
      {WithDropout(Settings("linear", {}, {}), 0.2f),
       "model.dropout: keyed dropout follows each hidden layer, and this linear has none"},
      {WithDropout(Settings("cnn", {8}, {}), 0.2f), "this cnn has none"},
  };
  for (const auto& [settings, expected] : cases) {
    absl::Status status = ValidateModelSettings(settings);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expected;
    EXPECT_THAT(status.message(), HasSubstr(expected));
  }
}

}  // namespace
}  // namespace receipt_parity
