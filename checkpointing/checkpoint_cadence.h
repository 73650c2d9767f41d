// When a run saves a checkpoint generation, what cursor it saves, and what
// the saves cost.
//
// With a checkpoint plan (config/checkpoint_plan.h) of every_updates = N the
// run saves after every update that brings its completed updates (counted
// over the whole run, resumed attempts included) to a multiple of N: after
// updates N, 2N, ... . Without a plan it never saves. The
// saved cursor is where the next update starts: the next update of the
// same epoch, or update 0 of the next epoch when the saved update was the
// epoch's last. Generations are numbered from the resume decision's
// next_generation, +1 per save.
//
// The save itself is a callback (in a run: SaveCheckpoint of
// checkpointing/run_checkpoints.h with the run's model and optimizer), so the
// cadence is a pure function of its inputs and the callback's results.
// With checkpoint.async (InBackground) the callback copies the state and
// returns the write, which the cadence's AsyncSaveWriter runs while the
// loop goes on: a save first waits for the one still in flight (booking
// it), and Finish() waits for the last.
// Every rank runs its own cadence over the same updates, so all ranks save
// the same generations at the same updates.
//
// Thread safety: not thread-safe.
#ifndef RECEIPT_PARITY_CHECKPOINTING_CHECKPOINT_CADENCE_H_
#define RECEIPT_PARITY_CHECKPOINTING_CHECKPOINT_CADENCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "artifacts/run_summary.pb.h"
#include "config/checkpoint_plan.h"
#include "checkpointing/async_save.h"
#include "checkpointing/run_checkpoints.h"

namespace receipt_parity {

// Saves generation `generation` with `cursor` as the place to resume.
using SaveGenerationCall = std::function<absl::StatusOr<SaveResult>(
    int64_t generation, const TrainingCursor& cursor)>;

// Copies what generation `generation` saves (the loop stands still for
// it) and returns the write to run in the background.
using StartSaveCall = std::function<absl::StatusOr<AsyncSaveWriter::Write>(
    int64_t generation, const TrainingCursor& cursor)>;

class CheckpointCadence {
 public:
  // `plan` nullopt: never saves (`save` may then be empty).
  CheckpointCadence(std::optional<CheckpointPlan> plan, int64_t next_generation,
                    SaveGenerationCall save);

  // The saves written in the background (checkpoint.async).
  static CheckpointCadence InBackground(std::optional<CheckpointPlan> plan,
                                        int64_t next_generation, StartSaveCall start);

  bool saves() const { return plan_.has_value(); }

  // Whether the update that completes the run's `completed_updates`-th
  // update saves.
  bool SavesAfter(int64_t completed_updates) const;

  // Where the next update starts once update `update` (0-based) of epoch
  // `epoch`, which has `updates_in_epoch` updates, completed the run's
  // `completed_updates`-th update.
  static TrainingCursor CursorAfter(int64_t completed_updates, int epoch,
                                    int64_t update, int64_t updates_in_epoch);

  // Call after every completed update, with the same arguments as
  // CursorAfter. Saves when SavesAfter(completed_updates) and books the
  // save in cost(). Errors: the save's status (nothing is booked).
  absl::Status AfterUpdate(int64_t completed_updates, int epoch,
                           int64_t update, int64_t updates_in_epoch);

  // Saves now, out of cadence (a run that stops early: preemption), with
  // the same arguments as AfterUpdate; nothing without a plan. Errors: the
  // save's status (in the background: the copy's, or the write before's).
  absl::Status SaveNow(int64_t completed_updates, int epoch, int64_t update,
                       int64_t updates_in_epoch);

  // In the background: waits for the save in flight and books it (its
  // error, if it failed); then every save started is advertised. Nothing
  // otherwise. Call before the run's end, and before cost().
  absl::Status Finish();

  // The longest save so far, in seconds (0 before the first; rank 0's).
  double LongestSaveSeconds() const;

  // The generation the next save writes.
  int64_t next_generation() const { return next_generation_; }

  // The saves booked so far: generations_saved, bytes_per_generation (the
  // last save's), save_seconds, sequential_write_seconds and
  // blocked_seconds per save, async and its waits, and the medians and
  // ratios (FinishCheckpointCost). The byte and time figures come from
  // rank 0's saves; other ranks get zeros.
  CheckpointCost cost() const;

 private:
  // Books a finished save's figures.
  void Book(const SaveResult& saved);
  absl::Status StartInBackground(const TrainingCursor& cursor);

  std::optional<CheckpointPlan> plan_;
  int64_t next_generation_;
  SaveGenerationCall save_;
  StartSaveCall start_;
  // In the background only.
  std::unique_ptr<AsyncSaveWriter> writer_;
  CheckpointCost cost_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINTING_CHECKPOINT_CADENCE_H_
