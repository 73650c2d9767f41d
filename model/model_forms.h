// The two forms a config's `model` takes (model/model_config.proto):
//   architecture form  model { architecture: "cnn" conv_channels: [8] hidden_units: [16] }
//   plugin form        model { name: "cnn" options {
//                        [type.googleapis.com/receipt_parity.CnnModelOptions] {
//                          conv_channels: [8] hidden_units: [16] } } }
// The architecture form means the built-in plugin of that name
// (model/builtin_models.h) with the options its fields spell; the plugin
// form selects any registered model plugin (model/classifier_builder.h).
// Both forms of a built-in model are one model: ArchitectureFormOf gives
// the plugin form of cnn, mlp and linear in the architecture form, which is
// what the config fingerprint hashes, so configs written either way hash
// the same, and they build the same classifier (same model revision).
//
// No LibTorch. Thread safety: pure functions.
#ifndef RECEIPT_PARITY_MODEL_MODEL_FORMS_H_
#define RECEIPT_PARITY_MODEL_MODEL_FORMS_H_

#include "absl/status/status.h"
#include "model/model_config.pb.h"
#include "model/model_options.pb.h"

namespace receipt_parity {

// OK when `config` is one form or the other. InvalidArgument naming the
// field otherwise: neither form ("model.architecture: missing; ..."),
// model.name beside model.architecture, model.options without model.name,
// or conv_channels / hidden_units beside model.name.
absl::Status CheckModelForm(const ModelConfig& config);

// model.name is written: the plugin form.
inline bool IsPluginForm(const ModelConfig& config) { return config.has_name(); }

// The plugin form of a built-in architecture model ("cnn", "mlp" or
// "linear" with options of its own type, or none) in the architecture form;
// any other config as it is.
ModelConfig ArchitectureFormOf(const ModelConfig& config);

// Each built-in plugin's options in the architecture form.
ModelConfig ArchitectureForm(const CnnModelOptions& options);
ModelConfig ArchitectureForm(const MlpModelOptions& options);
ModelConfig ArchitectureForm(const LinearModelOptions& options);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_MODEL_FORMS_H_
