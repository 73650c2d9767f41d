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
// RunTraining composes, in order:
//   start     data, plugins and model (as CheckRunnable), the manifest,
//             start agreement across ranks, the optimizer
//   resume    with a checkpoint plan, from the newest advertised
//             generation in its folder (trainer/run_checkpoints.h);
//             world_size_change.json after a resume across world sizes
//   train     trainer/update_loop.h: the update step
//             (trainer/update_step.h), the recorder of first_step.json and
//             update-K.json (trainer/update_recorder.h), the checkpoint
//             cadence (trainer/checkpoint_cadence.h), progress logging
//             (trainer/progress_log.h), this rank's report
//             (trainer/rank_report_builder.h)
//   finish    (trainer/run_finish.h) validation
//             (trainer/validation_pass.h), every rank's report
//             gathered on rank 0, run_summary.json
//             (artifacts/run_summary_builder.h), parity against the reference
//             (trainer/run_parity.h), the sampler audit, and the artifacts
//             (artifacts/run_artifacts.h).
//
// Artifacts (rank 0 writes them into `artifact_dir`, each naming the config
// fingerprint and the attempt):
//   run_manifest.json, first_step.json (fresh runs, right after update 0),
//   run_summary.json, validation.json, sampler_audit.json, resume.json
//   (resumed runs), update-K.json (recorded updates), parity.json (with a
//   reference; a resumed run compares the first_step.json its first attempt
//   left), and last finished.json (artifacts/run_folder.h). Before training,
//   rank 0 removes what earlier attempts left that this one would make
//   stale (RemoveStaleArtifacts).
#ifndef RECEIPT_PARITY_TRAINER_TRAINING_RUN_H_
#define RECEIPT_PARITY_TRAINER_TRAINING_RUN_H_

#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint/fault_injection.h"
#include "config/checkpoint_plan.h"
#include "runtime/process_group.h"
#include "config/config_loader.h"
#include "artifacts/run_folder.h"

namespace receipt_parity {

struct TrainingRunOptions {
  const LoadedConfig* loaded = nullptr;
  int rank = 0;
  // This rank's index on its machine (LOCAL_RANK): which GPU it uses.
  int local_rank = 0;
  int world_size = 1;
  // nullptr when world_size == 1.
  const ProcessGroupHandle* process_group = nullptr;
  // Where this run's artifacts go (OUT for a multi-worker run,
  // OUT/reference for the one-worker reference).
  std::string artifact_dir;
  // A multi-worker run compares its first update with this folder's
  // first_step.json and writes parity.json; empty: no comparison.
  std::string reference_dir;
  // Whether and where the run saves checkpoints and resumes from them
  // (config/checkpoint_plan.h); nullopt: it does neither.
  std::optional<CheckpointPlan> checkpoints;
  // An injected failure during a save (checkpoint/fault_injection.h).
  FaultPlan fault;
  // This attempt's number in the run folder (artifacts/run_folder.h); every
  // artifact names it.
  int attempt = 1;
  // The run folder's decision for this attempt (artifacts/run_folder.h);
  // when set, rank 0 begins the attempt in `artifact_dir` (BeginAttempt)
  // once the data, plugins and model are made, so a run refused for its
  // input leaves the folder as it was. Not owned.
  const RunFolderDecision* folder = nullptr;
  // What this run is, as run_manifest.json, run_summary.json and
  // validation.json say ("training run" unless a caller says otherwise).
  std::string purpose = "training run";
  // Global update indices whose reduced gradients and parameters after the
  // step rank 0 writes to `artifact_dir`/update-K.json (the first update of
  // a resumed run always is).
  std::set<int64_t> record_updates;
};

struct TrainingOutcome {
  bool parity_checked = false;
  bool parity_pass = false;
  int64_t updates = 0;
};

// What loading `loaded` could not check without its data: the data loads
// (files readable, images of the right size), and this run's plugins and
// model are made. Writes nothing. (The config, its data and model settings
// and its plugin selections were checked by LoadTrainingConfig.)
absl::Status CheckRunnable(const LoadedConfig& loaded);

// Errors name what failed (config field, data file, plugin, rank, peer,
// checkpoint generation); what LibTorch throws comes back as a Status too.
absl::StatusOr<TrainingOutcome> RunTraining(const TrainingRunOptions& options);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_TRAINING_RUN_H_
