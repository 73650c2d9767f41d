// One rank's training run: data, plugins, model, the update loop,
// validation, and the run's artifacts.
//
// Per update u of epoch e, on rank r:
//   slots   = the epoch plan's slots of r in u (sampler policy)
//   weights = loss weighting over the whole update (from the plan: no
//             communication)
//   backward of sum_i w_i * loss_i, then the reducer over the process
//   group, then the optimizer step on the reduced gradient.
// Every rank has the same number of updates by construction of the plan.
//
// Artifacts (rank 0 writes them into `artifact_dir`):
//   run_manifest.json, first_step.json, run_summary.json, validation.json,
//   sampler_audit.json.
#ifndef RECEIPT_PARITY_TRAINER_TRAINING_RUN_H_
#define RECEIPT_PARITY_TRAINER_TRAINING_RUN_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainer/config_loader.h"
#include "trainer/process_group.h"

namespace receipt_parity {

struct TrainingRunOptions {
  const LoadedConfig* loaded = nullptr;
  int rank = 0;
  int world_size = 1;
  // nullptr when world_size == 1.
  const ProcessGroupHandle* process_group = nullptr;
  // Where this run's artifacts go (OUT for a multi-worker run,
  // OUT/reference for the one-worker reference).
  std::string artifact_dir;
  // A multi-worker run compares its first update with this folder's
  // first_step.json and writes parity.json; empty: no comparison.
  std::string reference_dir;
};

struct TrainingOutcome {
  bool parity_checked = false;
  bool parity_pass = false;
  int64_t updates = 0;
};

// Everything a run needs before its first update: the data loads, the
// plugins exist and accept their options, the model builds. Writes nothing.
absl::Status CheckRunnable(const LoadedConfig& loaded);

// Errors name what failed (config field, data file, plugin, rank, peer).
absl::StatusOr<TrainingOutcome> RunTraining(const TrainingRunOptions& options);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_TRAINING_RUN_H_
