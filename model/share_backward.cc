#include "model/share_backward.h"

#include <exception>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "model/keyed_dropout.h"
#include "model/sync_batch_norm.h"
#include "model/sync_batch_norm_update.h"

namespace receipt_parity {
namespace {

absl::Status Prefixed(const absl::Status& status, const std::string& where) {
  if (where.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
}

absl::StatusOr<ExampleTensors> Examples(const std::vector<Slot>& slots,
                                        const ShareBackwardParts& parts) {
  absl::StatusOr<ExampleTensors> selected = parts.examples->Select(slots);
  if (!selected.ok()) return Prefixed(selected.status(), parts.where);
  return selected;
}

// Micro-batch `part` as the synchronized batch norm's passes take it.
absl::StatusOr<UpdateMicroBatch> SyncBatchNormMicroBatch(const MicroBatchShare& part,
                                                         const ShareBackwardParts& parts) {
  absl::StatusOr<ExampleTensors> selected = Examples(part.slots, parts);
  if (!selected.ok()) return selected.status();
  UpdateMicroBatch batch;
  batch.images = selected->images;
  batch.labels = selected->labels;
  batch.update_keys = UpdateKeys(selected->keys, parts.total_update);
  std::vector<uint8_t> valid;
  for (const Slot& slot : part.slots) valid.push_back(slot.valid ? 1 : 0);
  batch.valid = at::tensor(at::ArrayRef<uint8_t>(valid)).to(selected->images.device(), at::kBool);
  batch.weights = part.weights;
  return batch;
}

absl::StatusOr<WeightedBackwardResult> SyncBatchNormShare(
    const std::vector<MicroBatchShare>& share, const ShareBackwardParts& parts) {
  std::vector<UpdateMicroBatch> batches;
  for (int m = 0; m < static_cast<int>(share.size()); ++m) {
    absl::StatusOr<UpdateMicroBatch> batch = SyncBatchNormMicroBatch(share[m], parts);
    if (!batch.ok()) return batch.status();
    if (parts.on_micro_batch) parts.on_micro_batch(share[m], batch->update_keys, m);
    batches.push_back(*std::move(batch));
  }
  const RankSum identity = [](at::Tensor&) { return absl::OkStatus(); };
  absl::StatusOr<WeightedBackwardResult> loss;
  if (parts.one_rank && batches.size() > 1) {
    // One rank cut into micro-batches (a one-worker run with
    // accumulation, the drift twin): one micro-batch's activations at a
    // time, the parameters' gradient added up over them.
    loss = SyncBatchNormPassesBackward(*parts.model, batches, parts.bf16, identity);
  } else {
    // One backward for the share: the buckets reduce during it. On one
    // rank (no sum), the direct forward: the reference itself.
    if (parts.before_last) parts.before_last();
    const RankSum sum = parts.one_rank ? RankSum() : (parts.sum ? parts.sum : identity);
    loss = SyncBatchNormBackward(*parts.model, batches, parts.bf16, sum);
  }
  if (!loss.ok()) return Prefixed(loss.status(), parts.where);
  return loss;
}

absl::StatusOr<WeightedBackwardResult> PlainShare(const std::vector<MicroBatchShare>& share,
                                                  const ShareBackwardParts& parts) {
  WeightedBackwardResult loss;
  for (int m = 0; m < static_cast<int>(share.size()); ++m) {
    const MicroBatchShare& part = share[m];
    // The first micro-batch starts from zero gradients (even an empty
    // one); an empty later one adds nothing.
    if (m > 0 && part.slots.empty()) continue;
    if (m == static_cast<int>(share.size()) - 1 && parts.before_last) parts.before_last();
    absl::StatusOr<ExampleTensors> batch = Examples(part.slots, parts);
    if (!batch.ok()) return batch.status();
    const at::Tensor update_keys = UpdateKeys(batch->keys, parts.total_update);
    if (parts.on_micro_batch) parts.on_micro_batch(part, update_keys, m);
    absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
        *parts.model, batch->images, batch->labels, part.weights,
        m == 0 ? GradientStart::kZero : GradientStart::kAccumulate, parts.bf16, update_keys);
    if (!backward.ok()) return backward.status();
    loss.weighted_loss += backward->weighted_loss;
    loss.accepted_loss_sum += backward->accepted_loss_sum;
  }
  return loss;
}

}  // namespace

absl::StatusOr<WeightedBackwardResult> ShareBackward(const std::vector<MicroBatchShare>& share,
                                                     const ShareBackwardParts& parts) {
  try {
    return SyncBatchNorms(*parts.model).empty() ? PlainShare(share, parts)
                                                : SyncBatchNormShare(share, parts);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat(parts.where, ": LibTorch"));
  }
}

absl::StatusOr<WeightedBackwardResult> ChunkBackward(const ChunkShare& chunk,
                                                     const ShareBackwardParts& parts,
                                                     const ChunkObserver& on_chunk,
                                                     GradientStart start) {
  try {
    absl::StatusOr<ExampleTensors> batch = Examples(chunk.slots, parts);
    if (!batch.ok()) return batch.status();
    const at::Tensor update_keys = UpdateKeys(batch->keys, parts.total_update);
    if (on_chunk) on_chunk(chunk, update_keys);
    return WeightedBackward(*parts.model, batch->images, batch->labels, chunk.weights, start,
                            parts.bf16, update_keys);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat(parts.where, ": LibTorch"));
  }
}

void FlattenGradients(Classifier& model, at::Tensor& row) {
  int64_t offset = 0;
  for (const at::Tensor& p : model.parameters()) {
    if (p.grad().defined()) row.narrow(0, offset, p.numel()).copy_(p.grad().reshape(-1));
    offset += p.numel();
  }
}

}  // namespace receipt_parity
