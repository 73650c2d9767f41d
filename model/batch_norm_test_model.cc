// Test only: the model plugin "test_batch_norm_cnn", linked (alwayslink)
// into //trainer:train_with_test_plugins and the layer policy's test: a
// small CNN with batch norm, 3x3 conv (1 -> 4 channels, padding 1) "conv",
// BatchNorm2d "bn" (training mode), ReLU, flatten, "out". What the layer
// audit, parity and the buffer comparison do with such a model is tested
// end to end through it (trainer/integration/layer_audit_cli_test.py), selected as
//   model { name: "test_batch_norm_cnn" }
// With options { fp32_only: true } its forward refuses to run under
// autocast, as a model that computes in fp32 only would (the refusal of
// precision bf16 is tested with it, trainer/integration/recipes_test.py).
#include <memory>
#include <string>

#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "absl/strings/str_cat.h"
#include "model/classifier_builder.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"
#include "plugins/test_options.pb.h"

namespace receipt_parity {
namespace {

class BatchNormCnn : public Classifier {
 public:
  BatchNormCnn(int64_t side, int num_classes, bool fp32_only)
      : side_(side), classes_(num_classes), fp32_only_(fp32_only) {
    conv_ = register_module(
        "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)));
    bn_ = register_module("bn", torch::nn::BatchNorm2d(4));
    out_ = register_module("out", torch::nn::Linear(4 * side * side, num_classes));
  }

  at::Tensor forward(const at::Tensor& images) override {
    TORCH_CHECK(!fp32_only_ || !at::autocast::is_autocast_enabled(images.device().type()),
                "this model computes in fp32 only");
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
  bool fp32_only_;
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  torch::nn::Linear out_{nullptr};
};

class BatchNormCnnBuilder : public ClassifierBuilder {
 public:
  explicit BatchNormCnnBuilder(bool fp32_only) : fp32_only_(fp32_only) {}

  absl::Status Check(const ClassifierSpec& spec) const override {
    if (spec.input_shape.size() != 3 || spec.input_shape[0] != 1 ||
        spec.input_shape[1] != spec.input_shape[2] || spec.num_classes < 1) {
      return absl::InvalidArgumentError("test_batch_norm_cnn needs [1, S, S] inputs and classes");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<Classifier>> Build(const ClassifierSpec& spec) const override {
    if (absl::Status s = Check(spec); !s.ok()) return s;
    try {
      torch::manual_seed(spec.init_seed);
      return std::shared_ptr<Classifier>(
          std::make_shared<BatchNormCnn>(spec.input_shape.back(), spec.num_classes, fp32_only_));
    } catch (const c10::Error& e) {
      return absl::InternalError(e.what_without_backtrace());
    }
  }

 private:
  bool fp32_only_;
};

class BatchNormCnnFactory
    : public TypedFactory<ClassifierBuilder, testing::BatchNormTestCnnOptions> {
 public:
  std::string name() const override { return "test_batch_norm_cnn"; }

 private:
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const testing::BatchNormTestCnnOptions& options) const override {
    return std::make_unique<BatchNormCnnBuilder>(options.fp32_only());
  }
};

PluginRegistrar<BatchNormCnnFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
