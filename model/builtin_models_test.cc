#include "model/builtin_models.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "model/classifier.h"
#include "model/model_forms.h"
#include "plugins/plugin_registry.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

const ClassifierSpec kSpec{{1, 16, 16}, 4, 37, nullptr};

absl::StatusOr<std::unique_ptr<ClassifierBuilder>> Selected(const std::string& text) {
  PluginSelection selection;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &selection)) << text;
  return CreateSelectedPlugin<ClassifierBuilder>(selection, "model");
}

TEST(BuiltinModelsTest, CnnMlpAndLinearAreModelPlugins) {
  EXPECT_THAT(RegisteredNames(ClassifierBuilder::kKind),
              IsSupersetOf({"cnn", "linear", "mlp"}));
}

TEST(BuiltinModelsTest, BothFormsBuildTheSameModelRevision) {
  const struct {
    std::string plugin_form;
    std::string architecture_form;
  } cases[] = {
      {"name: 'cnn' options { [type.googleapis.com/receipt_parity.CnnModelOptions] "
       "{ conv_channels: [4, 8] hidden_units: [16] } }",
       "architecture: 'cnn' conv_channels: [4, 8] hidden_units: [16]"},
      {"name: 'mlp' options { [type.googleapis.com/receipt_parity.MlpModelOptions] "
       "{ hidden_units: [12] } }",
       "architecture: 'mlp' hidden_units: [12]"},
      {"name: 'linear'", "architecture: 'linear'"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::unique_ptr<ClassifierBuilder>> plugin = Selected(c.plugin_form);
    ASSERT_TRUE(plugin.ok()) << plugin.status();
    ASSERT_TRUE((*plugin)->Check(kSpec).ok());
    absl::StatusOr<std::shared_ptr<Classifier>> from_plugin = (*plugin)->Build(kSpec);
    ModelConfig architecture;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.architecture_form,
                                                              &architecture));
    absl::StatusOr<std::shared_ptr<Classifier>> from_architecture =
        ArchitectureFormBuilder(architecture)->Build(kSpec);
    absl::StatusOr<std::shared_ptr<Classifier>> today = BuildClassifier(
        architecture, kSpec.input_shape, kSpec.num_classes, kSpec.init_seed);
    ASSERT_TRUE(from_plugin.ok() && from_architecture.ok() && today.ok());
    EXPECT_EQ(ModelRevision(**from_plugin), ModelRevision(**today)) << c.plugin_form;
    EXPECT_EQ(ModelRevision(**from_architecture), ModelRevision(**today));
  }
}

TEST(BuiltinModelsTest, OptionErrorsNameTheOptionAndArchitectureErrorsTheField) {
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> plugin = Selected(
      "name: 'cnn' options { [type.googleapis.com/receipt_parity.CnnModelOptions] "
      "{ conv_channels: [4, 0] } }");
  ASSERT_TRUE(plugin.ok());
  EXPECT_EQ((*plugin)->Check(kSpec).message(), "conv_channels: must be positive, got 0");
  ModelConfig architecture;
  architecture.set_architecture("cnn");
  architecture.add_conv_channels(0);
  EXPECT_EQ(ArchitectureFormBuilder(architecture)->Check(kSpec).message(),
            "model.conv_channels: must be positive, got 0");
  EXPECT_THAT(
      Selected("name: 'cnn' options { [type.googleapis.com/receipt_parity.MlpModelOptions] {} }")
          .status()
          .message(),
      HasSubstr("model.options: plugin 'cnn' takes options of type "
                "receipt_parity.CnnModelOptions"));
}

}  // namespace
}  // namespace receipt_parity
