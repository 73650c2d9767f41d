// Measures the fp32 error of the first update of each built-in model
// (the configs' sizes) against the same update in fp64, and checks that it
// is within half the cross-device tolerance (cross_device_tolerance.h).
#include "parity/cross_device_tolerance.h"

#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <gtest/gtest.h>

#include "model/classifier.h"
#include "model/weighted_loss.h"

namespace receipt_parity {
namespace {

struct Measured {
  double max_abs = 0;   // max |fp32 - fp64|
  double max_ratio = 0; // max |fp32 - fp64| / (atol/2 + rtol/2 * |fp64|)
};

ModelSettings Settings(const std::string& architecture, std::vector<int> convs,
                       std::vector<int> hidden) {
  ModelSettings settings;
  settings.config.set_architecture(architecture);
  for (int c : convs) settings.config.add_conv_channels(c);
  for (int h : hidden) settings.config.add_hidden_units(h);
  settings.input_shape = {1, 32, 32};
  settings.num_classes = 4;
  settings.init_seed = 37;
  return settings;
}

std::vector<at::Tensor> FirstUpdateGradients(Classifier& model, const at::Tensor& images,
                                             const at::Tensor& labels) {
  // The trainer's global_count weights: 1 / the global accepted count.
  const std::vector<double> weights(images.size(0), 1.0 / images.size(0));
  absl::StatusOr<WeightedBackwardResult> result =
      WeightedBackward(model, images, labels, weights);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : model.parameters()) grads.push_back(p.grad().clone());
  return grads;
}

Measured Measure(const ModelSettings& settings) {
  absl::StatusOr<std::shared_ptr<Classifier>> fp32 = BuildClassifier(settings);
  absl::StatusOr<std::shared_ptr<Classifier>> fp64 = BuildClassifier(settings);
  EXPECT_TRUE(fp32.ok() && fp64.ok());
  (*fp64)->to(at::kDouble);
  at::manual_seed(5);
  const at::Tensor images = at::rand({32, 1, 32, 32});
  const at::Tensor labels = at::randint(0, 4, {32}, at::kLong);
  const std::vector<at::Tensor> a = FirstUpdateGradients(**fp32, images, labels);
  const std::vector<at::Tensor> b =
      FirstUpdateGradients(**fp64, images.to(at::kDouble), labels);
  Measured m;
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor diff = (a[i].to(at::kDouble) - b[i]).abs();
    const at::Tensor allowed = kCrossDeviceAtol / 2 + b[i].abs() * (kCrossDeviceRtol / 2);
    m.max_abs = std::max(m.max_abs, diff.max().item<double>());
    m.max_ratio = std::max(m.max_ratio, (diff / allowed).max().item<double>());
  }
  return m;
}

TEST(CrossDeviceToleranceTest, Fp32ErrorOfTheBuiltInModelsIsWithinHalfOfIt) {
  const std::vector<std::pair<std::string, ModelSettings>> models = {
      {"cnn [32, 64, 128] / [64]", Settings("cnn", {32, 64, 128}, {64})},
      {"cnn [16, 32] / [32]", Settings("cnn", {16, 32}, {32})},
      {"mlp [256]", Settings("mlp", {}, {256})},
      {"linear", Settings("linear", {}, {})}};
  for (const auto& [name, settings] : models) {
    const Measured m = Measure(settings);
    std::cout << name << ": max |fp32 - fp64| of the first update's gradient "
              << m.max_abs << ", at most " << m.max_ratio
              << " of half the cross-device tolerance" << std::endl;
    EXPECT_LE(m.max_ratio, 1.0) << name;
    EXPECT_GT(m.max_abs, 0.0) << name << ": fp32 and fp64 cannot agree exactly";
  }
}

}  // namespace
}  // namespace receipt_parity
