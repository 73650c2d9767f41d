#include "reducers/rank_average_reducer.h"

#include <exception>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "collectives/collective_error.h"

namespace receipt_parity {

absl::StatusOr<RankAverageReducer> RankAverageReducer::Create(
    int64_t bucket_cap_bytes) {
  absl::StatusOr<AllreduceSumReducer> sum =
      AllreduceSumReducer::Create(bucket_cap_bytes, /*overlap_backward=*/false);
  if (!sum.ok()) return sum.status();
  return RankAverageReducer(*std::move(sum));
}

absl::Status RankAverageReducer::ReduceBucket(at::Tensor& flat,
                                              c10d::ProcessGroup& group) {
  if (absl::Status s = sum_.ReduceBucket(flat, group); !s.ok()) return s;
  try {
    flat.div_(group.getSize());
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, "rank_average: dividing by world size");
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
