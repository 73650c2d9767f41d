// `allreduce_sum`: gradients flattened, in order, into buckets of at most
// `bucket_cap_bytes` (consecutive gradients of one dtype; a gradient larger
// than the cap is a bucket of its own), ONE c10d all-reduce SUM per bucket,
// results copied back. With `global_count` weighting this gives every rank
// the one-worker gradient of the update (the effective-batch rule).
//
// Thread safety: one reducer per rank; Reduce() and stats() must not be
// called concurrently on one object.
#ifndef RECEIPT_PARITY_REDUCERS_ALLREDUCE_SUM_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_ALLREDUCE_SUM_REDUCER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {

// Gradients [begin, end) of the list are flattened into one buffer.
struct GradientBucket {
  int begin = 0;
  int end = 0;
  int64_t bytes = 0;
};

// The buckets of `grads` under `bucket_cap_bytes`, in order. Deterministic
// in the gradients' shapes and dtypes only, so every rank plans the same
// buckets. REQUIRES: bucket_cap_bytes > 0, every tensor defined.
std::vector<GradientBucket> PlanBuckets(const std::vector<at::Tensor>& grads,
                                        int64_t bucket_cap_bytes);

class AllreduceSumReducer : public GradientReducer {
 public:
  static constexpr char kName[] = "allreduce_sum";
  static constexpr int64_t kDefaultBucketCapBytes = int64_t{25} << 20;

  // bucket_cap_bytes 0 means kDefaultBucketCapBytes; negative is
  // InvalidArgument naming `bucket_cap_bytes`.
  static absl::StatusOr<AllreduceSumReducer> Create(int64_t bucket_cap_bytes);

  // As GradientReducer::Reduce. Also InvalidArgument for an undefined
  // gradient or gradients on different devices (checked before any
  // collective; every rank must get the same answer, so pass consistent
  // lists). Zero gradients take part like any others; buckets without
  // elements (an empty list, empty tensors) run no collective.
  absl::Status Reduce(std::vector<at::Tensor>& grads,
                      c10d::ProcessGroup& group) override;
  ReduceStats stats() const override { return stats_; }

  int64_t bucket_cap_bytes() const { return bucket_cap_bytes_; }

 private:
  explicit AllreduceSumReducer(int64_t bucket_cap_bytes)
      : bucket_cap_bytes_(bucket_cap_bytes) {}

  int64_t bucket_cap_bytes_;
  ReduceStats stats_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_ALLREDUCE_SUM_REDUCER_H_
