#include "model/model_forms.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

absl::Status Invalid(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// The architecture form's repeated fields written beside model.name.
absl::Status CheckNoArchitectureFields(const ModelConfig& config) {
  const char kHint[] =
      " belongs to the architecture form (model { architecture: ... }); with "
      "model.name, write it in the plugin's options, e.g. options { "
      "[type.googleapis.com/receipt_parity.CnnModelOptions] { conv_channels: "
      "[8] hidden_units: [16] } }";
  if (config.conv_channels_size() > 0) {
    return Invalid("model.conv_channels", absl::StrCat("conv_channels", kHint));
  }
  if (config.hidden_units_size() > 0) {
    return Invalid("model.hidden_units", absl::StrCat("hidden_units", kHint));
  }
  if (config.dropout() != 0) {
    return Invalid("model.dropout", absl::StrCat("dropout", kHint));
  }
  if (!config.batch_norm().empty()) {
    return Invalid("model.batch_norm", absl::StrCat("batch_norm", kHint));
  }
  return absl::OkStatus();
}

// `options` (absent: defaults) unpacked into T; false when of another type.
template <typename T>
bool UnpackOptions(const ModelConfig& config, T* options) {
  return !config.has_options() || config.options().UnpackTo(options);
}

}  // namespace

absl::Status CheckModelForm(const ModelConfig& config) {
  const bool architecture = !config.architecture().empty();
  if (architecture && config.has_name()) {
    return Invalid("model.name",
                   absl::StrCat("the plugin form (model.name \"", config.name(),
                                "\", model.options) cannot be mixed with the "
                                "architecture form (model.architecture \"",
                                config.architecture(), "\"); write one of them"));
  }
  if (architecture && config.has_options()) {
    return Invalid("model.options",
                   absl::StrCat("options belong to the plugin form (model { name: ... "
                                "options { ... } }); the architecture form (model."
                                "architecture \"", config.architecture(),
                                "\") takes conv_channels, hidden_units, dropout and batch_norm"));
  }
  if (architecture) return absl::OkStatus();
  if (config.has_name()) return CheckNoArchitectureFields(config);
  if (config.has_options()) {
    return Invalid("model.name", "missing: model.options needs the name of the "
                                 "model plugin they are for");
  }
  return Invalid("model.architecture",
                 "missing; choose cnn, mlp or linear, or name a model plugin "
                 "(model { name: \"...\" options { ... } })");
}

ModelConfig ArchitectureForm(const CnnModelOptions& options) {
  ModelConfig config;
  config.set_architecture("cnn");
  *config.mutable_conv_channels() = options.conv_channels();
  *config.mutable_hidden_units() = options.hidden_units();
  config.set_dropout(options.dropout());
  config.set_batch_norm(options.batch_norm());
  return config;
}

ModelConfig ArchitectureForm(const MlpModelOptions& options) {
  ModelConfig config;
  config.set_architecture("mlp");
  *config.mutable_hidden_units() = options.hidden_units();
  config.set_dropout(options.dropout());
  return config;
}

ModelConfig ArchitectureForm(const LinearModelOptions&) {
  ModelConfig config;
  config.set_architecture("linear");
  return config;
}

ModelConfig ArchitectureFormOf(const ModelConfig& config) {
  if (!IsPluginForm(config) || config.conv_channels_size() > 0 ||
      config.hidden_units_size() > 0 || config.dropout() != 0 ||
      !config.batch_norm().empty()) {
    return config;
  }
  if (CnnModelOptions cnn; config.name() == "cnn" && UnpackOptions(config, &cnn)) {
    return ArchitectureForm(cnn);
  }
  if (MlpModelOptions mlp; config.name() == "mlp" && UnpackOptions(config, &mlp)) {
    return ArchitectureForm(mlp);
  }
  if (LinearModelOptions linear;
      config.name() == "linear" && UnpackOptions(config, &linear)) {
    return ArchitectureForm(linear);
  }
  return config;
}

}  // namespace receipt_parity
