#include "trainer/update_recorder.h"

#include <exception>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/json_file.h"
#include "artifacts/artifact_stamp.h"
#include "collectives/collective_error.h"
#include "artifacts/first_step_record.h"

namespace receipt_parity {

UpdateRecorder::UpdateRecorder(UpdateRecorderOptions options)
    : options_(std::move(options)) {}

absl::Status UpdateRecorder::Start(const Classifier& model) {
  if (!options_.writer || options_.first_update != 0) return absl::OkStatus();
  first_step_.set_world_size(options_.world_size);
  first_step_.set_loss_weighting(options_.loss_weighting);
  first_step_.set_reducer(options_.reducer);
  try {
    for (const auto& item : model.named_parameters()) {
      first_step_.add_parameter_order(item.key());
    }
    StoreNamedTensors(SnapshotParameters(model),
                      first_step_.mutable_parameters_before());
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "first_step.json: LibTorch");
  }
  return absl::OkStatus();
}

bool UpdateRecorder::RecordsFirstStep(int64_t total_update) const {
  return options_.writer && options_.first_update == 0 && total_update == 0;
}

bool UpdateRecorder::RecordsUpdate(int64_t total_update) const {
  if (!options_.writer) return false;
  return options_.record_updates.count(total_update) > 0 ||
         (options_.first_update > 0 && total_update == options_.first_update);
}

bool UpdateRecorder::RecordsTrajectory(int64_t total_update) const {
  return options_.writer && options_.trajectory_updates.count(total_update) > 0;
}

absl::Status UpdateRecorder::BeforeOptimizerStep(int64_t total_update,
                                                 const Classifier& model) {
  if (!RecordsFirstStep(total_update) && !RecordsUpdate(total_update)) {
    return absl::OkStatus();
  }
  current_.Clear();
  try {
    StoreNamedTensors(SnapshotGradients(model), current_.mutable_gradients());
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(
        e, absl::StrCat("recording update ", total_update, ": LibTorch"));
  }
  return absl::OkStatus();
}

absl::Status UpdateRecorder::AfterOptimizerStep(int64_t total_update,
                                                const EpochPlan& plan,
                                                int64_t update,
                                                const UpdateResult& result,
                                                const Classifier& model) {
  const bool trajectory = RecordsTrajectory(total_update);
  if (trajectory) {
    if (!result.whole_update_loss.has_value()) {
      return absl::InternalError(absl::StrCat(
          "recording update ", total_update,
          " into trajectory/: the step did not sum its loss over the ranks"));
    }
    trajectory_point_ = TrajectoryPoint();
    trajectory_point_.checked.update = total_update;
    trajectory_point_.checked.loss = *result.whole_update_loss;
    trajectory_point_.learning_rate = result.learning_rate;
    trajectory_point_.accepted_examples = result.global_accepted;
    try {
      trajectory_point_.checked.parameters = SnapshotParameters(model);
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(
          e, absl::StrCat("recording update ", total_update, " into trajectory/: LibTorch"));
    }
  }
  const bool first = RecordsFirstStep(total_update);
  const bool asked = RecordsUpdate(total_update);
  if (!first && !asked) {
    if (!trajectory) return absl::OkStatus();
    pending_ = {true, false, false, true, total_update};
    return options_.defer_writes ? absl::OkStatus() : WritePending();
  }
  current_.set_world_size(options_.world_size);
  try {
    StoreNamedTensors(SnapshotParameters(model),
                      current_.mutable_parameters_after());
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(
        e, absl::StrCat("recording update ", total_update, ": LibTorch"));
  }
  current_.set_accepted_examples(static_cast<int32_t>(result.global_accepted));
  current_.set_loss(result.weighted_loss);
  current_.set_learning_rate(result.learning_rate);
  current_.set_gradient_norm(result.gradient_norm);
  current_.set_clip_factor(result.clip_factor);
  current_.set_loss_meaning(options_.world_size == 1
                                ? "the update's weighted loss, sum_i w_i * loss_i"
                                : "rank 0's share of the update's weighted loss, "
                                  "sum_i w_i * loss_i over its slots; the whole "
                                  "update's is run_summary.json loss_curve");
  RecordBatch(plan, update, *options_.receipt_ids, options_.micro_batches, &current_);
  if (first) first_step_.MergeFrom(current_);
  if (asked) {
    for (const auto& item : model.named_parameters()) {
      current_.add_parameter_order(item.key());
    }
  }
  pending_ = {true, first, asked, trajectory, total_update};
  if (options_.defer_writes) return absl::OkStatus();
  return WritePending();
}

absl::Status UpdateRecorder::AfterTimedUpdate(int64_t /*total_update*/) {
  return WritePending();
}

absl::Status UpdateRecorder::WritePending() {
  if (!pending_.any) return absl::OkStatus();
  const PendingWrites pending = pending_;
  pending_ = PendingWrites();
  std::error_code ignored;  // a missing folder fails the write, named
  std::filesystem::create_directories(options_.artifact_dir, ignored);
  if (pending.first_step) {
    if (absl::Status s =
            WriteArtifact(options_.artifact_dir + "/first_step.json", options_.stamp,
                          first_step_);
        !s.ok()) {
      return s;
    }
  }
  if (pending.trajectory) {
    absl::Status s = WriteTrajectoryPoint(options_.artifact_dir, trajectory_point_,
                                          options_.stamp);
    trajectory_point_ = TrajectoryPoint();
    if (!s.ok()) return s;
  }
  absl::Status written = absl::OkStatus();
  if (pending.update) {
    written = WriteArtifact(
        absl::StrCat(options_.artifact_dir, "/update-", pending.total_update, ".json"),
        options_.stamp, current_);
  }
  FirstStep().Swap(&current_);  // its tensors are not kept through the run
  return written;
}

}  // namespace receipt_parity
