// The receipt-quality classifier (the interface: model/classifier_interface.h),
// the built-in architectures' builder, and a model's revision.
//
// The built-in architectures (ModelConfig.architecture):
//   "cnn"    [N, 1, S, S] -> per conv_channels: 3x3 conv (padding 1),
//            with batch_norm a batch norm ("bn<i>": synchronized,
//            model/sync_batch_norm.h, or torch's per-rank BatchNorm2d; the
//            conv then has no bias, which the norm would remove), ReLU,
//            2x2 max pool -> flatten -> hidden_units (ReLU) -> classes
//   "mlp"    flatten -> hidden_units (ReLU) -> classes
// With dropout p > 0, each hidden layer's ReLU is followed by a keyed
// dropout (model/keyed_dropout.h; module "drop<i>", layer i, seeded with
// the init seed) that acts in training updates (ForwardForUpdate) only.
//   "linear" flatten -> classes
// The output layer is always named "out" ("out.weight", "out.bias").
//
// Thread safety: a Classifier is a torch::nn::Module; use one per thread.
#ifndef RECEIPT_PARITY_MODEL_CLASSIFIER_H_
#define RECEIPT_PARITY_MODEL_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "absl/status/statusor.h"
#include "model/classifier_interface.h"
#include "model/model_config.h"

namespace receipt_parity {

// Builds the model with torch's generator seeded `init_seed` first, so every
// call with the same arguments gives bitwise-identical parameters.
// Errors: those of ValidateModelSettings (model/model_config.h).
absl::StatusOr<std::shared_ptr<Classifier>> BuildClassifier(
    const ModelSettings& settings);

// The same, settings spelled out.
absl::StatusOr<std::shared_ptr<Classifier>> BuildClassifier(
    const ModelConfig& config, const std::vector<int64_t>& input_shape,
    int num_classes, uint64_t init_seed);

// SHA-1 (hex) of every parameter's name, shape and float bytes, in
// registration order: equal hashes mean bitwise-equal parameters.
std::string ParameterHash(const torch::nn::Module& model);

// "<Describe()>@<ParameterHash() of the initial parameters>".
std::string ModelRevision(const Classifier& model);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_CLASSIFIER_H_
