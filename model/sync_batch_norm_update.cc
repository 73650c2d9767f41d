#include "model/sync_batch_norm_update.h"

#include <exception>
#include <memory>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "model/autocast_scope.h"
#include "model/sync_batch_norm.h"
#include "model/weighted_loss.h"

namespace receipt_parity {
namespace {

using Layers = std::vector<SyncBatchNorm2dImpl*>;

bool Empty(const UpdateMicroBatch& mb) { return mb.images.size(0) == 0; }

// A forward of `mb` in the pass's current phase; its output is not used.
void Forward(Classifier& model, const UpdateMicroBatch& mb, bool bf16, SyncBatchNormPass& pass) {
  pass.valid = mb.valid;
  const AutocastScope autocast(mb.images.device().type(), bf16);
  model.ForwardForUpdate(mb.images, mb.update_keys);
}

at::Tensor DoubleZeros(int64_t n, const at::Tensor& like) {
  return at::zeros({n}, like.options().dtype(at::kDouble));
}

// Layer t's update statistics, from every rank's sums.
absl::Status CollectLayer(Classifier& model, const std::vector<UpdateMicroBatch>& micro_batches,
                          bool bf16, const RankSum& sum, SyncBatchNorm2dImpl& layer,
                          const at::Tensor& like, SyncBatchNormPass& pass) {
  const int t = layer.layer();
  pass.phase = BatchNormPhase::kCollect;
  pass.target = t;
  {
    const torch::NoGradGuard no_grad;
    for (const UpdateMicroBatch& mb : micro_batches) {
      if (!Empty(mb)) Forward(model, mb, bf16, pass);
    }
  }
  BatchNormLayerPass& mine = pass.layers[t];
  const int64_t c = layer.channels();
  if (!mine.local_sum.defined()) {
    mine.local_sum = DoubleZeros(c, like);
    mine.local_sum_of_squares = DoubleZeros(c, like);
  }
  at::Tensor packed = at::cat({mine.local_sum, mine.local_sum_of_squares,
                               at::full({1}, static_cast<double>(mine.local_count),
                                        like.options().dtype(at::kDouble))});
  if (absl::Status s = sum(packed); !s.ok()) return s;
  const int64_t count = static_cast<int64_t>(packed[2 * c].item<double>());
  if (count == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synchronized batch norm: layer ", t, " saw no valid example in the update"));
  }
  mine.count = count;
  mine.mean = packed.narrow(0, 0, c) / static_cast<double>(count);
  mine.var = at::clamp_min(
      packed.narrow(0, c, c) / static_cast<double>(count) - mine.mean * mine.mean, 0);
  layer.UpdateRunningStatistics(mine.mean, mine.var, count);
  return absl::OkStatus();
}

// Fresh leaves of the update statistics of layers [0, up_to).
void MakeLeaves(const Layers& layers, int up_to, SyncBatchNormPass& pass) {
  for (int l = 0; l < up_to; ++l) {
    BatchNormLayerPass& layer = pass.layers[l];
    const at::ScalarType dtype = layers[l]->dtype();
    layer.mean_leaf = layer.mean.to(dtype).detach().requires_grad_(true);
    layer.var_leaf = layer.var.to(dtype).detach().requires_grad_(true);
  }
}

// The gradients the leaves of layers [0, up_to) collected, packed (double),
// added over the ranks.
absl::StatusOr<at::Tensor> SummedLeafGradients(const Layers& layers, int up_to,
                                               const at::Tensor& like,
                                               const SyncBatchNormPass& pass, const RankSum& sum) {
  std::vector<at::Tensor> parts;
  for (int l = 0; l < up_to; ++l) {
    for (const at::Tensor* leaf : {&pass.layers[l].mean_leaf, &pass.layers[l].var_leaf}) {
      parts.push_back(leaf->grad().defined() ? leaf->grad().to(at::kDouble)
                                             : DoubleZeros(layers[l]->channels(), like));
    }
  }
  at::Tensor packed = at::cat(parts);
  if (absl::Status s = sum(packed); !s.ok()) return s;
  return packed;
}

// Adds `packed` (mean, var per layer, as SummedLeafGradients packs them) to
// the adjoints of layers [0, up_to).
void AddAdjoints(const Layers& layers, int up_to, const at::Tensor& packed,
                 SyncBatchNormPass& pass) {
  int64_t at = 0;
  for (int l = 0; l < up_to; ++l) {
    const int64_t c = layers[l]->channels();
    BatchNormLayerPass& layer = pass.layers[l];
    const at::Tensor mean = packed.narrow(0, at, c);
    const at::Tensor var = packed.narrow(0, at + c, c);
    at += 2 * c;
    layer.mean_adjoint = layer.mean_adjoint.defined() ? layer.mean_adjoint + mean : mean.clone();
    layer.var_adjoint = layer.var_adjoint.defined() ? layer.var_adjoint + var : var.clone();
  }
}

// The loss's backward with the statistics as leaves; this rank's loss.
WeightedBackwardResult ApplyPass(Classifier& model,
                                 const std::vector<UpdateMicroBatch>& micro_batches, bool bf16,
                                 SyncBatchNormPass& pass) {
  pass.phase = BatchNormPhase::kApply;
  WeightedBackwardResult loss;
  for (const UpdateMicroBatch& mb : micro_batches) {
    if (Empty(mb)) continue;
    pass.valid = mb.valid;
    WeightedLoss weighted = WeightedLossOf(model, mb.images, mb.labels, mb.weights, bf16,
                                           mb.update_keys);
    weighted.weighted.backward();
    loss.weighted_loss += weighted.weighted.item<double>();
    loss.accepted_loss_sum += weighted.accepted_loss_sum;
  }
  return loss;
}

// Layer t's surrogate, backward through every micro-batch.
void SurrogatePass(Classifier& model, const std::vector<UpdateMicroBatch>& micro_batches,
                   bool bf16, int t, SyncBatchNormPass& pass) {
  pass.phase = BatchNormPhase::kSurrogate;
  pass.target = t;
  for (const UpdateMicroBatch& mb : micro_batches) {
    if (Empty(mb)) continue;
    pass.surrogate = at::Tensor();
    Forward(model, mb, bf16, pass);
    if (pass.surrogate.defined()) pass.surrogate.backward();
  }
  pass.surrogate = at::Tensor();
}

absl::StatusOr<WeightedBackwardResult> RunPasses(Classifier& model,
                                                 const std::vector<UpdateMicroBatch>& micro_batches,
                                                 bool bf16, const RankSum& sum) {
  const Layers layers = SyncBatchNorms(model);
  const at::Tensor like = model.parameters().front();
  PrepareGradients(model, GradientStart::kZero);
  SyncBatchNormPass pass;
  pass.layers.resize(layers.size());
  const SyncBatchNormPassScope scope(&pass);
  const int depth = static_cast<int>(layers.size());
  for (int t = 0; t < depth; ++t) {
    if (absl::Status s = CollectLayer(model, micro_batches, bf16, sum, *layers[t], like, pass);
        !s.ok()) {
      return s;
    }
  }
  MakeLeaves(layers, depth, pass);
  const WeightedBackwardResult loss = ApplyPass(model, micro_batches, bf16, pass);
  absl::StatusOr<at::Tensor> direct = SummedLeafGradients(layers, depth, like, pass, sum);
  if (!direct.ok()) return direct.status();
  AddAdjoints(layers, depth, *direct, pass);
  for (int t = depth - 1; t >= 0; --t) {
    MakeLeaves(layers, t, pass);
    SurrogatePass(model, micro_batches, bf16, t, pass);
    if (t == 0) break;
    absl::StatusOr<at::Tensor> through = SummedLeafGradients(layers, t, like, pass, sum);
    if (!through.ok()) return through.status();
    AddAdjoints(layers, t, *through, pass);
  }
  return loss;
}

// The micro-batches' rows in order, as one (an empty micro-batch adds no
// row, and its keys, defined or not, say nothing).
UpdateMicroBatch Concatenated(const std::vector<UpdateMicroBatch>& micro_batches) {
  std::vector<const UpdateMicroBatch*> with_rows;
  for (const UpdateMicroBatch& mb : micro_batches) {
    if (mb.images.size(0) > 0) with_rows.push_back(&mb);
  }
  if (with_rows.empty()) return micro_batches[0];
  if (with_rows.size() == 1) return *with_rows[0];
  std::vector<at::Tensor> images, labels, keys, valid;
  UpdateMicroBatch whole;
  bool keyed = with_rows[0]->update_keys.defined();
  for (const UpdateMicroBatch* part : with_rows) {
    const UpdateMicroBatch& mb = *part;
    TORCH_CHECK(mb.update_keys.defined() == keyed,
                "synchronized batch norm: micro-batches with and without update keys");
    images.push_back(mb.images);
    labels.push_back(mb.labels);
    valid.push_back(mb.valid);
    if (keyed) keys.push_back(mb.update_keys);
    whole.weights.insert(whole.weights.end(), mb.weights.begin(), mb.weights.end());
  }
  whole.images = at::cat(images);
  whole.labels = at::cat(labels);
  whole.valid = at::cat(valid);
  if (keyed) whole.update_keys = at::cat(keys);
  return whole;
}

WeightedBackwardResult Backward(Classifier& model, const UpdateMicroBatch& whole, bool bf16) {
  PrepareGradients(model, GradientStart::kZero);
  WeightedLoss loss =
      WeightedLossOf(model, whole.images, whole.labels, whole.weights, bf16, whole.update_keys);
  loss.weighted.backward();
  WeightedBackwardResult result;
  result.weighted_loss = loss.weighted.item<double>();
  result.accepted_loss_sum = loss.accepted_loss_sum;
  return result;
}

}  // namespace

absl::StatusOr<WeightedBackwardResult> SyncBatchNormBackward(
    Classifier& model, const std::vector<UpdateMicroBatch>& micro_batches, bool bf16,
    const RankSum& sum) {
  if (micro_batches.empty()) {
    return absl::InvalidArgumentError("synchronized batch norm: an update without micro-batches");
  }
  SyncBatchNormPass pass;
  std::shared_ptr<StatisticsSum> statistics;
  if (sum) {
    statistics = std::make_shared<StatisticsSum>(sum);
    pass.phase = BatchNormPhase::kSynchronized;
    pass.sum = statistics;
  }
  try {
    const UpdateMicroBatch whole = Concatenated(micro_batches);
    pass.valid = whole.valid;
    const SyncBatchNormPassScope scope(&pass);
    return Backward(model, whole, bf16);
  } catch (const std::exception& e) {
    if (statistics != nullptr && !statistics->first_error().ok()) {
      return statistics->first_error();
    }
    return LibTorchErrorToStatus(e, "synchronized batch norm: LibTorch");
  }
}

absl::StatusOr<WeightedBackwardResult> SyncBatchNormPassesBackward(
    Classifier& model, const std::vector<UpdateMicroBatch>& micro_batches, bool bf16,
    const RankSum& sum) {
  try {
    return RunPasses(model, micro_batches, bf16, sum);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "synchronized batch norm: LibTorch");
  }
}

}  // namespace receipt_parity
