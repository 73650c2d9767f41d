// The run's curves for TensorBoard, from what rank 0 already reports.
//
// Rank 0 writes one event file per attempt into DIR/tensorboard/
// (io/tensorboard_event_file.h) when the attempt finishes or is preempted
// (then with no validation curves: it validated nothing), every value
// taken from the attempt's run_summary.json and validation.json, so the
// curves and the JSON cannot disagree. Steps are global updates: the
// attempt's update u is step first_update + u. Tags:
//
//   train/loss               LossPoint.loss (the whole update's weighted loss)
//   train/mean_loss          LossPoint.mean_loss, where the ranks sent it
//   train/learning_rate      LossPoint.learning_rate
//   train/gradient_norm      LossPoint.gradient_norm
//   throughput/examples_per_second
//                            accepted examples of the update / the slowest
//                            rank's update seconds (timed updates only: after
//                            warmup_updates)
//   throughput/sync_share    the longest gradient-sync wait / the slowest
//                            rank's update seconds (timed updates)
//   lateness/rank_R          rank R's lateness in seconds
//                            (artifacts/straggler_summary.h), two or more ranks
//   validation/accuracy, validation/macro_f1, validation/CLASS/precision,
//   validation/CLASS/recall, validation/CLASS/f1
//                            at step validation.update (the update count
//                            the validated model had trained)
//
// Every attempt marks its file with a restart at its first_update, so
// TensorBoard shows a redone update once, the later attempt's: an attempt
// that died after writing its file, resumed from an earlier generation (or
// from the start), redoes updates its file already holds.
#ifndef RECEIPT_PARITY_ARTIFACTS_TENSORBOARD_CURVES_H_
#define RECEIPT_PARITY_ARTIFACTS_TENSORBOARD_CURVES_H_

#include <vector>

#include "artifacts/run_summary.pb.h"
#include "io/tensorboard_event_file.h"
#include "metrics/validation_report.pb.h"

namespace receipt_parity {

// The run folder's entry that holds the event files: DIR/tensorboard/.
inline constexpr char kTensorBoardFolder[] = "tensorboard";

// Every scalar of the file comment, curve by curve, in step order within a
// curve; no validation curve when `validation` is null (a preempted
// attempt, which validated nothing).
std::vector<ScalarPoint> TrainingCurves(const RunSummary& summary,
                                        const ValidationReport* validation);

// The attempt's event file: TrainingCurves and the restart marker at
// summary.first_update, stamped `wall_time`.
EventFileContents TrainingCurvesFile(const RunSummary& summary,
                                     const ValidationReport* validation, double wall_time);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_TENSORBOARD_CURVES_H_
