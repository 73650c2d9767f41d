#include "model/model_config.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "data/data_config.h"

namespace receipt_parity {

absl::Status ValidateModelSettings(const ModelSettings& settings) {
  return ValidateModelSettings(settings, "model.");
}

absl::Status ValidateModelSettings(const ModelSettings& settings,
                                   const std::string& field_prefix) {
  const ModelConfig& config = settings.config;
  const std::vector<int64_t>& input_shape = settings.input_shape;
  const int num_classes = settings.num_classes;
  const std::string& arch = config.architecture();
  if (arch != "cnn" && arch != "mlp" && arch != "linear") {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, "architecture: unknown '", arch,
        "'; known: cnn, mlp, linear"));
  }
  if (num_classes < 1) {
    return absl::InvalidArgumentError("model: needs at least one class");
  }
  if (input_shape.empty()) {
    return absl::InvalidArgumentError("model: empty input shape");
  }
  for (int64_t d : input_shape) {
    if (d < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("model: input shape ", absl::StrJoin(input_shape, "x"),
                       " has a non-positive side"));
    }
  }
  for (int c : config.conv_channels()) {
    if (c < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          field_prefix, "conv_channels: must be positive, got ", c));
    }
  }
  for (int h : config.hidden_units()) {
    if (h < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          field_prefix, "hidden_units: must be positive, got ", h));
    }
  }
  if (arch == "cnn") {
    if (config.conv_channels_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field_prefix, "conv_channels: a cnn needs at least one conv layer"));
    }
    const int64_t divisor = int64_t{1} << config.conv_channels_size();
    if (input_shape.size() != 3 || input_shape[1] != input_shape[2] ||
        input_shape[1] % divisor != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field_prefix, "conv_channels: a cnn with ", config.conv_channels_size(),
          " conv layers needs [C, S, S] inputs with S divisible by ", divisor,
          ", got ", absl::StrJoin(input_shape, "x")));
    }
  } else if (arch == "linear" && config.hidden_units_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, "hidden_units: a linear model has no hidden layers"));
  }
  if (absl::Status s = ValidateDropout(config, field_prefix); !s.ok()) return s;
  if (absl::Status s = ValidateBatchNorm(config, field_prefix); !s.ok()) return s;
  return ValidateModelFitsInMemory(settings, field_prefix);
}

double BuiltInParameterCount(const ModelSettings& settings) {
  const ModelConfig& config = settings.config;
  double features = 1;
  for (int64_t d : settings.input_shape) features *= static_cast<double>(d);
  double parameters = 0;
  if (config.architecture() == "cnn") {
    double channels = static_cast<double>(settings.input_shape[0]);
    double side = static_cast<double>(settings.input_shape[1]);
    for (int c : config.conv_channels()) {
      parameters += channels * c * 9 + c;
      channels = c;
      side = std::floor(side / 2);
    }
    features = channels * side * side;
  }
  if (config.architecture() != "linear") {
    for (int h : config.hidden_units()) {
      parameters += features * h + h;
      features = h;
    }
  }
  return parameters + features * settings.num_classes + settings.num_classes;
}

absl::Status ValidateModelFitsInMemory(const ModelSettings& settings,
                                       const std::string& field_prefix) {
  // Weights, gradients and two optimizer buffers (Adam's), in fp32.
  const double parameters = BuiltInParameterCount(settings);
  const double bytes = parameters * 4 * 4;
  const double physical = static_cast<double>(PhysicalMemoryBytes());
  if (bytes <= physical) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%shidden_units: a model of %.3g parameters needs about %.1f GiB for its "
      "weights, gradients and optimizer state; this machine has %.1f GiB",
      field_prefix, parameters, bytes / double(int64_t{1} << 30),
      physical / double(int64_t{1} << 30)));
}

absl::Status ValidateDropout(const ModelConfig& config, const std::string& field_prefix) {
  const float p = config.dropout();
  if (!(p >= 0 && p < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, "dropout: ", p, " is outside [0, 1) (the probability that "
        "an element is dropped)"));
  }
  if (p > 0 && config.hidden_units_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, "dropout: keyed dropout follows each hidden layer, and this ",
        config.architecture(), " has none (hidden_units is empty)"));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity

namespace receipt_parity {

absl::Status ValidateBatchNorm(const ModelConfig& config, const std::string& field_prefix) {
  const std::string& kind = config.batch_norm();
  if (kind.empty()) return absl::OkStatus();
  if (kind != "sync" && kind != "per_rank") {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, "batch_norm: unknown \"", kind,
        "\"; known: \"sync\" (synchronized over the update, keeps parity), \"per_rank\" "
        "(each rank's own statistics, breaks it)"));
  }
  if (config.architecture() != "cnn") {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, "batch_norm: a batch norm follows each conv layer, and this ",
        config.architecture(), " has none"));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
