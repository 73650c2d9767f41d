// The built-in model plugins cnn, mlp and linear: model/classifier.h's
// classifiers, selected like any model plugin (model/classifier_builder.h)
//   model { name: "cnn" options { [type.googleapis.com/receipt_parity.CnnModelOptions] { ... } } }
// or in the architecture form (model/model_forms.h)
//   model { architecture: "cnn" conv_channels: [...] hidden_units: [...] }
// Both build the same classifier with the same Describe(), hence the same
// model revision. Options: model/model_options.proto. Registered by
// :cnn_registration, :mlp_registration and :linear_registration.
//
// Thread safety: factories and builders are immutable.
#ifndef RECEIPT_PARITY_MODEL_BUILTIN_MODELS_H_
#define RECEIPT_PARITY_MODEL_BUILTIN_MODELS_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "model/classifier_builder.h"
#include "model/model_config.pb.h"
#include "model/model_options.pb.h"
#include "plugins/plugin_factory.h"

namespace receipt_parity {

// Builds model/classifier.h's classifier for an architecture-form config.
class ArchitectureBuilder : public ClassifierBuilder {
 public:
  // `field_prefix` names the fields in errors: "model." for a config's
  // architecture form, "" for a plugin's options.
  ArchitectureBuilder(ModelConfig architecture_form, std::string field_prefix)
      : config_(std::move(architecture_form)), field_prefix_(std::move(field_prefix)) {}

  // ValidateModelSettings (model/model_config.h) for `spec`.
  absl::Status Check(const ClassifierSpec& spec) const override;
  // BuildClassifier (model/classifier.h): seeded by spec.init_seed.
  absl::StatusOr<std::shared_ptr<Classifier>> Build(
      const ClassifierSpec& spec) const override;

 private:
  ModelConfig config_;
  std::string field_prefix_;
};

// What a config's architecture form builds; errors name "model.<field>".
std::unique_ptr<ClassifierBuilder> ArchitectureFormBuilder(const ModelConfig& config);

// model/cnn.
class CnnModelFactory : public TypedFactory<ClassifierBuilder, CnnModelOptions> {
 public:
  std::string name() const override { return "cnn"; }

 private:
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const CnnModelOptions& options) const override;
};

// model/mlp.
class MlpModelFactory : public TypedFactory<ClassifierBuilder, MlpModelOptions> {
 public:
  std::string name() const override { return "mlp"; }

 private:
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const MlpModelOptions& options) const override;
};

// model/linear.
class LinearModelFactory : public TypedFactory<ClassifierBuilder, LinearModelOptions> {
 public:
  std::string name() const override { return "linear"; }

 private:
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const LinearModelOptions& options) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_BUILTIN_MODELS_H_
