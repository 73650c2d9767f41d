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
//             generation in its folder (checkpointing/run_checkpoints.h);
//             world_size_change.json after a resume across world sizes
//   train     trainer/update_loop.h: the update step
//             (trainer/update_step.h), the recorder of first_step.json and
//             update-K.json (trainer/update_recorder.h), the checkpoint
//             cadence (checkpointing/checkpoint_cadence.h), progress logging
//             (trainer/progress_log.h), this rank's report
//             (trainer/rank_report_builder.h)
//   finish    (trainer/run_finish.h) validation
//             (trainer/validation_pass.h), every rank's report
//             gathered on rank 0, run_summary.json
//             (artifacts/run_summary_builder.h), parity against the reference
//             (verdicts/run_parity.h), the sampler audit, and the artifacts
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config_loader.h"
#include "trainer/training_run_options.h"

namespace receipt_parity {

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
