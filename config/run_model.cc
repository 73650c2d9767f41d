#include "config/run_model.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "model/autocast_scope.h"
#include "model/builtin_models.h"
#include "model/classifier.h"
#include "model/classifier_builder.h"
#include "model/model_forms.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

absl::Status Prefixed(const std::string& prefix, const absl::Status& status) {
  if (status.ok() || prefix.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

absl::StatusOr<std::shared_ptr<Classifier>> RunModel::Build() const {
  absl::StatusOr<std::shared_ptr<Classifier>> model = builder->Build(spec);
  if (!model.ok()) return Prefixed(error_prefix, model.status());
  return model;
}

absl::StatusOr<RunModel> SelectRunModel(const ModelConfig& model, ClassifierSpec spec) {
  RunModel run;
  run.spec = std::move(spec);
  if (!IsPluginForm(model)) {
    run.name = model.architecture();
    run.builder = ArchitectureFormBuilder(model);
  } else {
    PluginSelection selection;
    selection.set_name(model.name());
    if (model.has_options()) *selection.mutable_options() = model.options();
    absl::StatusOr<std::unique_ptr<ClassifierBuilder>> builder =
        CreateSelectedPlugin<ClassifierBuilder>(selection, "model");
    if (!builder.ok()) return builder.status();
    run.name = model.name();
    run.builder = std::move(*builder);
    run.error_prefix = "model.options: ";
  }
  if (absl::Status s = run.builder->Check(run.spec); !s.ok()) {
    return Prefixed(run.error_prefix, s);
  }
  return run;
}

absl::Status CheckRunsUnderAutocast(const RunModel& model) {
  absl::StatusOr<std::shared_ptr<Classifier>> built = model.Build();
  if (!built.ok()) return built.status();
  const auto refused = [&model](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "precision: bf16: model ", model.name, " cannot run under bfloat16 autocast: ", why));
  };
  try {
    std::vector<int64_t> shape = {2};
    shape.insert(shape.end(), model.spec.input_shape.begin(), model.spec.input_shape.end());
    torch::NoGradGuard no_grad;
    const AutocastScope autocast(c10::DeviceType::CPU, true);
    const at::Tensor out = (*built)->forward(at::zeros(shape));
    if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != model.spec.num_classes) {
      return refused(absl::StrCat("its output has shape ", c10::str(out.sizes())));
    }
  } catch (const std::exception& e) {
    return refused(LibTorchErrorMessage(e));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
