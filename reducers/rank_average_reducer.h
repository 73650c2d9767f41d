// `rank_average`: DDP-style averaging. allreduce_sum's buckets and
// collectives, then every bucket divided by the world size. Equals the
// one-worker gradient only when every rank weighed its loss by its own
// mean AND every rank holds the same number of accepted examples; kept to
// demonstrate the error with unequal local batches. Buckets are reduced
// one at a time, after the backward pass (no overlap).
//
// Thread safety: one reducer per rank; its calls must not run
// concurrently.
#ifndef RECEIPT_PARITY_REDUCERS_RANK_AVERAGE_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_RANK_AVERAGE_REDUCER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {

class RankAverageReducer : public GradientReducer {
 public:
  static constexpr char kName[] = "rank_average";

  // As AllreduceSumReducer::Create.
  static absl::StatusOr<RankAverageReducer> Create(int64_t bucket_cap_bytes);

  std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const override {
    return sum_.PlanBuckets(gradients);
  }
  // As AllreduceSumReducer::ReduceBucket, then flat /= group size.
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
  // The ranks' mean.
  int reduced_divisor(int world_size) const override { return world_size; }
  // The collectives' statistics (the division is local).
  ReduceStats stats() const override { return sum_.stats(); }

 private:
  explicit RankAverageReducer(AllreduceSumReducer sum)
      : sum_(std::move(sum)) {}

  AllreduceSumReducer sum_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_RANK_AVERAGE_REDUCER_H_
