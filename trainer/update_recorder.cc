#include "trainer/update_recorder.h"

#include <exception>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/json_file.h"
#include "artifacts/artifact_stamp.h"
#include "collectives/collective_error.h"
#include "artifacts/first_step_record.h"
#include "model/model_state.h"

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

namespace {

// || after - before || per parameter, in double; empty when `before` was
// not kept.
std::vector<double> ChangeNorms(const NamedTensors& before, const NamedTensors& after) {
  std::vector<double> norms;
  if (before.size() != after.size()) return norms;
  for (size_t i = 0; i < after.size(); ++i) {
    norms.push_back((after[i].second.to(at::kDouble) - before[i].second.to(at::kDouble))
                        .norm()
                        .item<double>());
  }
  return norms;
}

}  // namespace

absl::Status UpdateRecorder::KeepStateBefore(int64_t total_update, const Classifier& model) {
  replay_inputs_ = ReplayInputs();
  absl::StatusOr<OptimizerState> optimizer = options_.replay->optimizer_state();
  if (!optimizer.ok()) return optimizer.status();
  RunStateAtUpdate& state = replay_inputs_.state;
  try {
    // ModelStateByName reads the model; it does not change it.
    for (const auto& [name, tensor] : ModelStateByName(const_cast<Classifier&>(model))) {
      state.model_before[name] = tensor.detach().to(at::kCPU).clone();
    }
    for (const auto& [name, tensor] : *optimizer) {
      state.optimizer_before[name] = tensor.detach().to(at::kCPU).clone();
    }
    for (const auto& item : model.named_parameters()) {
      state.gradient.emplace_back(item.key(), item.value().grad().detach().to(at::kCPU).clone());
      replay_inputs_.parameter_order.push_back(item.key());
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(
        e, absl::StrCat("keeping update ", total_update, "'s state for its replay: LibTorch"));
  }
  return absl::OkStatus();
}

void UpdateRecorder::KeepShares(int64_t total_update, const EpochPlan& plan, int64_t update,
                                const UpdateResult& result) {
  const ReplayRecording& recording = *options_.replay;
  RecordedUpdate& recorded = replay_inputs_.update;
  recorded = recording.header;
  recorded.total_update = total_update;
  recording.shares(plan, update, &recorded);
  const bool clipped_globally = recorded.clipping.has_value() && recorded.clipping->global;
  recorded.run_clip_factor = clipped_globally ? result.clip_factor : 1;
  recorded.rate_factor =
      recording.schedule != nullptr ? recording.schedule->Factor(total_update) : 1.0;
  replay_inputs_.world_size = options_.world_size;
  replay_inputs_.learning_rate = result.learning_rate;
}

absl::Status UpdateRecorder::BeforeOptimizerStep(int64_t total_update,
                                                 const Classifier& model) {
  if (RecordsTrajectory(total_update)) {
    try {
      parameters_before_ = SnapshotParameters(model);
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(
          e, absl::StrCat("recording update ", total_update, " into trajectory/: LibTorch"));
    }
  }
  if (options_.replay.has_value() && RecordsTrajectory(total_update)) {
    if (absl::Status s = KeepStateBefore(total_update, model); !s.ok()) return s;
  }
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
      trajectory_point_.checked.change_norms =
          ChangeNorms(parameters_before_, trajectory_point_.checked.parameters);
      parameters_before_.clear();
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(
          e, absl::StrCat("recording update ", total_update, " into trajectory/: LibTorch"));
    }
    if (options_.replay.has_value()) KeepShares(total_update, plan, update, result);
  }
  const bool replay = trajectory && options_.replay.has_value();
  const bool first = RecordsFirstStep(total_update);
  const bool asked = RecordsUpdate(total_update);
  if (!first && !asked) {
    if (!trajectory) return absl::OkStatus();
    pending_ = {true, false, false, true, replay, total_update};
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
  pending_ = {true, first, asked, trajectory, replay, total_update};
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
  if (pending.replay) {
    absl::Status s = WriteReplayInputs(options_.artifact_dir, replay_inputs_, options_.stamp);
    replay_inputs_ = ReplayInputs();
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
