#include "config/layer_policy.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/layer_audit.h"
#include "config/run_model.h"

namespace receipt_parity {
namespace {

constexpr char kPolicyField[] = "parity.batch_dependent_layers";

absl::Status Refusal(const LoadedConfig& loaded, const LayerAudit& audit, int workers) {
  std::vector<std::string> findings;
  for (const LayerFinding& f : audit.findings()) findings.push_back(DescribeFinding(f));
  return loaded.locator->Locate(absl::InvalidArgumentError(absl::StrCat(
      kPolicyField, ": \"refuse\": the model has ", audit.findings_size(),
      " module(s) whose output depends on the local batch or on per-rank random "
      "state, or that update state in forward, so a ", workers,
      "-worker run cannot match its one-worker reference: ",
      absl::StrJoin(findings, "; "),
      ". Set it to \"report\" to train the model with these findings reported")));
}

// What a finding did to the compared update, given the split.
std::string WhyItFailed(const LayerFinding& finding, const ParityReport& report) {
  const std::string module = finding.module().empty() ? "(model)" : finding.module();
  const std::string split = absl::StrJoin(report.split(), "+");
  if (finding.kind() == kBatchNormTraining) {
    bool uneven = false;
    for (int examples : report.split()) uneven |= examples != report.split(0);
    return absl::StrCat(
        "expected from the model, not from the reducer or the weighting: ", module, " (",
        finding.module_type(), ") is batch norm in training mode, so each rank normalized by "
        "the statistics of its own local batch (split ", split,
        uneven ? ", uneven: the ranks' batches are not even the same size" : "",
        ") while the one-worker reference normalized by the whole update's ",
        report.accepted_examples(), " examples; its running statistics differ across ranks "
        "too (run_summary.json buffers)");
  }
  return absl::StrCat("expected from the model: ", DescribeFinding(finding), " (split ",
                      split, ")");
}

}  // namespace

std::string BatchDependentLayersPolicy(const TrainingConfig& config) {
  return config.parity().has_batch_dependent_layers()
             ? config.parity().batch_dependent_layers()
             : "report";
}

absl::StatusOr<LayerAudit> AuditRunModel(const LoadedConfig& loaded,
                                         const Classifier& model, int workers) {
  absl::StatusOr<LayerAudit> audit = AuditLayers(model);
  if (!audit.ok()) return audit.status();
  audit->set_policy(BatchDependentLayersPolicy(loaded.config));
  if (audit->policy() == "refuse" && workers > 1 && !audit->clean()) {
    return Refusal(loaded, *audit, workers);
  }
  return audit;
}

absl::Status CheckLayerPolicy(const LoadedConfig& loaded) {
  if (loaded.config.world_size() <= 1 ||
      BatchDependentLayersPolicy(loaded.config) != "refuse") {
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<Classifier>> model = loaded.model.Build();
  if (!model.ok()) return loaded.locator->Locate(model.status());
  return AuditRunModel(loaded, **model, loaded.config.world_size()).status();
}

std::vector<std::string> ExplainParity(const LayerAudit& audit, ParityReport* report) {
  *report->mutable_audit() = audit;
  std::vector<std::string> added;
  if (report->pass()) return added;
  for (const LayerFinding& finding : audit.findings()) {
    added.push_back(WhyItFailed(finding, *report));
    report->add_failures(added.back());
  }
  return added;
}

}  // namespace receipt_parity
