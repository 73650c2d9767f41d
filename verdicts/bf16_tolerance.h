// The first update's numerics tolerance, derived from a measurement rather
// than tuned (docs/design.md, "Tolerances that are derived, not tuned"), in
// every precision (fp32 too: a fixed tolerance fits one model's sums and
// fails another's, e.g. a convolution's bias summed over 1,024 terms).
//
// The measurement: the reference's own first update (one worker, the whole
// global batch, first_step.json, in its precision) against the same update
// computed in fp64 here: the same initial parameters, batch, loss weights
// (each slot's micro-batch as the reference recorded it), clipping,
// optimizer and rate, on a copy of the model in double. For each tensor,
// its reduced gradient and its step's change (after - before) are taken
// apart, element-wise: e_i = |ref_i - fp64_i|. The tensor's atol is
// kBf16SafetyFactor (4) times its largest e_i: an element's error is set by
// the scale of the sum that made it, not by its own value (a gradient that
// mostly cancels errs like its terms), and one update's errors are one
// sample, so any element may err as much as the worst measured; a
// multi-worker update rounds in its own way with about the same error, so
// the two may differ by about twice it, and twice that for slack. Its rtol
// is the floor's (the config's rtol, or the cross-device tolerance's):
// atol already covers the largest elements' errors, and a derived rtol
// would count them twice. atol is at least the floor's too. An element
// passes when |run_i - ref_i| <= atol + rtol |ref_i|; a small element may
// change sign inside atol, which numerics cannot tell from rounding (the
// replay, bit for bit, can).
//
// The update's weighted loss against fp64's gives loss_relative_error, the
// precision's rounding of a loss (the whole run's loss budgets read it).
//
// The gate: a tensor is judged by numerics when the smallest relative
// change of its update the budget detects, rtol + atol / max |ref| (a
// mistake that makes the update (1 + e) times itself first leaves the
// budget at the largest element), is at most kMostShareOfOneUpdate (10 %)
// for its gradient and for its step's change: then a mistake that moves
// its update by a tenth fails. Above it the precision's rounding is too large a part
// of the tensor's update for a tolerance to tell a mistake from rounding;
// the tensor is listed in not_judged_tensors and left to the replay
// (replay/update_replay.h), which recomputes the update bit for bit.
//
// The same derivation serves an fp32 model with synchronized batch norm
// (model/sync_batch_norm.h), whose cut updates compute the batch norm's
// gradient by other passes than the reference's single backward
// (model/sync_batch_norm_update.h).
//
// Thread safety: a pure function of its inputs (it builds its own model).
#ifndef RECEIPT_PARITY_VERDICTS_BF16_TOLERANCE_H_
#define RECEIPT_PARITY_VERDICTS_BF16_TOLERANCE_H_

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
// A tensor is judged by numerics when its budget is at most this share of
// what one update changes of it.
inline constexpr double kMostShareOfOneUpdate = 0.1;

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
  // What the tolerance is derived for (DerivedTolerance.derived_for):
  // "bf16" (the reference computed under bf16 autocast), "fp32", or
  // "synchronized batch norm" (in fp32).
  std::string derived_for = "bf16";
  // The least rtol and atol of every budget: the config's parity section,
  // or the cross-device tolerance where the run and the reference computed
  // on different kinds of device.
  double floor_rtol = 0;
  double floor_atol = 0;
};

// The derivation, every field of DerivedTolerance set (`tensors` in the
// reference's parameter order). Errors: the
// reference's tensors do not load (InvalidArgument naming them); Internal
// for what LibTorch throws. REQUIRES: every input set, the model on the
// CPU (the examples are moved to it).
absl::StatusOr<DerivedTolerance> DeriveBf16Tolerance(const Bf16UpdateInputs& in);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERDICTS_BF16_TOLERANCE_H_
