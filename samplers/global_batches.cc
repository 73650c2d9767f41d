#include "samplers/global_batches.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "samplers/permutation.h"

namespace receipt_parity {

absl::StatusOr<GlobalOrder> GlobalBatchesOrder(const OrderRequest& request, bool shuffle) {
  if (request.world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global_batches: the world size is ", request.world_size, "; it must be >= 1"));
  }
  if (request.global_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global_batches: the global batch is ", request.global_batch, "; it must be >= 1"));
  }
  absl::StatusOr<std::vector<int64_t>> permutation =
      EpochPermutation(request.num_examples, request.seed, request.epoch, shuffle);
  if (!permutation.ok()) return permutation.status();
  const int64_t n = request.num_examples;
  const int64_t batch = request.global_batch;
  const int64_t total = (n + batch - 1) / batch * batch;
  GlobalOrder order;
  order.slots.reserve(total);
  for (int64_t p = 0; p < total; ++p) {
    Slot slot;
    slot.dataset_index = (*permutation)[p % n];
    slot.valid = p < n;
    order.slots.push_back(slot);
  }
  return order;
}

std::unique_ptr<google::protobuf::Message> GlobalBatchesFactory::UnshuffledOptions() const {
  auto options = std::make_unique<GlobalBatchesOptions>();
  options->set_disable_shuffle(true);
  return options;
}

absl::StatusOr<std::unique_ptr<SamplerPolicy>> GlobalBatchesFactory::CreateTyped(
    const GlobalBatchesOptions& options) const {
  return std::make_unique<GlobalBatchesPolicy>(!options.disable_shuffle());
}

}  // namespace receipt_parity
