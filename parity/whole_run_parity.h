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
// of the same update. At each checked update K the run's parameters pass
// when their distance from the reference's (L2 over every element of every
// parameter) is within
//   safety_factor x D_K + || atol + rtol x |ref_K| ||,
//   D_K = max over checked k <= K of || twin_k - ref_k ||
// and the loss when
//   |run - ref| <= safety_factor x L_K + atol + rtol x |ref|,
//   L_K = max over every update k <= K of |twin loss_k - ref loss_k|.
// The distance over every parameter pools hundreds of thousands of samples
// of the drift; one tensor's largest element is one sample, which can sit
// several times off the twin's by chance (measured: the run's distance
// stayed within 1.6 x the twin's while one bias was 3.6 x its own), so
// each tensor is reported (UpdateParity.parameters, for finding where a
// run drifts) but does not decide.
// A budget is only worth something while it is far below what training
// moves: when the derived budget at K is not below most_share_of_training
// of || ref_K - ref_0 || (the reference's movement since its first update),
// K is "not judged": the twin's own drift has outgrown what could tell the
// run from another training (bf16's rounding, amplified over a long run,
// can do that), so K gives no verdict either way, and the report says so.
// The whole run passes when every judged update passes, and at least one
// (update 0, where the gate does not apply) is judged.
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
// A budget at or above this share of what training moved a tensor could
// pass a run that trained something else: not judged.
inline constexpr double kMostShareOfTraining = 0.5;

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
  // the checked updates before this one (0: none), so a budget never
  // shrinks as the run goes on; and the largest |twin loss - reference
  // loss| over every update up to this one (their loss curves; negative:
  // unknown, then this update's alone). One update's loss is one sample of
  // the drift, its envelope over the run a measure of it.
  double earlier_drift = 0;
  double loss_drift_envelope = -1;
};

struct UpdateComparison {
  UpdateParity parity;
  // The twin's distance this update's budget used (the envelope up to it),
  // for the next update's earlier_drift.
  double drift = 0;
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
// is there, every judged one passes, one at least is judged) and
// judged_updates.
void AddCheckedUpdate(UpdateParity update, WholeRunParity* verdict);

// The verdict of a run that stopped before it could be judged: mode
// "not_judged", pass false, `why` in not_judged.
WholeRunParity NotJudged(const std::vector<int64_t>& check_updates, const std::string& why);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PARITY_WHOLE_RUN_PARITY_H_
