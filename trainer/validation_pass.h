// Validation counted once per identity.
//
// Each rank predicts its validation slots (the configured sampler policy
// deals the validation identities, one slot per rank per step, so
// duplicate_pad really does hand some identity to two ranks); the
// (dataset index, predicted class, label, valid) rows are gathered across
// ranks and counted once as the metric dedup plugin says
// (metrics/prediction_count.h: gathered with the process group's
// allgather, or by a sorted streaming merge on rank 0); metrics come from
// those.
#ifndef RECEIPT_PARITY_TRAINER_VALIDATION_PASS_H_
#define RECEIPT_PARITY_TRAINER_VALIDATION_PASS_H_

#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/status/statusor.h"
#include "checkpoint/fault_injection.h"
#include "metrics/metric_dedup.h"
#include "metrics/validation_report.pb.h"
#include "model/classifier.h"
#include "samplers/sampler_policy.h"
#include "data/example_source.h"
#include "data/receipt_tensors.h"

namespace receipt_parity {

struct ValidationInputs {
  const ExampleSource* examples = nullptr;
  const std::vector<std::string>* receipt_ids = nullptr;  // by dataset index
  const SamplerPolicy* policy = nullptr;
  uint64_t seed = 0;
  const MetricDedup* dedup = nullptr;
  std::string dedup_name;
  int rank = 0;
  int world_size = 1;
  // nullptr for a one-worker run.
  c10d::ProcessGroup* group = nullptr;
  // The updates the run has completed, and an injected kill inside this
  // rank's predictions and their gather (validation_gather,
  // checkpoint/phase_kill.h); unarmed by default.
  int64_t completed_updates = 0;
  PhaseKillPlan phase_kill;
  // precision "bf16": predictions under bfloat16 autocast, as training's
  // forward passes.
  bool bf16 = false;
};

// Every rank must call it (it runs a collective). Every rank gets the same
// report, or with the streamed merge rank 0 the report and the others one
// with only `dedup`. Masked slots are not predictions and are not counted.
// FailedPrecondition from the dedup plugin when duplicates disagree.
absl::StatusOr<ValidationReport> RunValidation(Classifier& model,
                                               const ValidationInputs& in);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_VALIDATION_PASS_H_
