// `rank_average`: DDP-style averaging. allreduce_sum's buckets and
// collectives, then every gradient divided by the world size. Equals the
// one-worker gradient only when every rank weighed its loss by its own
// mean AND every rank holds the same number of accepted examples; kept to
// demonstrate the error with unequal local batches.
//
// Thread safety: one reducer per rank; Reduce() and stats() must not be
// called concurrently on one object.
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

  // As AllreduceSumReducer::Reduce, then grads[i] /= group size.
  absl::Status Reduce(std::vector<at::Tensor>& grads,
                      c10d::ProcessGroup& group) override;
  // The collectives' statistics (the division is local).
  ReduceStats stats() const override { return sum_.stats(); }

 private:
  explicit RankAverageReducer(AllreduceSumReducer sum)
      : sum_(std::move(sum)) {}

  AllreduceSumReducer sum_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_RANK_AVERAGE_REDUCER_H_
