// The whole-run verdict (issue 25, item 4): a multi-worker run's parameters
// and loss after each checked update against a whole one-worker
// reference's after the same update.
//
// Two ranks sum a gradient in another order than one backward over the
// whole batch, so their parameters differ from the reference's by rounding
// after the first update, and that difference grows as training goes on.
// How much it may grow is measured, not tuned: the drift twin is a second
// one-worker run of the reference's config whose every update sums its
// gradient over `twin_micro_batches` micro-batches, another reduction order
// of the same update (and the effective-batch rule's weighting, reducer and
// clipping, never a mistake of the run's). At each checked update K, per
// tensor t (never pooled; L2 over the tensor's elements):
//   D_t = max over checked k <= K of || twin_t,k - ref_t,k ||
//   budget_t = safety_factor x D_t + floor_t,
//   floor_t = max(|| atol + rtol x |ref_t,K| ||, one update's derived
//                 rounding of t, UpdateComparisonInputs.tensor_floors)
// and the tensor is judged when budget_t is at most
// kMostShareOfOneUpdate (10 %) of what the reference's step K changed of
// it (the trajectory point's change_norms): then a mistake that moved this
// update of the tensor by a tenth fails, the run passing when
// || run_t,K - ref_t,K || <= budget_t. Above the gate, rounding alone has
// moved the trajectories apart further than a mistake in one update would:
// the tensor has diverged, is listed, and is not judged by numerics (the
// every-update checks and the replay, exact at every update of a run of any
// length, judge the machinery). A run never fails for numerics because it
// is long. The loss is judged at every checked update, diverged or not,
// against the spread of the two differently ordered references:
//   |run - ref| <= safety_factor x L_K + atol + max(rtol, loss_rtol) x |ref|,
//   L_K = max over every update k <= K of |twin loss_k - ref loss_k|.
// The whole run passes when every checked update was read, every judged
// tensor is within its budget and every loss within its.
// Bitwise mode: a run that computes each update as the reference does (one
// rank, one micro-batch) must equal it bitwise at every checked update.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_PARITY_WHOLE_RUN_PARITY_H_
#define RECEIPT_PARITY_PARITY_WHOLE_RUN_PARITY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "parity/parity_report.pb.h"
#include "parity/tensor_comparison.h"

namespace receipt_parity {

// budget = kDriftSafetyFactor x the twin's drift: the run and the twin each
// carry about one reduction order's drift, so they may differ from the
// reference by twice the twin's; twice that again for slack (the same
// factor as bf16's derived tolerance).
inline constexpr double kDriftSafetyFactor = 4.0;
// The gate before per-tensor verdicts (reported, no longer deciding).
inline constexpr double kMostShareOfTraining = 0.5;
// A tensor's budget above this share of what one update changed of it
// cannot tell a mistake in that update from rounding: not judged (the same
// gate as the first update's, verdicts/bf16_tolerance.h).
inline constexpr double kMostShareOfOneUpdateChange = 0.1;

// The updates checked when parity.check_updates is unset: the first, the
// last, and those a quarter, half and three quarters of the way, sorted and
// without repeats. REQUIRES: run_updates >= 1.
std::vector<int64_t> DefaultCheckUpdates(int64_t run_updates);

// The checked updates of a run of `run_updates` updates: `configured`
// (parity.check_updates) or, when empty, the default; update 0 always (it
// is the first-update parity); sorted, without repeats. InvalidArgument
// "parity.check_updates: update K is beyond the run, whose updates are
// 0..N-1" when one is.
absl::StatusOr<std::vector<int64_t>> CheckUpdates(const std::vector<int64_t>& configured,
                                                  int64_t run_updates);

// What was recorded after one update (artifacts/parity_trajectory.h).
struct CheckedPoint {
  int64_t update = 0;
  double loss = 0;
  // The parameters after the update, in the model's registration order.
  NamedTensors parameters;
  // What the update's step changed of each parameter (|| after - before ||,
  // L2), in the same order; empty when not recorded.
  std::vector<double> change_norms;
};

struct UpdateComparisonInputs {
  const CheckedPoint* run = nullptr;
  const CheckedPoint* reference = nullptr;
  // The drift twin's same update; nullptr in bitwise mode.
  const CheckedPoint* twin = nullptr;
  // The reference after update 0 (the movement the gate reads); nullptr
  // or `reference` itself at update 0, where the gate does not apply.
  const CheckedPoint* reference_first = nullptr;
  double rtol = 0;
  double atol = 0;
  // The drift so far: the twin's largest distance from the reference at
  // the checked updates before this one (0: none), over every parameter and
  // per tensor (empty: none), so a budget never shrinks as the run goes on;
  // and the largest |twin loss - reference loss| over every update up to
  // this one (their loss curves; negative: unknown, then this update's
  // alone). One update's loss is one sample of the drift, its envelope over
  // the run a measure of it.
  double earlier_drift = 0;
  std::vector<double> earlier_tensor_drifts;
  double loss_drift_envelope = -1;
  // One update's derived rounding per tensor, as a distance
  // (TensorBudget.parameter_budget_norm of the first update's derivation),
  // the least floor of each tensor's budget (empty: the config's alone);
  // and the least rtol of the loss budget (safety_factor x the derived
  // loss_relative_error; 0: the config's alone). One twin is one sample of
  // the drift: where it happens to sit on the reference (bf16 rounds a small
  // tensor's change to the same bits), the precision's own rounding of one
  // update still bounds what two orders may differ by.
  std::vector<double> tensor_floors;
  double loss_rtol = 0;
};

struct UpdateComparison {
  UpdateParity parity;
  // The twin's distances this update's budgets used (the envelopes up to
  // it), for the next update's earlier_drift and earlier_tensor_drifts.
  double drift = 0;
  std::vector<double> tensor_drifts;
};

// One checked update. InvalidArgument when the points are of other
// updates, or their tensors differ in names or shapes (naming them);
// Internal on a LibTorch error.
absl::StatusOr<UpdateComparison> CompareUpdate(const UpdateComparisonInputs& inputs);

// WholeRunParity's mode, method and factors, before any update is added:
// drift-budget mode with `twin_micro_batches`, or bitwise when it is 0.
WholeRunParity WholeRunHeader(const std::vector<int64_t>& check_updates,
                              int twin_micro_batches);

// Adds `update` to `verdict` and recomputes its pass (every checked update
// is there and passes: its judged tensors and its loss) and judged_updates
// (those with a tensor judged by numerics).
void AddCheckedUpdate(UpdateParity update, WholeRunParity* verdict);

// The verdict of a run that stopped before it could be judged: mode
// "not_judged", pass false, `why` in not_judged.
WholeRunParity NotJudged(const std::vector<int64_t>& check_updates, const std::string& why);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PARITY_WHOLE_RUN_PARITY_H_
