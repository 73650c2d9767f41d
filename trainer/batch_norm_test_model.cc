// Test only: linked (alwayslink) into //trainer:train_with_batch_norm_model,
// it makes every run of that binary train a small CNN with batch norm
// instead of the configured model: 3x3 conv (1 -> 4 channels, padding 1)
// "conv", BatchNorm2d "bn" (training mode), ReLU, flatten, "out". What the
// layer audit, parity and the buffer comparison do with such a model is
// tested end to end through it (trainer/layer_audit_cli_test.py), until a
// team's model can be a plugin.
#include <memory>

#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "absl/strings/str_cat.h"
#include "model/classifier.h"
#include "trainer/run_model.h"

namespace receipt_parity {
namespace {

class BatchNormCnn : public Classifier {
 public:
  BatchNormCnn(int64_t side, int num_classes) : side_(side), classes_(num_classes) {
    conv_ = register_module(
        "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)));
    bn_ = register_module("bn", torch::nn::BatchNorm2d(4));
    out_ = register_module("out", torch::nn::Linear(4 * side * side, num_classes));
  }

  at::Tensor forward(const at::Tensor& images) override {
    at::Tensor x = torch::nn::functional::relu(bn_->forward(conv_->forward(images)));
    return out_->forward(x.flatten(1));
  }

  std::string Describe() const override {
    return absl::StrCat("cnn_batch_norm_test(in=1x", side_, "x", side_, ";classes=", classes_,
                        ")");
  }

 private:
  int64_t side_;
  int classes_;
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  torch::nn::Linear out_{nullptr};
};

absl::StatusOr<std::shared_ptr<Classifier>> BuildBatchNormCnn(const ModelSettings& settings) {
  torch::manual_seed(settings.init_seed);
  return std::shared_ptr<Classifier>(
      std::make_shared<BatchNormCnn>(settings.input_shape.back(), settings.num_classes));
}

// Only stores the pointer (no LibTorch call during static initialisation).
const bool kInstalled = (InstallModelBuilderForTesting(&BuildBatchNormCnn), true);

}  // namespace
}  // namespace receipt_parity
