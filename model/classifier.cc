#include "model/classifier.h"

#include <ATen/ATen.h>
#include <c10/util/hash.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/keyed_dropout.h"
#include "model/sync_batch_norm.h"

namespace receipt_parity {
namespace {

class ConfiguredClassifier : public Classifier {
 public:
  ConfiguredClassifier(const ModelConfig& config,
                       const std::vector<int64_t>& input_shape,
                       int num_classes, uint64_t dropout_seed)
      : architecture_(config.architecture()),
        input_shape_(input_shape),
        num_classes_(num_classes),
        dropout_(config.dropout()),
        batch_norm_(config.batch_norm()) {
    int64_t features = 1;
    for (int64_t d : input_shape) features *= d;
    if (architecture_ == "cnn") {
      int64_t channels = input_shape[0];
      int64_t side = input_shape[1];
      for (int i = 0; i < config.conv_channels_size(); ++i) {
        convs_.push_back(register_module(
            absl::StrCat("conv", i),
            torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                  channels, config.conv_channels(i), 3)
                                  .padding(1)
                                  // A batch norm after it removes any bias.
                                  .bias(batch_norm_.empty()))));
        AddBatchNorm(i, config.conv_channels(i));
        channels = config.conv_channels(i);
        side /= 2;
      }
      features = channels * side * side;
    }
    if (architecture_ != "linear") {
      for (int i = 0; i < config.hidden_units_size(); ++i) {
        hidden_.push_back(register_module(
            absl::StrCat("fc", i),
            torch::nn::Linear(features, config.hidden_units(i))));
        features = config.hidden_units(i);
        hidden_units_.push_back(config.hidden_units(i));
        if (dropout_ > 0) {
          dropouts_.push_back(register_module(absl::StrCat("drop", i),
                                              KeyedDropout(dropout_, dropout_seed, i)));
        }
      }
    }
    out_ = register_module("out", torch::nn::Linear(features, num_classes));
    for (int i = 0; i < config.conv_channels_size(); ++i) {
      conv_channels_.push_back(config.conv_channels(i));
    }
  }

  // The batch norm of conv i, when the config asks for one.
  void AddBatchNorm(int i, int64_t channels) {
    const std::string name = absl::StrCat("bn", i);
    if (batch_norm_ == "sync") {
      sync_norms_.push_back(register_module(name, SyncBatchNorm2d(channels, i)));
    } else if (batch_norm_ == "per_rank") {
      rank_norms_.push_back(register_module(name, torch::nn::BatchNorm2d(channels)));
    }
  }

  at::Tensor Normalized(size_t i, const at::Tensor& x) {
    if (i < sync_norms_.size()) return sync_norms_[i]->forward(x);
    if (i < rank_norms_.size()) return rank_norms_[i]->forward(x);
    return x;
  }

  at::Tensor forward(const at::Tensor& images) override {
    return ForwardForUpdate(images, at::Tensor());
  }

  // Keyed dropout after each hidden layer's ReLU, when asked for.
  at::Tensor ForwardForUpdate(const at::Tensor& images,
                              const at::Tensor& update_keys) override {
    at::Tensor x = images;
    for (size_t i = 0; i < convs_.size(); ++i) {
      x = at::max_pool2d(at::relu(Normalized(i, convs_[i]->forward(x))), {2, 2});
    }
    x = x.flatten(1);
    for (size_t i = 0; i < hidden_.size(); ++i) {
      x = at::relu(hidden_[i]->forward(x));
      if (i < dropouts_.size()) x = dropouts_[i]->forward(x, update_keys);
    }
    return out_->forward(x);
  }

  std::string Describe() const override {
    return absl::StrCat(architecture_, "(conv=", absl::StrJoin(conv_channels_, ","),
                        ";hidden=", absl::StrJoin(hidden_units_, ","),
                        ";in=", absl::StrJoin(input_shape_, "x"),
                        ";classes=", num_classes_,
                        dropout_ > 0 ? absl::StrCat(";keyed_dropout=", dropout_) : "",
                        batch_norm_.empty() ? "" : absl::StrCat(";batch_norm=", batch_norm_),
                        ")");
  }

 private:
  std::string architecture_;
  std::vector<int64_t> input_shape_;
  int num_classes_;
  std::vector<int> conv_channels_;
  std::vector<int> hidden_units_;
  std::vector<torch::nn::Conv2d> convs_;
  std::vector<torch::nn::Linear> hidden_;
  double dropout_;
  std::string batch_norm_;
  std::vector<KeyedDropout> dropouts_;
  std::vector<SyncBatchNorm2d> sync_norms_;
  std::vector<torch::nn::BatchNorm2d> rank_norms_;
  torch::nn::Linear out_{nullptr};
};

}  // namespace

absl::StatusOr<std::shared_ptr<Classifier>> BuildClassifier(
    const ModelConfig& config, const std::vector<int64_t>& input_shape,
    int num_classes, uint64_t init_seed) {
  return BuildClassifier(ModelSettings{config, input_shape, num_classes, init_seed});
}

absl::StatusOr<std::shared_ptr<Classifier>> BuildClassifier(
    const ModelSettings& settings) {
  if (absl::Status s = ValidateModelSettings(settings); !s.ok()) return s;
  try {
    torch::manual_seed(settings.init_seed);
    return std::shared_ptr<Classifier>(std::make_shared<ConfiguredClassifier>(
        settings.config, settings.input_shape, settings.num_classes,
        /*dropout_seed=*/settings.init_seed));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("model: LibTorch refused to build it: ", e.what_without_backtrace()));
  }
}

std::string ParameterHash(const torch::nn::Module& model) {
  std::string bytes;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    at::Tensor t = item.value().detach().to(at::kCPU, at::kFloat).contiguous();
    absl::StrAppend(&bytes, item.key(), "[", absl::StrJoin(t.sizes(), ","),
                    "]");
    bytes.append(static_cast<const char*>(t.data_ptr()),
                 static_cast<size_t>(t.numel()) * sizeof(float));
  }
  return c10::sha1(bytes).str();
}

std::string ModelRevision(const Classifier& model) {
  return absl::StrCat(model.Describe(), "@", ParameterHash(model));
}

}  // namespace receipt_parity
