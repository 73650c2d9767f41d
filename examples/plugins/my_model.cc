// An example model plugin built as a shared library (libmy_model.so) and
// loaded at start through the config's `plugin_library`; select it with
//
//   plugin_library: "path/to/libmy_model.so"
//   model {
//     name: "my_model"
//     options { [type.googleapis.com/receipt_parity.MyModelOptions] { hidden_units: 24 } }
//   }
//
// `my_model` is a team's own classifier: flatten -> hidden_units (tanh) ->
// one logit per label, its parameters named "hidden.weight",
// "hidden.bias", "logits.weight", "logits.bias". Any torch::nn::Module
// works the same way: derive from Classifier (model/classifier_interface.h),
// register parameters and buffers, and build it from the spec's shapes.
//
// The model plugin interface is model/classifier_builder.h. The library
// depends on header-only targets (//model:model_plugin_api,
// //plugins:plugin_api) and its own options only, so the registry it
// registers into is the host binary's (see plugins/plugin_library.h).
#include <exception>
#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/classifier_builder.h"
#include "examples/plugins/my_model_options.pb.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

class MyModel : public Classifier {
 public:
  MyModel(const ClassifierSpec& spec, int hidden_units) : spec_(spec), hidden_units_(hidden_units) {
    int64_t features = 1;
    for (int64_t d : spec.input_shape) features *= d;
    hidden_ = register_module("hidden", torch::nn::Linear(features, hidden_units));
    logits_ = register_module("logits", torch::nn::Linear(hidden_units, spec.num_classes));
  }

  at::Tensor forward(const at::Tensor& images) override {
    return logits_->forward(at::tanh(hidden_->forward(images.flatten(1))));
  }

  // Part of the model revision: say everything that decides the model.
  std::string Describe() const override {
    return absl::StrCat("my_model(hidden=", hidden_units_, ";in=",
                        absl::StrJoin(spec_.input_shape, "x"), ";classes=", spec_.num_classes,
                        ")");
  }

 private:
  ClassifierSpec spec_;
  int hidden_units_;
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear logits_{nullptr};
};

class MyModelBuilder : public ClassifierBuilder {
 public:
  explicit MyModelBuilder(int hidden_units) : hidden_units_(hidden_units) {}

  // Runs when the config is loaded: refuse what Build cannot make.
  absl::Status Check(const ClassifierSpec& spec) const override {
    if (spec.input_shape.empty() || spec.num_classes < 1) {
      return absl::InvalidArgumentError("my_model needs an input shape and classes");
    }
    return absl::OkStatus();
  }

  // The same spec gives the same initial parameters: seed first.
  absl::StatusOr<std::shared_ptr<Classifier>> Build(
      const ClassifierSpec& spec) const override {
    if (absl::Status s = Check(spec); !s.ok()) return s;
    try {  // LibTorch throws; a Status leaves this function
      torch::manual_seed(spec.init_seed);
      return std::shared_ptr<Classifier>(std::make_shared<MyModel>(spec, hidden_units_));
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat("my_model: LibTorch refused to build it: ", e.what_without_backtrace()));
    }
  }

 private:
  int hidden_units_;
};

class MyModelFactory : public TypedFactory<ClassifierBuilder, MyModelOptions> {
 public:
  std::string name() const override { return "my_model"; }

 private:
  // Errors name the option; the trainer puts "model.options: " in front.
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const MyModelOptions& options) const override {
    if (options.hidden_units() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("hidden_units: must be >= 1, got ", options.hidden_units()));
    }
    return std::make_unique<MyModelBuilder>(options.hidden_units());
  }
};

PluginRegistrar<MyModelFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
