#include "trainer/update_step.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include <torch/nn/utils/clip_grad.h>

#include "absl/strings/str_cat.h"
#include "checkpoint/phase_kill.h"
#include "logging/glog.h"
#include "model/weighted_loss.h"
#include "parity/tensor_comparison.h"
#include "collectives/collective_error.h"
#include "collectives/sum_across_ranks.h"
#include "artifacts/epoch_accounting.h"
#include "model/keyed_dropout.h"
#include "model/sync_batch_norm.h"
#include "model/sync_batch_norm_update.h"
#include "samplers/micro_batches.h"

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

// The slots' examples, an error of the source naming the rank and update.
absl::StatusOr<ExampleTensors> SelectExamples(const ExampleSource& examples,
                                              absl::Span<const Slot> slots, int rank,
                                              int64_t total_update) {
  absl::StatusOr<ExampleTensors> selected = examples.Select(slots);
  if (selected.ok()) return selected;
  return absl::Status(selected.status().code(), absl::StrCat(Where(rank, total_update), ": ",
                                                             selected.status().message()));
}

// The name of the first parameter whose tensor (its gradient, or itself)
// is not finite; empty when all are.
std::string FirstNonFinite(const Classifier& model, bool gradients) {
  for (const auto& item : model.named_parameters()) {
    const at::Tensor t = gradients ? item.value().grad() : item.value();
    if (t.defined() && !AllFinite(t)) return item.key();
  }
  return "";
}

// The gradient with the fewest elements (the output layer's bias): a
// non-finite loss on any rank makes every element of every reduced
// gradient NaN, so checking this one catches it on every rank at once.
at::Tensor SmallestGradient(const Classifier& model) {
  at::Tensor smallest;
  for (const at::Tensor& p : model.parameters()) {
    if (p.grad().defined() && (!smallest.defined() || p.numel() < smallest.numel())) {
      smallest = p.grad();
    }
  }
  return smallest;
}

absl::Status NotFinite(int rank, int64_t total_update, const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat(
      Where(rank, total_update), ": ", what,
      " is not finite (NaN or infinity): training stops here, before any "
      "checkpoint holds it"));
}

}  // namespace

UpdateStep::UpdateStep(const UpdateStepParts& parts) : parts_(parts) {
  CHECK(parts.model != nullptr && parts.optimizer != nullptr &&
        parts.weighting != nullptr && parts.reducer != nullptr &&
        parts.examples != nullptr && parts.labels != nullptr &&
        parts.class_counts != nullptr)
      << "UpdateStep: every part but the group, the schedule and clipping is required";
  for (const torch::optim::OptimizerParamGroup& group : parts.optimizer->param_groups()) {
    base_rates_.push_back(group.options().get_lr());
  }
  has_sync_batch_norm_ = !SyncBatchNorms(*parts.model).empty();
  chunk_slots_ = parts.reducer->chunk_slots();
}

