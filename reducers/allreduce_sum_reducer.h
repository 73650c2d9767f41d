// `allreduce_sum`: gradients in persistent flat buckets of at most
// `bucket_cap_bytes` (consecutive gradients of one dtype; a gradient larger
// than the cap is a bucket of its own; reducers/gradient_buckets.h), ONE
// c10d all-reduce SUM per bucket, in place. With `global_count` weighting
// this gives every rank the one-worker gradient of the update (the
// effective-batch rule).
//
// With overlap_backward (the default) StartBucket issues the all-reduce
// asynchronously and FinishBuckets waits for all, so buckets that are ready
// are reduced while the backward pass computes the rest. Two ranks' SUM is
// one IEEE addition per element whenever it runs, so the result is bitwise
// the same as without overlap.
//
// Thread safety: one reducer per rank; its calls must not run concurrently
// (GradientBuckets serialises its hooks' calls).
#ifndef RECEIPT_PARITY_REDUCERS_ALLREDUCE_SUM_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_ALLREDUCE_SUM_REDUCER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {

// The name of allreduce_sum without overlap under which configs chose MPI
// before backend "mpi" existed (reducers/mpi_allreduce_registration.cc): a
// config naming it runs on backend "mpi" (config/config_loader.h). Kept:
// plugin names are written into manifests.
inline constexpr char kMpiAllreduceName[] = "mpi_allreduce";

class AllreduceSumReducer : public GradientReducer {
 public:
  static constexpr char kName[] = "allreduce_sum";

  // bucket_cap_bytes 0 means kDefaultBucketCapBytes; negative is
  // InvalidArgument naming `bucket_cap_bytes`.
  static absl::StatusOr<AllreduceSumReducer> Create(int64_t bucket_cap_bytes,
                                                    bool overlap_backward = true);

  // PlanBuckets(gradients, bucket_cap_bytes()).
  std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const override;
  // One all-reduce SUM of `flat`, waited for. Zero gradients take part like
  // any others.
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
  // The all-reduce issued, not waited for (overlap_backward), else
  // ReduceBucket.
  absl::Status StartBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
  absl::Status FinishBuckets() override;
  bool overlaps_backward() const override { return overlap_backward_; }
  bool world_size_independent() const override { return true; }
  ReduceStats stats() const override { return stats_; }

  int64_t bucket_cap_bytes() const { return bucket_cap_bytes_; }

 private:
  AllreduceSumReducer(int64_t bucket_cap_bytes, bool overlap_backward)
      : bucket_cap_bytes_(bucket_cap_bytes), overlap_backward_(overlap_backward) {}

  // Issues the all-reduce of `flat`; counts it. Throws what c10d throws.
  c10::intrusive_ptr<c10d::Work> Issue(at::Tensor& flat, c10d::ProcessGroup& group);

  int64_t bucket_cap_bytes_;
  bool overlap_backward_;
  ReduceStats stats_;
  // Started, not finished: the work and its bucket's bytes.
  std::vector<std::pair<c10::intrusive_ptr<c10d::Work>, int64_t>> in_flight_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_ALLREDUCE_SUM_REDUCER_H_
