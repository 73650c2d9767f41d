#include "model/builtin_models.h"

#include <utility>

#include "model/classifier.h"
#include "model/model_config.h"
#include "model/model_forms.h"

namespace receipt_parity {
namespace {

ModelSettings SettingsFor(const ModelConfig& config, const ClassifierSpec& spec) {
  return ModelSettings{config, spec.input_shape, spec.num_classes, spec.init_seed};
}

std::unique_ptr<ClassifierBuilder> OptionsBuilder(ModelConfig architecture_form) {
  return std::make_unique<ArchitectureBuilder>(std::move(architecture_form), "");
}

}  // namespace

absl::Status ArchitectureBuilder::Check(const ClassifierSpec& spec) const {
  return ValidateModelSettings(SettingsFor(config_, spec), field_prefix_);
}

absl::StatusOr<std::shared_ptr<Classifier>> ArchitectureBuilder::Build(
    const ClassifierSpec& spec) const {
  if (absl::Status s = Check(spec); !s.ok()) return s;
  return BuildClassifier(SettingsFor(config_, spec));
}

std::unique_ptr<ClassifierBuilder> ArchitectureFormBuilder(const ModelConfig& config) {
  return std::make_unique<ArchitectureBuilder>(config, "model.");
}

absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CnnModelFactory::CreateTyped(
    const CnnModelOptions& options) const {
  return OptionsBuilder(ArchitectureForm(options));
}

absl::StatusOr<std::unique_ptr<ClassifierBuilder>> MlpModelFactory::CreateTyped(
    const MlpModelOptions& options) const {
  return OptionsBuilder(ArchitectureForm(options));
}

absl::StatusOr<std::unique_ptr<ClassifierBuilder>> LinearModelFactory::CreateTyped(
    const LinearModelOptions& options) const {
  return OptionsBuilder(ArchitectureForm(options));
}

}  // namespace receipt_parity
