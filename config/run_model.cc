#include "config/run_model.h"

#include <utility>

#include "absl/strings/str_cat.h"
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

}  // namespace receipt_parity
