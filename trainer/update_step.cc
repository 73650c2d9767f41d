#include "trainer/update_step.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/phase_kill.h"
#include "logging/glog.h"
#include "model/weighted_loss.h"
#include "optimizers/step_rules.h"
#include "parity/tensor_comparison.h"
#include "collectives/collective_error.h"
#include "collectives/sum_across_ranks.h"
#include "model/keyed_dropout.h"
#include "model/share_backward.h"
#include "model/sync_batch_norm.h"
#include "reducers/chunk_tree.h"
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
  base_rates_ = BaseRates(*parts.optimizer);
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
  if (absl::Status s = PrepareBuckets(total_update); !s.ok()) return s;
  if (absl::Status s = BeginVerifiedUpdate(plan, update, total_update); !s.ok()) return s;
  absl::StatusOr<WeightedBackwardResult> loss =
      ordered ? OrderedBackward(plan, update, total_update) : Backward(plan, update, total_update);
  if (!loss.ok()) return loss.status();
  result.weighted_loss = loss->weighted_loss;
  result.accepted_loss_sum = loss->accepted_loss_sum;
  const bool clips_locally = parts_.clipping.has_value() && !parts_.clipping->global;
  if (absl::Status s = ProbeContribution(clips_locally); !s.ok()) return s;
  if (absl::Status s = Clip(clips_locally, total_update, &result); !s.ok()) return s;
  const Clock::time_point sync_start = Clock::now();
  // The ordered mode on one rank sums its chunk rows here; on a group its
  // buckets carry the sum (OrderedBackward).
  const bool sums_rows = ordered && buckets_ == nullptr;
  if (absl::Status s = sums_rows ? SumChunks(total_update) : Reduce(total_update); !s.ok()) {
    return s;
  }
  result.sync_seconds =
      std::chrono::duration<double>(Clock::now() - sync_start).count();
  if (absl::Status s = Corrupt(total_update); !s.ok()) return s;
  if (!ReducesVerified()) {
    if (absl::Status s = CheckReducedUpdate(total_update, result.weighted_loss); !s.ok()) {
      return s;
    }
  } else if (absl::Status s = ReportReduced(total_update); !s.ok()) {
    return s;
  }
  if (absl::Status s = SumLoss(total_update, &result); !s.ok()) return s;
  const bool clips_globally = parts_.clipping.has_value() && parts_.clipping->global;
  if (absl::Status s = Clip(clips_globally, total_update, &result); !s.ok()) return s;
  if (absl::Status s = ReportStepped(total_update); !s.ok()) return s;
  // The update before this one: its reports crossed the ranks with this
  // one's gradients (or, without buckets, gathered while this one
  // computed).
  absl::StatusOr<std::optional<UpdateVerdict>> earlier = SettleChecks(/*rider_reduced=*/true);
  if (!earlier.ok()) return earlier.status();
  result.earlier_verdict = *earlier;
  if (result.earlier_verdict.has_value() && !result.earlier_verdict->verified &&
      parts_.skip_step_after_failed_check) {
    result.not_stepped = true;
    return result;
  }
  if (observer != nullptr) {
    if (absl::Status s = observer->BeforeOptimizerStep(total_update, *parts_.model);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Step(total_update, &result); !s.ok()) return s;
  if (absl::Status s = LaunchChecks(total_update, result); !s.ok()) return s;
  if (observer != nullptr) {
    if (absl::Status s = observer->AfterOptimizerStep(total_update, plan, update,
                                                      result, *parts_.model);
        !s.ok()) {
      return s;
    }
  }
  return result;
}

WeightingInputs UpdateStep::Weighting() const {
  return WeightingInputs{parts_.weighting, parts_.labels, parts_.class_counts,
                         parts_.micro_batches};
}

