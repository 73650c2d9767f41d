#include "trainer/checkpoint_cadence.h"

#include <algorithm>
#include <utility>

#include "artifacts/run_summary_builder.h"

namespace receipt_parity {

CheckpointCadence::CheckpointCadence(std::optional<CheckpointPlan> plan,
                                     int64_t next_generation,
                                     SaveGenerationCall save)
    : plan_(std::move(plan)),
      next_generation_(next_generation),
      save_(std::move(save)) {}

bool CheckpointCadence::SavesAfter(int64_t completed_updates) const {
  return saves() && completed_updates % plan_->every_updates == 0;
}

TrainingCursor CheckpointCadence::CursorAfter(int64_t completed_updates,
                                              int epoch, int64_t update,
                                              int64_t updates_in_epoch) {
  const bool epoch_done = update + 1 == updates_in_epoch;
  return TrainingCursor{completed_updates, epoch_done ? epoch + 1 : epoch,
                        epoch_done ? 0 : update + 1};
}

absl::Status CheckpointCadence::AfterUpdate(int64_t completed_updates,
                                            int epoch, int64_t update,
                                            int64_t updates_in_epoch) {
  if (!SavesAfter(completed_updates)) return absl::OkStatus();
  return SaveNow(completed_updates, epoch, update, updates_in_epoch);
}

double CheckpointCadence::LongestSaveSeconds() const {
  double longest = 0;
  for (double s : cost_.save_seconds()) longest = std::max(longest, s);
  return longest;
}

absl::Status CheckpointCadence::SaveNow(int64_t completed_updates, int epoch, int64_t update,
                                        int64_t updates_in_epoch) {
  if (!saves()) return absl::OkStatus();
  absl::StatusOr<SaveResult> saved =
      save_(next_generation_++,
            CursorAfter(completed_updates, epoch, update, updates_in_epoch));
  if (!saved.ok()) return saved.status();
  cost_.set_generations_saved(cost_.generations_saved() + 1);
  cost_.set_bytes_per_generation(static_cast<double>(saved->bytes));
  cost_.add_save_seconds(saved->seconds);
  cost_.add_sequential_write_seconds(saved->sequential_write_seconds);
  *cost_.add_save_phases() = saved->phases;
  return absl::OkStatus();
}

CheckpointCost CheckpointCadence::cost() const {
  CheckpointCost finished = cost_;
  FinishCheckpointCost(&finished);
  return finished;
}

}  // namespace receipt_parity
