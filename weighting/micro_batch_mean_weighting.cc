#include "weighting/micro_batch_mean_weighting.h"

#include "logging/glog.h"

namespace receipt_parity {

std::vector<double> MicroBatchMeanWeighting::Weights(const UpdateComposition& update,
                                                     int rank) const {
  CHECK(rank >= 0 && rank < static_cast<int>(update.by_rank.size()))
      << "micro_batch_mean: rank " << rank << " of " << update.by_rank.size();
  CHECK_GE(update.micro_batches, 1) << "micro_batch_mean: no micro-batches";
  const std::vector<WeightedSlot>& slots = update.by_rank[rank];
  std::vector<int64_t> valid_in(update.micro_batches, 0);
  for (const WeightedSlot& slot : slots) {
    CHECK(slot.micro_batch >= 0 && slot.micro_batch < update.micro_batches)
        << "micro_batch_mean: micro-batch " << slot.micro_batch;
    if (slot.valid) ++valid_in[slot.micro_batch];
  }
  const double per_mean = static_cast<double>(update.micro_batches) *
                          static_cast<double>(update.by_rank.size());
  std::vector<double> weights(slots.size(), 0.0);
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i].valid) continue;
    weights[i] = 1.0 / (static_cast<double>(valid_in[slots[i].micro_batch]) * per_mean);
  }
  return weights;
}

}  // namespace receipt_parity
