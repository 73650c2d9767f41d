#include "samplers/sampler_policy.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

absl::Status ValidateLocalBatch(int world_size,
                                const std::vector<int>& local_batch) {
  if (static_cast<int64_t>(local_batch.size()) != world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local batch sizes [", absl::StrJoin(local_batch, ","), "] have ",
        local_batch.size(), " entries; world_size is ", world_size));
  }
  int64_t sum = 0;
  for (size_t r = 0; r < local_batch.size(); ++r) {
    if (local_batch[r] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("local batch size of rank ", r, " is ", local_batch[r],
                       "; it must be >= 0"));
    }
    sum += local_batch[r];
  }
  if (sum <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("local batch sizes [", absl::StrJoin(local_batch, ","),
                     "] sum to 0; an update needs at least one slot"));
  }
  return absl::OkStatus();
}

// A policy (possibly a team's plugin) must only name existing examples.
absl::Status ValidateOrder(const GlobalOrder& order, int64_t num_examples) {
  auto check = [num_examples](int64_t index, const char* what) {
    if (index < 0 || index >= num_examples) {
      return absl::InternalError(
          absl::StrCat("sampler policy returned ", what, " dataset index ",
                       index, " outside [0, ", num_examples, ")"));
    }
    return absl::OkStatus();
  };
  for (const Slot& slot : order.slots) {
    absl::Status status = check(slot.dataset_index, "slot");
    if (!status.ok()) return status;
  }
  for (int64_t index : order.dropped) {
    absl::Status status = check(index, "dropped");
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

const char* EpochCoverageName(EpochCoverage coverage) {
  switch (coverage) {
    case EpochCoverage::kExactlyOnce:
      return "exactly_once";
    case EpochCoverage::kOnceOrDropped:
      return "once_or_dropped";
    case EpochCoverage::kOnceWithRepeatedPadding:
      return "once_with_repeated_padding";
  }
  return "unknown";
}

absl::StatusOr<EpochPlan> BuildEpochPlan(const SamplerPolicy& policy,
                                         const OrderRequest& request,
                                         const std::vector<int>& local_batch) {
  if (request.world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world_size is ", request.world_size, "; it must be >= 1"));
  }
  if (request.num_examples < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_examples is ", request.num_examples, "; it must be >= 0"));
  }
  absl::Status valid = ValidateLocalBatch(request.world_size, local_batch);
  if (!valid.ok()) return valid;
  OrderRequest dealt = request;
  dealt.global_batch = 0;
  for (int slots : local_batch) dealt.global_batch += slots;
  absl::StatusOr<GlobalOrder> order = policy.Order(dealt);
  if (!order.ok()) return order.status();
  valid = ValidateOrder(*order, request.num_examples);
  if (!valid.ok()) return valid;
  return DealEpochPlan(request.epoch, *std::move(order), local_batch);
}

}  // namespace receipt_parity
