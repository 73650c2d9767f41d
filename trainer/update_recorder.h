// What a run records of its updates, for parity and recovery checks:
//   first_step.json  the first update of a fresh run: parameters before,
//                    reduced gradients, parameters after, the batch of
//                    every rank (verdicts/run_parity.h compares it with the
//                    one-worker reference);
//   update-K.json    the same record of global update K, for every K the
//                    caller asked for and for the first update of a
//                    resumed run (the fault drill compares it with an
//                    uninterrupted run's);
//   trajectory/      the parameters and the whole update's loss after each
//                    checked update (artifacts/parity_trajectory.h), for
//                    the whole-run parity verdict; and, with
//                    UpdateRecorderOptions.replay, the state before each
//                    checked update's step and every rank's share of it
//                    (artifacts/replay_inputs.h), for its replay.
// Only the writer (rank 0) records; on other ranks a recorder records
// nothing and costs nothing. first_step.json and update-K.json are
// written here, each right after its update (so a resumed attempt finds
// the first attempt's first_step.json), stamped with the run and attempt.
//
// An UpdateRecorder is the UpdateObserver of the run's UpdateStep
// (trainer/update_step.h). Thread safety: not thread-safe.
#ifndef RECEIPT_PARITY_TRAINER_UPDATE_RECORDER_H_
#define RECEIPT_PARITY_TRAINER_UPDATE_RECORDER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/classifier.h"
#include "samplers/epoch_plan.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/first_step.pb.h"
#include "artifacts/parity_trajectory.h"
#include "artifacts/replay_inputs.h"
#include "optimizers/optimizer_plugin.h"
#include "schedules/lr_schedule.h"
#include "trainer/update_step.h"

namespace receipt_parity {

// What the recorder needs to keep a checked update's replay inputs.
struct ReplayRecording {
  // The optimizer's state now (before a step).
  std::function<absl::StatusOr<OptimizerState>()> optimizer_state;
  // Fills `out`'s shares (or the ordered mode's chunks and rows) of
  // update `update` of `plan`, every rank's (weighting/update_shares.h).
  std::function<void(const EpochPlan& plan, int64_t update, RecordedUpdate* out)> shares;
  // Precision, device, the reducer's divisor and the clipping; the rest is
  // the update's.
  RecordedUpdate header;
  // nullptr: the base rates throughout.
  const LearningRateSchedule* schedule = nullptr;
};

struct UpdateRecorderOptions {
  // Written into every record.
  int world_size = 1;
  // The run and attempt every record names (artifacts/artifact_stamp.h).
  ArtifactStamp stamp;
  // Written into first_step.json.
  std::string loss_weighting;
  std::string reducer;
  // The run's first global update: 0 for a fresh run, the checkpoint's
  // cursor for a resumed one.
  int64_t first_update = 0;
  // Rank 0; a recorder that is not the writer records nothing.
  bool writer = false;
  // Global update indices to write as update-K.json.
  std::set<int64_t> record_updates;
  // Where update-K.json go (created when missing).
  std::string artifact_dir;
  // Receipt ids by dataset index, for the records' batches. Not owned;
  // must outlive the recorder.
  const std::vector<std::string>* receipt_ids = nullptr;
  // Global updates whose parameters and whole loss go into trajectory/
  // (the run's checked updates). The UpdateStep must sum the loss at these
  // (UpdateStepParts.whole_loss_updates).
  std::set<int64_t> trajectory_updates;
  // With it, each trajectory update's replay inputs are kept too (unset:
  // none are).
  std::optional<ReplayRecording> replay;
  // Micro-batches per rank and update (accumulation_steps): recorded per
  // slot in the batch.
  int micro_batches = 1;
  // Write first_step.json and update-K.json in AfterTimedUpdate (the run's
  // update loop calls it once the update's time is taken), so no file write
  // is timed as part of an update; false: in AfterOptimizerStep.
  bool defer_writes = false;
};

class UpdateRecorder : public UpdateObserver {
 public:
  explicit UpdateRecorder(UpdateRecorderOptions options);

  // Call once, before the first update: on a fresh run's writer, snapshots
  // the parameters before the first update (and their order) into
  // first_step(). Internal on a LibTorch error.
  absl::Status Start(const Classifier& model);

  // Whether global update `total_update` goes into first_step(): on the
  // writer of a fresh run, update 0.
  bool RecordsFirstStep(int64_t total_update) const;
  // Whether it is written as update-K.json: on the writer, an update asked
  // for, and the first update of a resumed run.
  bool RecordsUpdate(int64_t total_update) const;

  // UpdateObserver. Errors: Internal on a LibTorch error; update-K.json's
  // write error (io/atomic_file.h).
  absl::Status BeforeOptimizerStep(int64_t total_update,
                                   const Classifier& model) override;
  absl::Status AfterOptimizerStep(int64_t total_update, const EpochPlan& plan,
                                  int64_t update, const UpdateResult& result,
                                  const Classifier& model) override;

  // first_step.json's content on a fresh run's writer: after Start, the
  // header and the parameters before; after update 0, complete. Empty
  // elsewhere.
  const FirstStep& first_step() const { return first_step_; }

  // With defer_writes: writes what the update recorded. Errors as
  // AfterOptimizerStep's writes.
  absl::Status AfterTimedUpdate(int64_t total_update) override;

 private:
  struct PendingWrites {
    bool any = false;
    bool first_step = false;
    bool update = false;
    bool trajectory = false;
    bool replay = false;
    int64_t total_update = 0;
  };
  // Whether global update `total_update` goes into trajectory/.
  bool RecordsTrajectory(int64_t total_update) const;
  // The state before the step (BeforeOptimizerStep), and the shares and
  // factors after it (AfterOptimizerStep), into replay_inputs_.
  absl::Status KeepStateBefore(int64_t total_update, const Classifier& model);
  void KeepShares(int64_t total_update, const EpochPlan& plan, int64_t update,
                  const UpdateResult& result);
  absl::Status WritePending();

  UpdateRecorderOptions options_;
  FirstStep first_step_;
  // The record of the update in progress.
  FirstStep current_;
  TrajectoryPoint trajectory_point_;
  // The replay inputs of the trajectory update in progress.
  ReplayInputs replay_inputs_;
  // The parameters before a trajectory update's step (CPU copies), for the
  // point's change_norms; empty between updates.
  NamedTensors parameters_before_;
  PendingWrites pending_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_UPDATE_RECORDER_H_
