// The model a training run trains: the model plugin its config's `model`
// selects (model/model_forms.h: the plugin form names any registered model
// plugin; the architecture form means the built-in cnn, mlp or linear),
// checked once when the config is loaded (config/config_loader.h), and
// the spec it is built for: [1, S, S] receipts, one logit per label,
// seeds.model_init, and paths in the plugin's options relative to the
// config's folder (config/config_paths.h).
//
// The model is not a PluginKinds() row (config/plugin_kinds.h): its
// selection lives in ModelConfig, not in a PluginSelection, and what a run
// trains is recorded and compared as the model revision (run_manifest.json
// model_revision, start agreement, checkpoint MANIFESTs).
//
// Thread safety: a RunModel is immutable; Build may be called concurrently.
#ifndef RECEIPT_PARITY_CONFIG_RUN_MODEL_H_
#define RECEIPT_PARITY_CONFIG_RUN_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/classifier_spec.h"
#include "model/model_config.pb.h"

namespace receipt_parity {

class Classifier;         // model/classifier.h
class ClassifierBuilder;  // model/classifier_builder.h

struct RunModel {
  // The plugin's name: "cnn", "mlp", "linear", "torchscript", or a library's.
  std::string name;
  std::shared_ptr<const ClassifierBuilder> builder;
  ClassifierSpec spec;
  // "model.options: " for the plugin form (the architecture form's errors
  // name their own fields).
  std::string error_prefix;

  // A new classifier; every call gives the same initial parameters.
  // Errors as SelectRunModel's. REQUIRES: made by SelectRunModel.
  absl::StatusOr<std::shared_ptr<Classifier>> Build() const;
};

// Selects and checks the model of `model` for `spec` (the plugin's Check:
// a TorchScript file is loaded and run on one batch). Errors name the
// field: "model.name: no model plugin named 'x'; registered: ...",
// "model.options: <the plugin's message>" (e.g. "model.options: path:
// /abs/model.pt: no such file"), "model.conv_channels: ..." (the
// architecture form). REQUIRES: CheckModelForm(model) is OK.
absl::StatusOr<RunModel> SelectRunModel(const ModelConfig& model, ClassifierSpec spec);

// For precision bf16: builds the model and runs one forward pass of two
// blank receipts under bfloat16 autocast (model/autocast_scope.h) on the
// CPU. InvalidArgument "precision: bf16: model NAME cannot run under
// bfloat16 autocast: ..." when it throws or its output is not [2, classes].
absl::Status CheckRunsUnderAutocast(const RunModel& model);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_RUN_MODEL_H_
