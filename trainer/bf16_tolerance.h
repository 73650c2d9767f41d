// The parity tolerance of a bf16 run, derived from a measurement rather
// than tuned (docs/design.md, "Tolerances that are derived, not tuned").
//
// The measurement: the reference's own first update (bf16 autocast, one
// worker, the whole global batch, first_step.json) against the same update
// computed in fp64 here: the same initial parameters, batch, loss weights,
// clipping, optimizer and rate, on a copy of the model in double. Each
// tensor's largest elementwise error, e, is taken apart for its reduced
// gradient and for its parameter after the step (bf16 rounds relative to
// magnitude, so a tensor of large gradients errs more than one of small:
// one budget for all would be loose for the small ones). A multi-worker
// bf16 update rounds in its own way with about the same error, so the two
// bf16 updates may differ by about 2e; the tensor's budget is
// kBf16SafetyFactor (4) times e, which the report states with the figures.
//
// The gate: every tensor's budget must be below kMostShareOfOneUpdate (a
// half) of what one update changes of it (its largest |gradient|, its
// largest |parameter change| in the step), so that a run that did not
// train, or stepped half an update wrong, cannot pass; when not,
// far_below_one_update is false and the parity check refuses the gate.
// On the study's model bf16's error is 0.2-7% of one update per tensor
// (docs/recipes.md), so its budgets are at most about 27% of it.
//
// The same derivation serves an fp32 model with synchronized batch norm
// (model/sync_batch_norm.h): a run that cuts its updates across ranks or
// micro-batches computes the batch norm's gradient by other passes than the
// reference's single backward (model/sync_batch_norm_update.h), whose fp32
// rounding differs by about the reference's own fp32 error against fp64 (a
// small batch's normalization amplifies it past the config's default
// tolerance), so each tensor's budget is kBf16SafetyFactor times that error.
//
// Thread safety: a pure function of its inputs (it builds its own model).
#ifndef RECEIPT_PARITY_TRAINER_BF16_TOLERANCE_H_
#define RECEIPT_PARITY_TRAINER_BF16_TOLERANCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/example_source.h"
#include "artifacts/first_step.pb.h"
#include "config/config_loader.h"
#include "data/receipt_tensors.h"
#include "parity/parity_report.pb.h"
#include "schedules/lr_schedule.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

inline constexpr double kBf16SafetyFactor = 4;
// A tensor's budget must stay below this share of what one update changes
// of it.
inline constexpr double kMostShareOfOneUpdate = 0.5;

struct Bf16UpdateInputs {
  const LoadedConfig* loaded = nullptr;
  // The reference's first_step.json (one worker, update 0).
  const FirstStep* reference = nullptr;
  // The training set by dataset index, its labels and class counts.
  const ExampleSource* examples = nullptr;
  const std::vector<int>* labels = nullptr;
  const std::vector<int64_t>* class_counts = nullptr;
  const LossWeighting* weighting = nullptr;
  const LearningRateSchedule* schedule = nullptr;
  // Why the tolerance is derived (DerivedTolerance.derived_for): "bf16"
  // (the reference computed under bf16 autocast) or "synchronized batch
  // norm" (in fp32).
  std::string derived_for = "bf16";
};

// The derivation, every field of DerivedTolerance set (`tensors` in the
// reference's parameter order). Errors: the
// reference's tensors do not load (InvalidArgument naming them); Internal
// for what LibTorch throws. REQUIRES: every input set, the model on the
// CPU (the examples are moved to it).
absl::StatusOr<DerivedTolerance> DeriveBf16Tolerance(const Bf16UpdateInputs& in);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_BF16_TOLERANCE_H_
