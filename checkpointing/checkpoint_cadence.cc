#include "checkpointing/checkpoint_cadence.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "artifacts/run_summary_builder.h"

namespace receipt_parity {

using Clock = std::chrono::steady_clock;

CheckpointCadence::CheckpointCadence(std::optional<CheckpointPlan> plan,
                                     int64_t next_generation,
                                     SaveGenerationCall save)
    : plan_(std::move(plan)),
      next_generation_(next_generation),
      save_(std::move(save)) {}

CheckpointCadence CheckpointCadence::InBackground(std::optional<CheckpointPlan> plan,
                                                  int64_t next_generation,
                                                  StartSaveCall start) {
  CheckpointCadence cadence(std::move(plan), next_generation, nullptr);
  cadence.start_ = std::move(start);
  cadence.writer_ = std::make_unique<AsyncSaveWriter>();
  cadence.cost_.set_async(true);
  return cadence;
}

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
  const TrainingCursor cursor = CursorAfter(completed_updates, epoch, update, updates_in_epoch);
  if (writer_ != nullptr) return StartInBackground(cursor);
  absl::StatusOr<SaveResult> saved = save_(next_generation_++, cursor);
  if (!saved.ok()) return saved.status();
  cost_.add_blocked_seconds(saved->blocked_seconds);
  Book(*saved);
  return absl::OkStatus();
}

absl::Status CheckpointCadence::StartInBackground(const TrainingCursor& cursor) {
  const Clock::time_point begin = Clock::now();
  const bool waits = writer_->running();
  if (absl::Status s = Finish(); !s.ok()) return s;
  const double waited = std::chrono::duration<double>(Clock::now() - begin).count();
  absl::StatusOr<AsyncSaveWriter::Write> write = start_(next_generation_++, cursor);
  if (!write.ok()) return write.status();
  cost_.add_blocked_seconds(std::chrono::duration<double>(Clock::now() - begin).count());
  if (waits) {
    cost_.set_saves_that_waited(cost_.saves_that_waited() + 1);
    cost_.set_waited_seconds(cost_.waited_seconds() + waited);
  }
  writer_->Start(*std::move(write));
  return absl::OkStatus();
}

absl::Status CheckpointCadence::Finish() {
  if (writer_ == nullptr) return absl::OkStatus();
  std::optional<absl::StatusOr<SaveResult>> written = writer_->Wait();
  if (!written.has_value()) return absl::OkStatus();
  if (!written->ok()) return written->status();
  Book(**written);
  return absl::OkStatus();
}

void CheckpointCadence::Book(const SaveResult& saved) {
  cost_.set_generations_saved(cost_.generations_saved() + 1);
  cost_.set_bytes_per_generation(static_cast<double>(saved.bytes));
  cost_.add_save_seconds(saved.seconds);
  cost_.add_sequential_write_seconds(saved.sequential_write_seconds);
  *cost_.add_save_phases() = saved.phases;
}

CheckpointCost CheckpointCadence::cost() const {
  CheckpointCost finished = cost_;
  FinishCheckpointCost(&finished);
  return finished;
}

}  // namespace receipt_parity
