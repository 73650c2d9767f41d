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
#include "trainer/rank_report_builder.h"
#include "trainer/run_context.h"
#include "trainer/training_run_options.h"

namespace receipt_parity {

// After the run's last update. `first_step` is what this attempt's
// recorder holds (empty on a resume); `cost` what its saves cost. Errors:
// the validation gather's, the report gather's, parity's (a missing
// reference), an artifact's write error.
absl::StatusOr<TrainingOutcome> FinishRun(Run& run, RankReportBuilder& report,
                                          const FirstStep& first_step,
                                          const CheckpointCost& cost);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_FINISH_H_
