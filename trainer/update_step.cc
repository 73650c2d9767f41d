#include "trainer/update_step.h"

#include <chrono>
#include <exception>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "model/weighted_loss.h"
#include "reducers/collective_error.h"
#include "trainer/epoch_accounting.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

std::string Where(int rank, int64_t total_update) {
  return absl::StrCat("rank ", rank, ", update ", total_update);
}

absl::Status LibTorchError(const std::exception& e, int rank,
                           int64_t total_update) {
  return LibTorchErrorToStatus(
      e, absl::StrCat(Where(rank, total_update), ": LibTorch"));
}

}  // namespace

UpdateStep::UpdateStep(const UpdateStepParts& parts) : parts_(parts) {
  CHECK(parts.model != nullptr && parts.optimizer != nullptr &&
        parts.weighting != nullptr && parts.reducer != nullptr &&
        parts.examples != nullptr && parts.labels != nullptr &&
        parts.class_counts != nullptr)
      << "UpdateStep: every part but the group is required";
}

absl::StatusOr<UpdateResult> UpdateStep::Run(const EpochPlan& plan,
                                             int64_t update,
                                             int64_t total_update,
                                             UpdateObserver* observer) {
  UpdateResult result;
  result.local_slots =
      static_cast<int64_t>(plan.UpdateSlots(parts_.rank, update).size());
  result.global_accepted = plan.GlobalAcceptedCount(update);
  absl::StatusOr<double> loss = Backward(plan, update, total_update);
  if (!loss.ok()) return loss.status();
  result.weighted_loss = *loss;
  const Clock::time_point sync_start = Clock::now();
  if (absl::Status s = Reduce(total_update); !s.ok()) return s;
  result.sync_seconds =
      std::chrono::duration<double>(Clock::now() - sync_start).count();
  if (observer != nullptr) {
    if (absl::Status s = observer->BeforeOptimizerStep(total_update, *parts_.model);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Step(total_update); !s.ok()) return s;
  if (observer != nullptr) {
    if (absl::Status s = observer->AfterOptimizerStep(total_update, plan, update,
                                                      result, *parts_.model);
        !s.ok()) {
      return s;
    }
  }
  return result;
}

absl::StatusOr<double> UpdateStep::Backward(const EpochPlan& plan,
                                            int64_t update,
                                            int64_t total_update) {
  const std::vector<double> weights = parts_.weighting->Weights(
      ComposeUpdate(plan, update, *parts_.labels, *parts_.class_counts),
      parts_.rank);
  ExampleTensors batch;
  try {
    batch = SelectSlots(*parts_.examples, plan.UpdateSlots(parts_.rank, update));
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  absl::StatusOr<WeightedBackwardResult> backward =
      WeightedBackward(*parts_.model, batch.images, batch.labels, weights);
  if (!backward.ok()) return backward.status();
  return backward->weighted_loss;
}

absl::Status UpdateStep::Reduce(int64_t total_update) {
  if (parts_.group == nullptr) return absl::OkStatus();
  absl::Status reduced;
  try {
    std::vector<at::Tensor> grads = Gradients(*parts_.model);
    reduced = parts_.reducer->Reduce(grads, *parts_.group);
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  if (reduced.ok()) return reduced;
  return absl::Status(reduced.code(), absl::StrCat(Where(parts_.rank, total_update),
                                                   ": ", reduced.message()));
}

absl::Status UpdateStep::Step(int64_t total_update) {
  try {
    parts_.optimizer->step();
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
