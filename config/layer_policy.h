// parity.batch_dependent_layers (config/config.proto) applied to the layer
// audit of a run's model (model/layer_audit.h), and what the audit adds to
// parity.json.
//
// A parity run is a config with more than one worker: its first update is
// compared with the one-worker reference. "refuse" stops such a run before
// anything trains (the reference included) when the model has findings;
// "report" (the default, also when unset) runs it and reports them. A
// one-worker config is never refused: it is its own reference.
#ifndef RECEIPT_PARITY_CONFIG_LAYER_POLICY_H_
#define RECEIPT_PARITY_CONFIG_LAYER_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/classifier.h"
#include "model/layer_audit.pb.h"
#include "parity/parity_report.pb.h"
#include "config/config_loader.h"

namespace receipt_parity {

// "report" or "refuse" (unset: "report").
std::string BatchDependentLayersPolicy(const TrainingConfig& config);

// The audit of `model` with its policy set. InvalidArgument located at
// parity.batch_dependent_layers, naming every module and what it does,
// when the policy is "refuse", the run has more than one worker (`workers`:
// the config's world_size, or the simulated check's ranks) and the audit
// has findings. Otherwise the errors of AuditLayers.
absl::StatusOr<LayerAudit> AuditRunModel(const LoadedConfig& loaded,
                                         const Classifier& model, int workers);

// Before any run of `loaded` starts: builds its model (config/run_model.h)
// and applies AuditRunModel's check. OK for a one-worker config without
// building anything.
absl::Status CheckLayerPolicy(const LoadedConfig& loaded);

// parity.json: sets `report`'s audit; when `report` fails and the audit
// has findings, adds a failure per finding saying what it did to this
// update (with the split, and whether it was uneven), so a failure says why.
// Returns the failures it added.
std::vector<std::string> ExplainParity(const LayerAudit& audit, ParityReport* report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_LAYER_POLICY_H_
