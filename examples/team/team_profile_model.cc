// A team's own model, the one its own-receipts parity_test trains
// (examples/team/BUILD): `team_profile` reads a receipt's print by its
// profiles, the mean of every row and of every column of the image (text
// lines show as row bands, a crop as dark columns), then one hidden ReLU
// layer and the logits.
//
//   plugin_library: "path/to/libteam_profile_model.so"
//   model {
//     name: "team_profile"
//     options { [type.googleapis.com/receipt_parity.TeamProfileOptions] { hidden_units: 16 } }
//   }
//
// The model interface is model/classifier_builder.h.
#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "examples/team/team_profile_options.pb.h"
#include "model/classifier_builder.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "team_profile";

class TeamProfileModel : public Classifier {
 public:
  // REQUIRES: spec.input_shape is {channels, height, width}.
  TeamProfileModel(const ClassifierSpec& spec, int hidden_units)
      : spec_(spec), hidden_units_(hidden_units) {
    const int64_t profiles = spec.input_shape[1] + spec.input_shape[2];
    hidden_ = register_module("hidden", torch::nn::Linear(profiles, hidden_units));
    logits_ = register_module("logits", torch::nn::Linear(hidden_units, spec.num_classes));
  }

  // images [N, C, H, W] -> [N, H + W]: the channels' mean per row, then
  // per column.
  at::Tensor forward(const at::Tensor& images) override {
    const at::Tensor gray = images.mean(1);
    const at::Tensor profiles = at::cat({gray.mean(2), gray.mean(1)}, 1);
    return logits_->forward(at::relu(hidden_->forward(profiles)));
  }

  std::string Describe() const override {
    return absl::StrCat(kName, "(hidden=", hidden_units_, ";in=",
                        absl::StrJoin(spec_.input_shape, "x"), ";classes=", spec_.num_classes,
                        ")");
  }

 private:
  ClassifierSpec spec_;
  int hidden_units_;
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear logits_{nullptr};
};

class TeamProfileBuilder : public ClassifierBuilder {
 public:
  explicit TeamProfileBuilder(int hidden_units) : hidden_units_(hidden_units) {}

  absl::Status Check(const ClassifierSpec& spec) const override {
    if (spec.input_shape.size() != 3 || spec.num_classes < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          kName, " needs images of shape [channels, height, width] and classes, got ",
          absl::StrJoin(spec.input_shape, "x")));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<Classifier>> Build(const ClassifierSpec& spec) const override {
    if (absl::Status s = Check(spec); !s.ok()) return s;
    try {
      torch::manual_seed(spec.init_seed);
      return std::shared_ptr<Classifier>(std::make_shared<TeamProfileModel>(spec, hidden_units_));
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat(kName, ": LibTorch refused to build it: ", e.what_without_backtrace()));
    }
  }

 private:
  int hidden_units_;
};

class TeamProfileFactory : public TypedFactory<ClassifierBuilder, TeamProfileOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> CreateTyped(
      const TeamProfileOptions& options) const override {
    if (options.hidden_units() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("hidden_units: must be >= 1, got ", options.hidden_units()));
    }
    return std::make_unique<TeamProfileBuilder>(options.hidden_units());
  }
};

PluginRegistrar<TeamProfileFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
