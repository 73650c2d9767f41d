// The end of one rank's training run (trainer/training_run.h, "finish"):
// validation, every rank's report gathered on rank 0, and on rank 0 the
// run summary, parity against the reference, the sampler audit, the
// artifacts and, last, the finish record (artifacts/run_folder.h).
// Internal to //trainer:training_run.
#ifndef RECEIPT_PARITY_TRAINER_RUN_FINISH_H_
#define RECEIPT_PARITY_TRAINER_RUN_FINISH_H_

#include "absl/status/statusor.h"
#include "artifacts/first_step.pb.h"
#include "artifacts/run_summary.pb.h"
#include "parity/parity_report.pb.h"
#include "trainer/rank_report_builder.h"
#include "trainer/run_context.h"
#include "trainer/training_run_options.h"

namespace receipt_parity {

// The first update (`first_step`, rank 0's record) against the reference's
// first_step.json, with the config's tolerance or, for bf16, the derived
// one; `ranks_agree` as the caller knows it. Errors: CheckRunParity's.
absl::StatusOr<ParityReport> FirstUpdateParity(const Run& run, const FirstStep& first_step,
                                               bool ranks_agree);

// After the run's last update. `first_step` is what this attempt's
// recorder holds (empty on a resume); `cost` what its saves cost. Errors:
// the validation gather's, the report gather's, parity's (a missing
// reference), an artifact's write error.
absl::StatusOr<TrainingOutcome> FinishRun(Run& run, RankReportBuilder& report,
                                          const FirstStep& first_step,
                                          const CheckpointCost& cost);

// After a preempted attempt's last update, on every rank (the reports are
// gathered): rank 0 writes the attempt's curves, without validation, as
// DIR/tensorboard/'s next event file, so the resumed run's curves continue
// them (artifacts/tensorboard_curves.h). Errors: the report gather's, the
// event file's write error.
absl::Status WritePreemptedCurves(Run& run, RankReportBuilder& report);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_FINISH_H_
