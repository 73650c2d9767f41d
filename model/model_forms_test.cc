#include "model/model_forms.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

ModelConfig Parse(const std::string& text) {
  ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

std::string Deterministic(const ModelConfig& config) {
  std::string bytes;
  EXPECT_TRUE(config.SerializeToString(&bytes));
  return bytes;
}

TEST(ModelFormsTest, EitherFormIsAcceptedAlone) {
  EXPECT_TRUE(CheckModelForm(Parse("architecture: 'cnn' conv_channels: [8]")).ok());
  EXPECT_TRUE(CheckModelForm(Parse("name: 'torchscript'")).ok());
  EXPECT_TRUE(CheckModelForm(Parse(
      "name: 'cnn' options { [type.googleapis.com/receipt_parity.CnnModelOptions] "
      "{ conv_channels: [8] } }")).ok());
}

TEST(ModelFormsTest, MixingTheFormsNamesTheField) {
  const struct {
    std::string text;
    std::string error;
  } cases[] = {
      {"architecture: 'cnn' name: 'cnn'",
       "model.name: the plugin form (model.name \"cnn\", model.options) cannot be "
       "mixed with the architecture form (model.architecture \"cnn\")"},
      {"architecture: 'mlp' options { [type.googleapis.com/receipt_parity.MlpModelOptions] {} }",
       "model.options: options belong to the plugin form"},
      {"name: 'cnn' conv_channels: [8]", "model.conv_channels: conv_channels belongs to "
                                         "the architecture form"},
      {"name: 'mlp' hidden_units: [8]", "model.hidden_units: hidden_units belongs to"},
      {"name: 'mlp' dropout: 0.5", "model.dropout: dropout belongs to the architecture form"},
      {"options { [type.googleapis.com/receipt_parity.MlpModelOptions] {} }",
       "model.name: missing: model.options needs the name"},
      {"", "model.architecture: missing; choose cnn, mlp or linear, or name a model plugin"},
  };
  for (const auto& c : cases) {
    absl::Status status = CheckModelForm(Parse(c.text));
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << c.text;
    EXPECT_THAT(status.message(), HasSubstr(c.error)) << c.text;
  }
}

TEST(ModelFormsTest, TheBuiltInsPluginFormIsTheirArchitectureFormByteForByte) {
  const struct {
    std::string plugin_form;
    std::string architecture_form;
  } cases[] = {
      {"name: 'cnn' options { [type.googleapis.com/receipt_parity.CnnModelOptions] "
       "{ conv_channels: [8, 16] hidden_units: [32] } }",
       "architecture: 'cnn' conv_channels: [8, 16] hidden_units: [32]"},
      {"name: 'mlp' options { [type.googleapis.com/receipt_parity.MlpModelOptions] "
       "{ hidden_units: [64, 32] } }",
       "architecture: 'mlp' hidden_units: [64, 32]"},
      {"name: 'mlp'", "architecture: 'mlp'"},
      {"name: 'cnn' options { [type.googleapis.com/receipt_parity.CnnModelOptions] "
       "{ conv_channels: [8] hidden_units: [32] dropout: 0.25 } }",
       "architecture: 'cnn' conv_channels: [8] hidden_units: [32] dropout: 0.25"},
      {"name: 'linear' options { [type.googleapis.com/receipt_parity.LinearModelOptions] {} }",
       "architecture: 'linear'"},
  };
  for (const auto& c : cases) {
    const ModelConfig architecture = Parse(c.architecture_form);
    EXPECT_EQ(Deterministic(ArchitectureFormOf(Parse(c.plugin_form))),
              Deterministic(architecture))
        << c.plugin_form;
    EXPECT_EQ(Deterministic(ArchitectureFormOf(architecture)), Deterministic(architecture));
  }
}

TEST(ModelFormsTest, OtherPluginsAndOptionsOfAnotherTypeStayAsWritten) {
  for (const std::string text :
       {"name: 'torchscript' options { [type.googleapis.com/receipt_parity."
        "TorchScriptModelOptions] { path: 'm.pt' } }",
        "name: 'cnn' options { [type.googleapis.com/receipt_parity.MlpModelOptions] {} }"}) {
    const ModelConfig config = Parse(text);
    EXPECT_EQ(Deterministic(ArchitectureFormOf(config)), Deterministic(config)) << text;
  }
}

}  // namespace
}  // namespace receipt_parity
