// The receipt-quality classifier and its revision.
//
// Architectures (ModelConfig.architecture):
//   "cnn"    [N, 1, S, S] -> per conv_channels: 3x3 conv (padding 1), ReLU,
//            2x2 max pool -> flatten -> hidden_units (ReLU) -> classes
//   "mlp"    flatten -> hidden_units (ReLU) -> classes
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
#include "model/model_config.h"

namespace torch {
namespace jit {
struct Module;
}  // namespace jit
}  // namespace torch

namespace receipt_parity {

class Classifier : public torch::nn::Module {
 public:
  // images: [N, input_shape...] float; returns logits [N, num_classes].
  // N may be 0.
  virtual at::Tensor forward(const at::Tensor& images) = 0;

  // e.g. "cnn(conv=8,16;hidden=32;in=1x32x32;classes=4)".
  virtual std::string Describe() const = 0;

  // The TorchScript module behind this model, or nullptr for a C++ model.
  virtual const torch::jit::Module* script_module() const { return nullptr; }
};

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
