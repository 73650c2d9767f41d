// `mpi_allreduce`: allreduce_sum's buckets (PlanBuckets over the persistent
// flat buckets of reducers/gradient_buckets.h), each reduced in place by ONE
// MPI_Allreduce(MPI_IN_PLACE, ..., MPI_SUM) over MPI_COMM_WORLD (OpenMPI;
// over shared memory on one host): nothing is concatenated or copied back.
// Buckets are reduced after the backward pass (MPI's blocking collective;
// no overlap). The c10d group passed to ReduceBucket is not used for the
// gradients (only its size is checked against MPI's world).
//
// Ranks must be started by mpirun (outside, or `run { launcher: "mpirun" }`)
// and MPI started (runtime/mpi_world.h) before the first Reduce; creating
// the reducer needs no MPI (a one-worker reference never reduces).
//
// Bitwise: with two ranks each element is one IEEE addition a+b, which is
// commutative, so the result equals allreduce_sum's over Gloo bit for bit
// and is the same on both ranks. With N > 2 ranks MPI_SUM's association
// order is OpenMPI's choice (it depends on the algorithm and message size
// picked by the `tuned` collective component), so results are deterministic
// for a fixed N, message size and OpenMPI configuration, the same on every
// rank (MPI_Allreduce gives every rank the same result), but not
// necessarily bitwise equal to Gloo's ring order.
//
// Thread safety: one reducer per rank; Reduce() and stats() must not be
// called concurrently on one object.
#ifndef RECEIPT_PARITY_REDUCERS_MPI_ALLREDUCE_H_
#define RECEIPT_PARITY_REDUCERS_MPI_ALLREDUCE_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {

// Replaces `flat_bucket` on every rank with the element-wise SUM over all
// ranks of MPI_COMM_WORLD, in place (MPI_IN_PLACE). Every rank calls it
// with a buffer of the same size and dtype. Errors: FailedPrecondition when
// MPI is not running; InvalidArgument for a tensor that is undefined, not
// on the CPU, not contiguous, or not float32/float64 (checked before any
// communication); Internal with MPI's message when MPI_Allreduce fails.
absl::Status MpiAllreduceSumInPlace(at::Tensor& flat_bucket);

class MpiAllreduceReducer : public GradientReducer {
 public:
  static constexpr char kName[] = "mpi_allreduce";

  // bucket_cap_bytes 0 means kDefaultBucketCapBytes; negative is
  // InvalidArgument naming `bucket_cap_bytes`.
  static absl::StatusOr<MpiAllreduceReducer> Create(int64_t bucket_cap_bytes);

  // PlanBuckets(gradients, bucket_cap_bytes()): allreduce_sum's buckets.
  std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const override;
  // As GradientReducer::ReduceBucket, over MPI (MpiAllreduceSumInPlace).
  // Also FailedPrecondition when `group`'s size is not MPI's world size.
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
  ReduceStats stats() const override { return stats_; }

  int64_t bucket_cap_bytes() const { return bucket_cap_bytes_; }

 private:
  explicit MpiAllreduceReducer(int64_t bucket_cap_bytes)
      : bucket_cap_bytes_(bucket_cap_bytes) {}

  int64_t bucket_cap_bytes_;
  ReduceStats stats_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_MPI_ALLREDUCE_H_
