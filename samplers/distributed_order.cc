#include "samplers/distributed_order.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "samplers/permutation.h"

namespace receipt_parity {

EpochCoverage DistributedSamplerPolicy::epoch_coverage() const {
  switch (tail_) {
    case TailHandling::kDuplicatePad:
      return EpochCoverage::kOnceWithRepeatedPadding;
    case TailHandling::kDropTail:
      return EpochCoverage::kOnceOrDropped;
    case TailHandling::kMaskedTail:
      return EpochCoverage::kExactlyOnce;
  }
  return EpochCoverage::kExactlyOnce;
}

absl::StatusOr<GlobalOrder> DistributedSamplerOrder(const OrderRequest& request,
                                                    bool shuffle,
                                                    TailHandling tail) {
  if (request.world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world_size is ", request.world_size, "; it must be >= 1"));
  }
  absl::StatusOr<std::vector<int64_t>> permutation = EpochPermutation(
      request.num_examples, request.seed, request.epoch, shuffle);
  if (!permutation.ok()) return permutation.status();

  const int64_t n = request.num_examples;
  const int64_t world = request.world_size;
  // DistributedSampler's num_samples * num_replicas, in integer arithmetic:
  // with drop_last, ceil((n - W) / W) == floor(n / W) whenever n % W != 0.
  const int64_t total = tail == TailHandling::kDropTail
                            ? (n / world) * world
                            : (n + world - 1) / world * world;
  GlobalOrder order;
  order.slots.reserve(total);
  for (int64_t p = 0; p < total; ++p) {
    Slot slot;
    slot.dataset_index = (*permutation)[p % n];
    slot.valid = p < n || tail != TailHandling::kMaskedTail;
    order.slots.push_back(slot);
  }
  if (total < n) {
    order.dropped.assign(permutation->begin() + total, permutation->end());
  }
  return order;
}

}  // namespace receipt_parity
