// What the train binary does with --out=DIR before any rank trains
// (docs/design.md, "Run folders"; the states are artifacts/run_folder.h):
// lock the folder, apply --overwrite, decide its state, make or reuse the
// one-worker reference; rank 0 begins the attempt once its inputs load
// (trainer/training_run.h); on a multi-rank run,
// tell every rank whether there is anything to train.
//
// The folders of one --out=DIR:
//   one-worker config        the run folder is DIR/reference (the reference
//                            that a multi-worker run on DIR compares with)
//   multi-worker config      the run folder is DIR; DIR/reference is its
//                            reference, made (one update) when it does not
//                            hold a finished reference of this config, and
//                            trained through the run at its end for the
//                            whole-run verdict, beside its drift twin in
//                            DIR/drift_reference (EnsureWholeRunReferences)
// Every process that prepares DIR takes DIR/LOCK and then
// DIR/reference/LOCK, and holds both until it exits.
#ifndef RECEIPT_PARITY_TRAINER_RUN_FOLDER_SETUP_H_
#define RECEIPT_PARITY_TRAINER_RUN_FOLDER_SETUP_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/run_folder_lock.h"
#include "runtime/process_group.h"
#include "config/checkpoint_plan.h"
#include "config/config_loader.h"
#include "artifacts/run_folder.h"
#include "trainer/training_run_options.h"

namespace receipt_parity {

// RunFolderRules.nothing_to_resume for a run whose checkpoint plan is
// `checkpoints` (config/checkpoint_plan.h): why it cannot be resumed (no
// checkpoint section; no advertised generation in its checkpoint folder),
// or empty. Reads the folder; writes nothing.
std::string NothingToResume(const std::optional<CheckpointPlan>& checkpoints);

struct RunFolderRequest {
  const LoadedConfig* loaded = nullptr;
  // The --out folder.
  std::string out;
  // The folder this run writes: `out` or `out`/reference.
  std::string run_dir;
  // The reference this run is compared with; empty: none.
  std::string reference_dir;
  // The run's checkpoint plan (PlanCheckpoints of the config and run_dir):
  // nullopt when it saves none.
  std::optional<CheckpointPlan> checkpoints;
  // --overwrite (ignored, with a warning, on a torchrun restart: a restart
  // continues what its first attempt started).
  bool overwrite = false;
  // --allow_recipe_change, for the run folder and its reference: a
  // reference that differs from this config's only in the recipe is the
  // reference of the run's first update, taken with the recipe it had
  // then, and is kept.
  RunFolderRules rules;
};

struct PreparedRunFolder {
  PreparedRunFolder() = default;
  PreparedRunFolder(PreparedRunFolder&&) = default;
  PreparedRunFolder& operator=(PreparedRunFolder&&) = default;
  // Releases the locks innermost first (a folder a lock made and left
  // empty goes with it).
  ~PreparedRunFolder();

  // Held until the run ends.
  std::vector<RunFolderLock> locks;
  // What the run does; its rank 0 begins the attempt (TrainingRunOptions
  // `folder`).
  RunFolderDecision decision;
};

// Locks, overwrites, decides, and makes the reference when needed (unless
// the run is finished, in which case nothing in the folders changes). Errors: the lock's AlreadyExists; RunFolder's
// InvalidArgument (another config, here or in the reference); the
// reference run's errors.
absl::StatusOr<PreparedRunFolder> PrepareRunFolder(const RunFolderRequest& request);

// The drift twin's folder beside `out`/reference: `out`/drift_reference.
std::string DriftReferenceDir(const std::string& out);

// Rank 0 of a multi-worker run in --out=`out`, at its end: makes sure that
// `out`/reference holds the one-worker reference trained through the last
// checked update (by default the run's last) with a trajectory point at
// every checked update, and that, unless
// the run computes each update as the reference does (one rank, one
// micro-batch: bitwise mode), `out`/drift_reference holds its drift twin
// (parity/whole_run_parity.h): the reference's config with every update's
// gradient summed over the smallest number of micro-batches above 1 that
// divides the global batch, with the same points. A folder whose run lacks
// a point is trained again from update 0 (the reference at least as long
// as it was, its earlier points recorded again), said in the log.
// Errors: those of training them; InvalidArgument when a folder holds a run
// of another config.
absl::StatusOr<WholeRunReferences> EnsureWholeRunReferences(const LoadedConfig& loaded,
                                                            const std::string& out,
                                                            const WholeRunRequest& request);

// Rank 0 tells every rank whether the run is finished (nothing to train),
// through the process group's store; returns that for this rank. Rank 0
// returns only after every rank has read it, so that a finished run's
// ranks all exit 0 (the store lives in rank 0). Errors: Unavailable when a
// peer is gone, DeadlineExceeded after the store's timeout.
absl::StatusOr<bool> AgreeRunFinished(const ProcessGroupHandle& group, int rank,
                                      int world_size, bool finished);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_FOLDER_SETUP_H_