ShareBackwardParts UpdateStep::ShareParts(int64_t total_update) {
  ShareBackwardParts share;
  share.model = parts_.model;
  share.examples = parts_.examples;
  share.total_update = total_update;
  share.bf16 = parts_.bf16;
  share.one_rank = parts_.group == nullptr;
  share.where = Where(parts_.rank, total_update);
  share.sum = RankSumOver(parts_.group,
                          absl::StrCat(share.where, ": the synchronized batch norm's statistics"));
  if (parts_.verifier != nullptr) {
    UpdateVerifier* verifier = parts_.verifier;
    share.on_micro_batch = [verifier](const MicroBatchShare& part, const at::Tensor& keys, int m) {
      verifier->AddSlots(static_cast<int>(part.begin), part.slots, part.weights, keys, m);
    };
  }
  // The last backward of the update starts the buckets' reduction.
  share.before_last = [this] { ArmBuckets(); };
  return share;
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::Backward(const EpochPlan& plan,
                                                            int64_t update,
                                                            int64_t total_update) {
  const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kForwardBackward,
                                     parts_.rank, total_update);
  // This rank's slots of the update, read out of the plan's global order,
  // cut into its micro-batches, weighed over the whole update.
  return ShareBackward(RankShare(plan, update, parts_.rank, Weighting()),
                       ShareParts(total_update));
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
  // This rank computes the chunks its share of the global batch covers.
  const ShareBackwardParts share = ShareParts(total_update);
  ChunkObserver on_chunk;
  if (parts_.verifier != nullptr) {
    UpdateVerifier* verifier = parts_.verifier;
    on_chunk = [verifier](const ChunkShare& chunk, const at::Tensor& keys) {
      verifier->AddPositions(chunk.positions, chunk.slots, chunk.weights, keys, 0);
    };
  }
  try {
    chunk_row_bounds_ = ChunkRowBounds(plan, chunk_slots_);
    std::vector<ChunkShare> mine;
    for (ChunkShare& chunk : OrderedChunks(plan, update, chunk_slots_, Weighting())) {
      if (chunk.rank == parts_.rank) mine.push_back(std::move(chunk));
    }
    return buckets_ == nullptr ? ChunksIntoRows(plan, mine, share, on_chunk)
                               : ChunksIntoBuckets(mine, share, on_chunk);
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::ChunksIntoRows(
    const EpochPlan& plan, const std::vector<ChunkShare>& mine, const ShareBackwardParts& share,
    const ChunkObserver& on_chunk) {
  const std::vector<at::Tensor> parameters = parts_.model->parameters();
  int64_t elements = 0;
  for (const at::Tensor& p : parameters) elements += p.numel();
  chunk_rows_ = at::zeros({ChunkRows(plan, chunk_slots_), elements}, parameters.front().options());
  WeightedBackwardResult loss;
  for (const ChunkShare& chunk : mine) {
    absl::StatusOr<WeightedBackwardResult> backward = ChunkBackward(chunk, share, on_chunk);
    if (!backward.ok()) return backward.status();
    loss.weighted_loss += backward->weighted_loss;
    loss.accepted_loss_sum += backward->accepted_loss_sum;
    at::Tensor row = chunk_rows_[chunk.row];
    FlattenGradients(*parts_.model, row);
    // The chunk's gradient is this rank's contribution to the ordered sum.
    if (parts_.verifier != nullptr) {
      if (absl::Status s = parts_.verifier->AddContribution(row, 0); !s.ok()) return s;
    }
  }
  return loss;
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::ChunksIntoBuckets(
    const std::vector<ChunkShare>& mine, const ShareBackwardParts& share,
    const ChunkObserver& on_chunk) {
  const int64_t first = chunk_row_bounds_[parts_.rank];
  const int64_t held = chunk_row_bounds_[parts_.rank + 1] - first;
  const int last_bucket = buckets_->size() - 1;
  const int64_t elements = buckets_->offset(last_bucket) + buckets_->gradients(last_bucket).numel();
  if (!chunk_rows_.defined() || chunk_rows_.size(0) != held || chunk_rows_.size(1) != elements) {
    chunk_rows_ = at::zeros({held, elements}, buckets_->gradients(0).options());
  } else {
    // The rows this update computes are written whole (the last one is read
    // from the buckets); the others (an epoch's short last update) are zeros.
    std::vector<bool> computed(static_cast<size_t>(held), false);
    for (const ChunkShare& chunk : mine) computed[static_cast<size_t>(chunk.row - first)] = true;
    for (int64_t row = 0; row < held; ++row) {
      if (!computed[static_cast<size_t>(row)]) chunk_rows_[row].zero_();
    }
  }
  // Every chunk but the last lands in its row; the last one's backward
  // starts the buckets' reduction, each bucket taking its part of the row.
  if (mine.empty()) {
    if (absl::Status s = buckets_->ZeroGradients(); !s.ok()) return s;
    if (absl::Status s = BeginChunkBuckets(ChunkTreeNode()); !s.ok()) return s;
    return WeightedBackwardResult();
  }
  if (HoldsOnePairWhole(mine)) return PairIntoBuckets(mine, share, on_chunk);
  WeightedBackwardResult loss;
  for (const ChunkShare& chunk : mine) {
    const bool last = &chunk == &mine.back();
    if (last) {
      if (absl::Status s = BeginChunkBuckets(ChunkTreeNode{chunk.row, chunk.row + 1}); !s.ok()) {
        return s;
      }
      ArmBuckets();
    }
    absl::StatusOr<WeightedBackwardResult> backward = ChunkBackward(chunk, share, on_chunk);
    if (!backward.ok()) return backward.status();
    loss.weighted_loss += backward->weighted_loss;
    loss.accepted_loss_sum += backward->accepted_loss_sum;
    if (last) break;
    at::Tensor row = chunk_rows_[chunk.row - first];
    for (int b = 0; b < buckets_->size(); ++b) {
      row.narrow(0, buckets_->offset(b), buckets_->gradients(b).numel())
          .copy_(buckets_->gradients(b));
    }
    // The chunk's gradient is this rank's contribution to the ordered sum
    // (the last one's: as its buckets start).
    if (parts_.verifier != nullptr) {
      if (absl::Status s = parts_.verifier->AddContribution(row, 0); !s.ok()) return s;
    }
  }
  return loss;
}

bool UpdateStep::HoldsOnePairWhole(const std::vector<ChunkShare>& mine) const {
  const int64_t first = chunk_row_bounds_[parts_.rank];
  const std::vector<ChunkTreeNode> held =
      HeldSubtrees(chunk_row_bounds_.back(), first, chunk_row_bounds_[parts_.rank + 1]);
  return mine.size() == 2 && held.size() == 1 && held[0] == ChunkTreeNode{first, first + 2} &&
         mine[0].row == first && mine[1].row == first + 1;
}

absl::StatusOr<WeightedBackwardResult> UpdateStep::PairIntoBuckets(
    const std::vector<ChunkShare>& mine, const ShareBackwardParts& share,
    const ChunkObserver& on_chunk) {
  absl::StatusOr<WeightedBackwardResult> left = ChunkBackward(mine[0], share, on_chunk);
  if (!left.ok()) return left.status();
  const ChunkTreeNode pair{mine[0].row, mine[1].row + 1};
  if (absl::Status s = BeginChunkBuckets(pair); !s.ok()) return s;
  ArmBuckets();
  absl::StatusOr<WeightedBackwardResult> right =
      ChunkBackward(mine[1], share, on_chunk, GradientStart::kAccumulate);
  if (!right.ok()) return right.status();
  // The tree adds the right row even where it is +0 (a parameter this
  // backward gave no gradient): the same addition here turns a -0 into +0.
  absl::StatusOr<std::vector<at::Tensor>> untouched = buckets_->NotAccumulated();
  if (!untouched.ok()) return untouched.status();
  for (at::Tensor& gradient : *untouched) gradient.add_(0.0);
  WeightedBackwardResult loss = *left;
  loss.weighted_loss += right->weighted_loss;
  loss.accepted_loss_sum += right->accepted_loss_sum;
  return loss;
}

absl::Status UpdateStep::BeginChunkBuckets(ChunkTreeNode buckets_node) {
  return parts_.reducer->BeginChunkBuckets(chunk_rows_, buckets_node, chunk_row_bounds_);
}

absl::Status UpdateStep::SumChunks(int64_t total_update) {
  absl::StatusOr<at::Tensor> sum;
  try {
    const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kAllReduce,
                                       parts_.rank, total_update);
    sum = parts_.reducer->SumChunks(chunk_rows_, chunk_row_bounds_, parts_.group);
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
    // The every-update checks' reports ride in the last bucket.
    const std::vector<at::Tensor> parameters = parts_.model->parameters();
    const int64_t rider = parts_.verifier != nullptr && !parameters.empty()
                              ? parts_.verifier->RiderElements(parameters.front().scalar_type())
                              : 0;
    absl::StatusOr<std::unique_ptr<GradientBuckets>> buckets =
        GradientBuckets::ForParameters(parameters, *parts_.reducer, rider);
    if (!buckets.ok()) {
      return absl::Status(buckets.status().code(),
                          absl::StrCat(Where(parts_.rank, total_update), ": ",
                                       buckets.status().message()));
    }
    buckets_ = *std::move(buckets);
    // What each bucket holds when the reducer is given it is this rank's
    // contribution, unless the rank clips its own gradient first
    // (ProbeContribution then reads it before the clipping).
    const bool clips_locally = parts_.clipping.has_value() && !parts_.clipping->global;
    if (parts_.verifier != nullptr && !clips_locally) {
      UpdateVerifier* verifier = parts_.verifier;
      buckets_->ObserveStarts([verifier](int, const at::Tensor& flat, int64_t offset) {
        return verifier->AddContribution(flat, offset);
      });
    }
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
  try {
    const ClipOutcome clipped =
        ClipGradients(parts_.model->parameters(), parts_.clipping->max_norm);
    result->gradient_norm = clipped.norm;
    result->clip_factor = clipped.factor;
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  return absl::OkStatus();
}

absl::Status UpdateStep::Step(int64_t total_update, UpdateResult* result) {
  const double factor =
      parts_.schedule != nullptr ? parts_.schedule->Factor(total_update) : 1.0;
  try {
    const PhaseKillScope injected_kill(parts_.phase_kill, KillPhase::kOptimizerStep, parts_.rank,
                                       total_update);
    result->learning_rate = StepAtRate(*parts_.optimizer, base_rates_, factor);
  } catch (const std::exception& e) {
    return LibTorchError(e, parts_.rank, total_update);
  }
  updates_stepped_ = total_update + 1;
  return absl::OkStatus();
}

absl::StatusOr<std::string> FlipLargestElementBit(const std::vector<at::Tensor>& layout,
                                                  int bit) {
  try {
    int64_t where_tensor = -1;
    int64_t where_element = 0;
    int64_t element_offset = 0;
    int64_t best_offset = 0;
    float largest = -1;
    for (size_t t = 0; t < layout.size(); ++t) {
      const at::Tensor& x = layout[t];
      if (x.scalar_type() != at::kFloat || !x.is_contiguous()) {
        return absl::InvalidArgumentError(
            "run.fault.corrupt_bit: flips a bit of a contiguous float32 gradient");
      }
      const at::Tensor host = x.device().is_cpu() ? x : x.to(at::kCPU);
      const float* data = host.data_ptr<float>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const float magnitude = std::isnan(data[i]) ? INFINITY : std::fabs(data[i]);
        if (where_tensor < 0 || magnitude > largest) {
          largest = magnitude;
          where_tensor = static_cast<int64_t>(t);
          where_element = i;
          best_offset = element_offset + i;
        }
      }
      element_offset += x.numel();
    }
    if (where_tensor < 0) {
      return absl::InvalidArgumentError("run.fault.corrupt_bit: the gradient has no element");
    }
    at::Tensor target = layout[static_cast<size_t>(where_tensor)].reshape(-1)[where_element];
    const float before = target.item<float>();
    uint32_t word = 0;
    std::memcpy(&word, &before, sizeof(word));
    word ^= uint32_t{1} << bit;
    float after = 0;
    std::memcpy(&after, &word, sizeof(after));
    target.fill_(after);
    return absl::StrCat("element ", best_offset, " of the reduced gradient (", before, " -> ",
                        after, ")");
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "flipping a bit of the reduced gradient: LibTorch");
  }
}

absl::Status UpdateStep::BeginVerifiedUpdate(const EpochPlan& plan, int64_t update,
                                             int64_t total_update) {
  if (parts_.verifier == nullptr) return absl::OkStatus();
  if (&plan != verified_plan_ || plan.epoch() != verified_epoch_) {
    if (absl::Status s = parts_.verifier->BeginEpoch(plan); !s.ok()) return s;
    verified_plan_ = &plan;
    verified_epoch_ = plan.epoch();
  }
  absl::Status begun = parts_.verifier->BeginUpdate(plan, update, total_update);
  if (begun.ok()) return begun;
  return absl::Status(begun.code(), absl::StrCat(Where(parts_.rank, total_update),
                                                 ": one worker's accounting: ", begun.message()));
}

std::vector<at::Tensor> UpdateStep::GradientLayout() const {
  std::vector<at::Tensor> layout;
  if (buckets_ != nullptr) {
    for (int b = 0; b < buckets_->size(); ++b) layout.push_back(buckets_->gradients(b));
    return layout;
  }
  for (const at::Tensor& p : parts_.model->parameters()) {
    layout.push_back(p.grad().defined() ? p.grad() : at::zeros_like(p));
  }
  return layout;
}

absl::Status UpdateStep::ProbeContribution(bool clips_locally) {
  if (parts_.verifier == nullptr || buckets_ == nullptr || !clips_locally) {
    return absl::OkStatus();
  }
  for (int b = 0; b < buckets_->size(); ++b) {
    if (absl::Status s =
            parts_.verifier->AddContribution(buckets_->gradients(b), buckets_->offset(b));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status UpdateStep::Corrupt(int64_t total_update) {
  const GradientCorruption& corruption = parts_.corruption;
  if (!corruption.armed || corruption.rank != parts_.rank || corruption.update != total_update) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> flipped = FlipLargestElementBit(GradientLayout(), corruption.bit);
  if (!flipped.ok()) return flipped.status();
  LOG(WARNING) << Where(parts_.rank, total_update) << ": run.fault flips bit " << corruption.bit
               << " of " << *flipped;
  return absl::OkStatus();
}

bool UpdateStep::ReducesVerified() const {
  return parts_.verifier != nullptr && parts_.verifier->reduces();
}

absl::Status UpdateStep::ReportReduced(int64_t total_update) {
  if (!ReducesVerified()) return absl::OkStatus();
  if (absl::Status s = parts_.verifier->SetReduced(GradientLayout()); !s.ok()) return s;
  if (parts_.clipping.has_value() && parts_.clipping->global) {
    absl::Status s = parts_.verifier->ExpectClipFactor(parts_.model->parameters());
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(Where(parts_.rank, total_update), ": ",
                                                 s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status UpdateStep::ReportStepped(int64_t /*total_update*/) {
  if (!ReducesVerified() || !parts_.clipping.has_value() || !parts_.clipping->global) {
    return absl::OkStatus();
  }
  return parts_.verifier->SetStepped(GradientLayout());
}

absl::Status UpdateStep::LaunchChecks(int64_t total_update, const UpdateResult& result) {
  if (parts_.verifier == nullptr) return absl::OkStatus();
  std::vector<ReplicaTensor> replica;
  for (const auto& item : parts_.model->named_parameters()) {
    replica.emplace_back(item.key(), item.value());
  }
  if (parts_.replica_extras) {
    for (ReplicaTensor& extra : parts_.replica_extras(total_update)) {
      replica.push_back(std::move(extra));
    }
  }
  return parts_.verifier->Launch(std::move(replica), std::isfinite(result.weighted_loss),
                                 buckets_ != nullptr ? buckets_->rider() : at::Tensor());
}

absl::StatusOr<std::optional<UpdateVerdict>> UpdateStep::SettleChecks() {
  return SettleChecks(/*rider_reduced=*/false);
}

absl::StatusOr<std::optional<UpdateVerdict>> UpdateStep::SettleChecks(bool rider_reduced) {
  if (parts_.verifier == nullptr) return std::optional<UpdateVerdict>();
  absl::StatusOr<std::optional<UpdateVerdict>> verdict = parts_.verifier->Settle(rider_reduced);
  if (!verdict.ok() || !verdict->has_value() || !(*verdict)->not_finite) return verdict;
  // A loss gone to NaN, as without the checks: every rank stops here.
  return NotFinite(parts_.rank, (*verdict)->update, "a rank's loss or the reduced gradient");
}

}  // namespace receipt_parity
