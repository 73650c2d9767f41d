// The classifier's settings for one run (ModelConfig,
// model/model_config.proto, plus what the data and the label map decide)
// and their checks. No LibTorch: a config is checked before anything is
// built; model/classifier.h builds what passes.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_MODEL_MODEL_CONFIG_H_
#define RECEIPT_PARITY_MODEL_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/model_config.pb.h"

namespace receipt_parity {

struct ModelSettings {
  // The architecture form (model/model_forms.h): architecture,
  // conv_channels, hidden_units.
  ModelConfig config;
  // One example's shape, e.g. [1, S, S] for S x S grayscale images.
  std::vector<int64_t> input_shape;
  int num_classes = 0;
  // torch's generator is seeded with it before the parameters are made.
  uint64_t init_seed = 0;
};

// InvalidArgument naming the field ("model.architecture: unknown 'rnn';
// known: cnn, mlp, linear") for: an architecture other than cnn, mlp or
// linear; conv_channels or hidden_units not positive; a cnn without conv
// layers or on inputs that are not [C, S, S] with S divisible by
// 2^len(conv_channels); a linear model with hidden units; no classes; an
// empty or non-positive input shape; what ValidateDropout and
// ValidateBatchNorm refuse.
absl::Status ValidateModelSettings(const ModelSettings& settings);

// The same checks, each field named `field_prefix` + its name: "model."
// above (the architecture form), "" inside a model plugin's options
// ("conv_channels: must be positive, got 0").
absl::Status ValidateModelSettings(const ModelSettings& settings,
                                   const std::string& field_prefix);

// A built-in model's parameter count, from its settings alone (nothing
// allocated); a double, as it may not fit an int64.
// REQUIRES: the settings' other checks passed.
double BuiltInParameterCount(const ModelSettings& settings);

// InvalidArgument naming `field_prefix` + "hidden_units" when the model's
// weights, gradients and optimizer state (4 x 4 bytes a parameter) exceed
// this machine's memory: refused at load, before LibTorch would fail to
// allocate it.
absl::Status ValidateModelFitsInMemory(const ModelSettings& settings,
                                       const std::string& field_prefix);

// InvalidArgument naming `field_prefix` + "dropout" for a probability
// outside [0, 1) (NaN included) or a dropout on a model without hidden
// layers (it would drop nothing).
absl::Status ValidateDropout(const ModelConfig& config, const std::string& field_prefix);

// InvalidArgument naming `field_prefix` + "batch_norm" for a kind other
// than "", "sync" and "per_rank", or a batch norm on a model without conv
// layers.
absl::Status ValidateBatchNorm(const ModelConfig& config, const std::string& field_prefix);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_MODEL_CONFIG_H_