absl::StatusOr<UpdateResult> UpdateStep::Run(const EpochPlan& plan,
                                             int64_t update,
                                             int64_t total_update,
                                             UpdateObserver* observer) {
  UpdateResult result;
  result.local_slots =
      static_cast<int64_t>(plan.UpdateSlots(parts_.rank, update).size());
  result.global_accepted = plan.GlobalAcceptedCount(update);
  const bool ordered = chunk_slots_ > 0;
  if (!ordered) {
    if (absl::Status s = PrepareBuckets(total_update); !s.ok()) return s;
  }
  absl::StatusOr<WeightedBackwardResult> loss =
      ordered ? OrderedBackward(plan, update, total_update) : Backward(plan, update, total_update);
  if (!loss.ok()) return loss.status();
  result.weighted_loss = loss->weighted_loss;
  result.accepted_loss_sum = loss->accepted_loss_sum;
  const bool clips_locally = parts_.clipping.has_value() && !parts_.clipping->global;
  if (absl::Status s = Clip(clips_locally, total_update, &result); !s.ok()) return s;
  const Clock::time_point sync_start = Clock::now();
  if (absl::Status s = ordered ? SumChunks(total_update) : Reduce(total_update); !s.ok()) {
    return s;
  }
  result.sync_seconds =
      std::chrono::duration<double>(Clock::now() - sync_start).count();
  if (absl::Status s = CheckReducedUpdate(total_update, result.weighted_loss); !s.ok()) {
    return s;
  }
  if (absl::Status s = SumLoss(total_update, &result); !s.ok()) return s;
  const bool clips_globally = parts_.clipping.has_value() && parts_.clipping->global;
  if (absl::Status s = Clip(clips_globally, total_update, &result); !s.ok()) return s;
  if (observer != nullptr) {
    if (absl::Status s = observer->BeforeOptimizerStep(total_update, *parts_.model);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Step(total_update, &result); !s.ok()) return s;
  if (observer != nullptr) {
    if (absl::Status s = observer->AfterOptimizerStep(total_update, plan, update,
                                                      result, *parts_.model);
        !s.ok()) {
      return s;
    }
  }
  return result;
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::Backward(const EpochPlan& plan,
                                                            int64_t update,
                                                            int64_t total_update) {
  const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kForwardBackward,
                                     parts_.rank, total_update);
  const int micro_batches = parts_.micro_batches;
  // The weights of the whole update, over every micro-batch of every rank.
  const std::vector<double> weights = parts_.weighting->Weights(
      ComposeUpdate(plan, update, *parts_.labels, *parts_.class_counts, micro_batches),
      parts_.rank);
  // This rank's slots of the update, read out of the plan's global order.
  const std::vector<Slot> own_slots = plan.UpdateSlots(parts_.rank, update).ToVector();
  const absl::Span<const Slot> slots = own_slots;
  const int local_batch = plan.local_batch()[parts_.rank];
  if (has_sync_batch_norm_) {
    return SyncBatchNormUpdate(slots, local_batch, weights, total_update);
  }
  WeightedBackwardResult loss;
  for (int m = 0; m < micro_batches; ++m) {
    const auto [begin, end] = MicroBatchRange(m, static_cast<int64_t>(slots.size()),
                                              local_batch, micro_batches);
    // The first micro-batch starts from zero gradients (even an empty
    // one); an empty later one adds nothing.
    if (m > 0 && begin == end) continue;
    // The last backward of the update starts the buckets' reduction.
    if (m == micro_batches - 1) ArmBuckets();
    absl::StatusOr<ExampleTensors> batch = SelectExamples(
        *parts_.examples, slots.subspan(begin, end - begin), parts_.rank, total_update);
    if (!batch.ok()) return batch.status();
    absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
        *parts_.model, batch->images, batch->labels,
        std::vector<double>(weights.begin() + begin, weights.begin() + end),
        m == 0 ? GradientStart::kZero : GradientStart::kAccumulate, parts_.bf16,
        UpdateKeys(batch->keys, total_update));
    if (!backward.ok()) return backward.status();
    loss.weighted_loss += backward->weighted_loss;
    loss.accepted_loss_sum += backward->accepted_loss_sum;
  }
  return loss;
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::SyncBatchNormUpdate(
    absl::Span<const Slot> slots, int local_batch, const std::vector<double>& weights,
    int64_t total_update) {
  const int micro_batches = parts_.micro_batches;
  std::vector<UpdateMicroBatch> batches;
  try {
    for (int m = 0; m < micro_batches; ++m) {
      const auto [begin, end] = MicroBatchRange(m, static_cast<int64_t>(slots.size()),
                                                local_batch, micro_batches);
      const absl::Span<const Slot> part = slots.subspan(begin, end - begin);
      absl::StatusOr<ExampleTensors> selected_or =
          SelectExamples(*parts_.examples, part, parts_.rank, total_update);
      if (!selected_or.ok()) return selected_or.status();
      const ExampleTensors& selected = *selected_or;
      std::vector<bool> valid;
      for (const Slot& slot : part) valid.push_back(slot.valid);
      UpdateMicroBatch batch;
      batch.images = selected.images;
      batch.labels = selected.labels;
      batch.update_keys = UpdateKeys(selected.keys, total_update);
      batch.valid = at::tensor(at::ArrayRef<uint8_t>(
                                   std::vector<uint8_t>(valid.begin(), valid.end())))
                        .to(selected.images.device(), at::kBool);
      batch.weights.assign(weights.begin() + begin, weights.begin() + end);
      batches.push_back(std::move(batch));
    }
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  // One rank, one micro-batch: the whole update is this forward, as the
  // reference computes it.
  if (parts_.group == nullptr && micro_batches == 1) {
    SyncBatchNormPass direct;
    direct.phase = BatchNormPhase::kDirect;
    direct.valid = batches[0].valid;
    const SyncBatchNormPassScope scope(&direct);
    absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
        *parts_.model, batches[0].images, batches[0].labels, batches[0].weights,
        GradientStart::kZero, parts_.bf16, batches[0].update_keys);
    return backward;
  }
  // The statistics' sums cross the ranks between passes; the gradient
  // buckets are reduced after the last (not armed during a backward).
  absl::StatusOr<WeightedBackwardResult> loss = SyncBatchNormBackward(
      *parts_.model, batches, parts_.bf16,
      RankSumOver(parts_.group,
                  absl::StrCat(Where(parts_.rank, total_update),
                               ": the synchronized batch norm's statistics")));
  if (!loss.ok()) {
    return absl::Status(loss.status().code(), absl::StrCat(Where(parts_.rank, total_update),
                                                           ": ", loss.status().message()));
  }
  return loss;
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::OrderedBackward(const EpochPlan& plan,
                                                                   int64_t update,
                                                                   int64_t total_update) {
  const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kForwardBackward,
                                     parts_.rank, total_update);
  if (has_sync_batch_norm_) {
    return absl::FailedPreconditionError(absl::StrCat(
        Where(parts_.rank, total_update), ": reducer ", parts_.reducer->chunk_slots(),
        "-slot chunks are computed alone, and a synchronized batch norm's statistics "
        "span the whole update: use reducer allreduce_sum with this model"));
  }
  const int world = plan.world_size();
  // Every rank's weights, laid out by the update's global order.
  const UpdateComposition composition =
      ComposeUpdate(plan, update, *parts_.labels, *parts_.class_counts, parts_.micro_batches);
  std::vector<std::vector<double>> weights_by_rank(world);
  for (int r = 0; r < world; ++r) weights_by_rank[r] = parts_.weighting->Weights(composition, r);
  const std::vector<DealtPosition> order = plan.UpdateOrder(update);
  const int64_t positions = static_cast<int64_t>(order.size());
  const int64_t chunks = (plan.global_batch() + chunk_slots_ - 1) / chunk_slots_;
  // This rank computes the chunks its share of the global batch covers.
  int64_t first = 0;
  for (int r = 0; r < parts_.rank; ++r) first += plan.local_batch()[r];
  const int64_t last = first + plan.local_batch()[parts_.rank];
  WeightedBackwardResult loss;
  try {
    const std::vector<at::Tensor> parameters = parts_.model->parameters();
    int64_t elements = 0;
    for (const at::Tensor& p : parameters) elements += p.numel();
    chunk_rows_ = at::zeros({chunks, elements}, parameters.front().options());
    for (int64_t begin = first; begin < std::min(last, positions); begin += chunk_slots_) {
      const int64_t end = std::min({begin + chunk_slots_, last, positions});
      std::vector<Slot> slots;
      std::vector<double> weights;
      for (int64_t p = begin; p < end; ++p) {
        const DealtPosition& at = order[p];
        slots.push_back(plan.UpdateSlots(at.rank, update)[at.index]);
        weights.push_back(weights_by_rank[at.rank][at.index]);
      }
      absl::StatusOr<ExampleTensors> batch =
          SelectExamples(*parts_.examples, slots, parts_.rank, total_update);
      if (!batch.ok()) return batch.status();
      absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
          *parts_.model, batch->images, batch->labels, weights, GradientStart::kZero,
          parts_.bf16, UpdateKeys(batch->keys, total_update));
      if (!backward.ok()) return backward.status();
      loss.weighted_loss += backward->weighted_loss;
      loss.accepted_loss_sum += backward->accepted_loss_sum;
      at::Tensor row = chunk_rows_[begin / chunk_slots_];
      int64_t offset = 0;
      for (const at::Tensor& p : parameters) {
        if (p.grad().defined()) row.narrow(0, offset, p.numel()).copy_(p.grad().reshape(-1));
        offset += p.numel();
      }
    }
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  return loss;
}

absl::Status UpdateStep::SumChunks(int64_t total_update) {
  absl::StatusOr<at::Tensor> sum;
  try {
    const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kAllReduce,
                                       parts_.rank, total_update);
    sum = parts_.reducer->SumChunks(chunk_rows_, parts_.group);
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  if (!sum.ok()) {
    return absl::Status(sum.status().code(), absl::StrCat(Where(parts_.rank, total_update),
                                                          ": ", sum.status().message()));
  }
  try {
    int64_t offset = 0;
    for (at::Tensor p : parts_.model->parameters()) {
      const at::Tensor part = sum->narrow(0, offset, p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(part);
      } else {
        p.mutable_grad() = part.clone();
      }
      offset += p.numel();
    }
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  return absl::OkStatus();
}

void UpdateStep::ArmBuckets() {
  if (buckets_ == nullptr) return;
  // A rank that clips its own gradient reduces it only after clipping.
  const bool clips_locally = parts_.clipping.has_value() && !parts_.clipping->global;
  if (!clips_locally) buckets_->ArmBackward(*parts_.reducer, *parts_.group);
}

absl::Status UpdateStep::PrepareBuckets(int64_t total_update) {
  if (parts_.group == nullptr) return absl::OkStatus();
  if (buckets_ == nullptr) {
    absl::StatusOr<std::unique_ptr<GradientBuckets>> buckets =
        GradientBuckets::ForParameters(parts_.model->parameters(), *parts_.reducer);
    if (!buckets.ok()) {
      return absl::Status(buckets.status().code(),
                          absl::StrCat(Where(parts_.rank, total_update), ": ",
                                       buckets.status().message()));
    }
    buckets_ = *std::move(buckets);
  }
  return absl::OkStatus();
}

absl::Status UpdateStep::Reduce(int64_t total_update) {
  if (parts_.group == nullptr) return absl::OkStatus();
  absl::Status reduced;
  try {
    const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kAllReduce,
                                       parts_.rank, total_update);
    reduced = buckets_->Reduce(*parts_.reducer, *parts_.group);
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  if (reduced.ok()) return reduced;
  return absl::Status(reduced.code(), absl::StrCat(Where(parts_.rank, total_update),
                                                   ": ", reduced.message()));
}

absl::Status UpdateStep::CheckReducedUpdate(int64_t total_update, double loss) {
  try {
    // The reduced gradients first: they are the same on every rank, so
    // every rank stops at the same update.
    const at::Tensor probe = SmallestGradient(*parts_.model);
    if (probe.defined() && !AllFinite(probe)) {
      return NotFinite(parts_.rank, total_update,
                       absl::StrCat("the reduced gradient of ",
                                    FirstNonFinite(*parts_.model, /*gradients=*/true)));
    }
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  if (!std::isfinite(loss)) {
    return NotFinite(parts_.rank, total_update,
                     absl::StrCat("this rank's loss (", loss, ")"));
  }
  return absl::OkStatus();
}

absl::Status UpdateStep::SumLoss(int64_t total_update, UpdateResult* result) {
  if (parts_.whole_loss_updates == nullptr ||
      parts_.whole_loss_updates->count(total_update) == 0) {
    return absl::OkStatus();
  }
  const double accepted = static_cast<double>(std::max<int64_t>(1, result->global_accepted));
  if (parts_.group == nullptr) {
    result->whole_update_loss = result->accepted_loss_sum / accepted;
    return absl::OkStatus();
  }
  try {
    const at::Device device = parts_.model->parameters().front().device();
    at::Tensor loss = at::full({1}, result->accepted_loss_sum,
                               at::TensorOptions().dtype(at::kDouble).device(device));
    const RankSum sum = RankSumOver(
        parts_.group, absl::StrCat(Where(parts_.rank, total_update), ": the update's loss"));
    if (absl::Status s = sum(loss); !s.ok()) return s;
    result->whole_update_loss = loss.item<double>() / accepted;
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  return absl::OkStatus();
}

absl::Status CheckParametersFinite(const Classifier& model, int rank,
                                   int64_t total_update) {
  try {
    const std::string name = FirstNonFinite(model, /*gradients=*/false);
    if (!name.empty()) {
      return NotFinite(rank, total_update, absl::StrCat("parameter ", name));
    }
  } catch (const std::exception& e) {
    return LibTorchError(e, rank, total_update);
  }
  return absl::OkStatus();
}

absl::Status UpdateStep::Clip(bool clip_here, int64_t total_update, UpdateResult* result) {
  if (!clip_here) return absl::OkStatus();
  const double max_norm = parts_.clipping->max_norm;
  try {
    result->gradient_norm =
        torch::nn::utils::clip_grad_norm_(parts_.model->parameters(), max_norm);
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  // clip_grad_norm_'s own factor (it scales only when this is below 1).
  result->clip_factor = std::min(1.0, max_norm / (result->gradient_norm + 1e-6));
  return absl::OkStatus();
}

absl::Status UpdateStep::Step(int64_t total_update, UpdateResult* result) {
  const double factor =
      parts_.schedule != nullptr ? parts_.schedule->Factor(total_update) : 1.0;
  try {
    std::vector<torch::optim::OptimizerParamGroup>& groups = parts_.optimizer->param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      groups[g].options().set_lr(base_rates_[g] * factor);
    }
    result->learning_rate = base_rates_.empty() ? 0 : base_rates_[0] * factor;
    parts_.optimizer->step();
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
