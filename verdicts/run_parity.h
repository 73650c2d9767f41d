// parity.json for a REAL multi-worker run: rank 0's first update (the
// reduced global gradients before stepping, and the parameters after the
// step) against the one-worker reference's first_step.json.
#ifndef RECEIPT_PARITY_VERDICTS_RUN_PARITY_H_
#define RECEIPT_PARITY_VERDICTS_RUN_PARITY_H_

#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "parity/parity_report.pb.h"
#include "artifacts/first_step.pb.h"
#include "config/config.pb.h"
#include "parity/whole_run_parity.h"
#include "verdicts/whole_run_references.h"

namespace receipt_parity {

// Tolerances from config.parity(); when the run (config.device()) and the
// reference (its run_manifest.json's platform.device) are on different
// kinds of device, at least the cross-device tolerance
// (parity/cross_device_tolerance.h), and tolerance_reason says which.
// `pass` requires every gradient and
// parameter within tolerance, the same receipts in the update as the
// reference's first update, and `ranks_agree` (every replica ended the run
// with bitwise-identical parameters). `failures` says by how much it fails.
// FailedPrecondition when the reference's first_step.json is missing or
// unreadable (naming the file) or describes other parameters.
//
// `derive`, when set, derives the tolerance from the reference once it is
// read (verdicts/bf16_tolerance.h), given the floor above (the config's or
// the cross-device rtol and atol): each tensor's own rtol and atol, for its
// gradient and for its step's change (the parameters after the step less
// those before, which the run and the reference share), `derived` and
// tolerance_reason recording how. Tensors the derivation cannot judge (not
// below its gate) are listed and do not count: the replay judges them.
// Its errors pass through.
using DeriveTolerance = std::function<absl::StatusOr<DerivedTolerance>(
    const FirstStep& reference, double floor_rtol, double floor_atol)>;
absl::StatusOr<ParityReport> CheckRunParity(const FirstStep& run,
                                            const std::string& reference_dir,
                                            const TrainingConfig& config,
                                            bool ranks_agree,
                                            const DeriveTolerance& derive = nullptr);

// The whole-run verdict (parity/whole_run_parity.h) of the run whose
// trajectory is in `run_dir` (each point stamped with one of
// `run_fingerprints`: the run's, and, for a run whose updates ignore the
// world size, its earlier attempts' on other numbers of workers) against
// `references`, at every update of `check_updates` (sorted, 0 first), with
// the config's parity rtol and atol as the floor of every budget, and
// `derived`, the first update's derived tolerance (empty when none), for
// one update's rounding of each tensor and of the loss. A point
// that is missing or damaged (the run's, the reference's or the twin's)
// fails its update, saying why. Errors: Internal on a LibTorch error.
absl::StatusOr<WholeRunParity> CheckWholeRunParity(const std::string& run_dir,
                                                   const std::vector<std::string>& run_fingerprints,
                                                   const WholeRunReferences& references,
                                                   const std::vector<int64_t>& check_updates,
                                                   const ParityConfig& parity,
                                                   const DerivedTolerance& derived);

// `report` gains `whole_run`; its pass then also requires the whole run's,
// unless the whole run was not judged (mode "not_judged", where a
// first-update failure or the reason it gives stands), and a failing whole
// run adds one sentence to `failures` naming its first failure.
void AddWholeRunVerdict(WholeRunParity whole_run, ParityReport* report);

// `report` gains `every_update`; its pass then also requires it (every
// update verified), unless the checks were off (not_verified says so and
// nothing was counted), and a failure adds one sentence naming the first
// update that failed, its check, its rank and what differed.
void AddEveryUpdateVerdict(EveryUpdateVerdict every_update, ParityReport* report);

// `report` gains `replay`; its pass then also requires it where an update
// was replayed (a verdict that replayed none, parity { replay: false } or a
// run on a GPU, says why and does not decide), and a failure adds one
// sentence naming the first update, tensor and element that differ.
void AddReplayVerdict(ReplayVerdict replay, ParityReport* report);

// One line for the console: "parity PASSED: ..." or "parity FAILED: ...",
// the first update's verdict, the every-update checks' ("every update (N
// of N) verified"), the replay's ("replay: N of N checked updates (...)
// recomputed in one process bit for bit") and the whole run's.
std::string ParityVerdictLine(const ParityReport& report);

// When `report` fails and the config's recipe holds a kept mistake that
// explains it, adds a `failures` sentence saying why, and returns the
// sentences added:
//  - loss weighting micro_batch_mean with micro-batches of the first update
//    (`run`'s batch) holding different numbers of valid examples;
//  - clip_grad_norm scope "local" (each rank's clip factor at the first
//    update in `rank_clip_factors`, rank order; empty when not measured).
std::vector<std::string> ExplainRecipe(const TrainingConfig& config, const FirstStep& run,
                                       const std::vector<double>& rank_clip_factors,
                                       ParityReport* report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERDICTS_RUN_PARITY_H_
