// Reducer plugins: how gradients cross ranks, over a c10d ProcessGroup.
//
// Nothing here reimplements a collective: a reducer chooses how gradients
// are grouped (buckets), which c10d collective runs, and any scaling.
//
// Built-ins: allreduce_sum (flattened buckets, one all-reduce SUM per
// bucket), rank_average (DDP-style: SUM then divide by world size).
#ifndef RECEIPT_PARITY_REDUCERS_GRADIENT_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_GRADIENT_REDUCER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace receipt_parity {

struct ReduceStats {
  int64_t collectives = 0;
  int64_t bytes = 0;
  // Wall time inside collectives (waiting included).
  double seconds = 0;
};

class GradientReducer {
 public:
  static constexpr char kKind[] = "reducer";
  virtual ~GradientReducer() = default;

  // Replaces every rank's `grads` in place with the reduced gradients.
  // Every rank of `group` must call it with tensors of the same shapes and
  // dtypes in the same order; a rank without accepted examples passes zero
  // gradients and still takes part. c10d exceptions (a peer died, a
  // timeout) come back as Unavailable/DeadlineExceeded/Internal.
  // REQUIRES: grads are defined, contiguous, on the same device.
  virtual absl::Status Reduce(std::vector<at::Tensor>& grads,
                              c10d::ProcessGroup& group) = 0;

  // Totals since construction.
  virtual ReduceStats stats() const = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_GRADIENT_REDUCER_H_
