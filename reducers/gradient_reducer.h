// Reducer plugins: how gradients cross ranks, over a c10d ProcessGroup.
//
// Nothing here reimplements a collective: a reducer chooses how gradients
// are grouped (buckets), which c10d collective runs, and any scaling.
//
// The gradients live in persistent flat buckets (reducers/gradient_buckets.h,
// DDP's gradient_as_bucket_view): one contiguous tensor per bucket,
// allocated once, every parameter's .grad a view into it. A reducer only
// ever sees one flat bucket and reduces it IN PLACE; nothing is
// concatenated or copied back per update. A reducer is, at its core,
// "reduce this flat contiguous buffer in place" (ReduceBucket).
//
// Per update the trainer calls, on every rank, in the same order:
//   StartBucket(flat_0), StartBucket(flat_1), ... (bucket order, possibly
//     from inside the backward pass as buckets become ready, when
//     overlaps_backward() says so)
//   FinishBuckets()   every started bucket reduced; only then the step.
//
// Built-ins: allreduce_sum (one all-reduce SUM per bucket, asynchronous,
// overlapping the backward pass), rank_average (DDP-style: SUM then divide
// by world size).
#ifndef RECEIPT_PARITY_REDUCERS_GRADIENT_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_GRADIENT_REDUCER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "reducers/chunk_tree.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace receipt_parity {

struct ReduceStats {
  int64_t collectives = 0;
  int64_t bytes = 0;
  // Wall time inside collectives (waiting included). For collectives
  // started asynchronously: the time spent waiting for them.
  double seconds = 0;
};

// Tensors [begin, end) of a list share one flat buffer of `bytes`.
struct GradientBucket {
  int begin = 0;
  int end = 0;
  int64_t bytes = 0;
};

// The buckets of `tensors` under `bucket_cap_bytes`, in order: consecutive
// tensors of one dtype; a tensor larger than the cap is a bucket of its
// own. Deterministic in the tensors' shapes and dtypes only, so every rank
// plans the same buckets. REQUIRES: bucket_cap_bytes > 0, every tensor
// defined.
std::vector<GradientBucket> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                        int64_t bucket_cap_bytes);

// A reducer option `bucket_cap_bytes` as the cap PlanBuckets takes: 0 means
// GradientReducer::kDefaultBucketCapBytes; negative is InvalidArgument
// naming `bucket_cap_bytes`.
absl::StatusOr<int64_t> BucketCapBytes(int64_t bucket_cap_bytes);

class GradientReducer {
 public:
  static constexpr char kKind[] = "reducer";
  // The bucket cap of PlanBuckets' default (DDP's bucket_cap_mb).
  static constexpr int64_t kDefaultBucketCapBytes = int64_t{25} << 20;

  virtual ~GradientReducer() = default;

  // The buckets this reducer wants over `gradients` (given in the order the
  // trainer lays them out: the order backward produces them). Called once,
  // before the first update; must depend on shapes and dtypes only, and a
  // bucket must hold one dtype. Default: PlanBuckets(gradients,
  // kDefaultBucketCapBytes).
  virtual std::vector<GradientBucket> PlanBuckets(
      const std::vector<at::Tensor>& gradients) const;

  // Replaces `flat` (one bucket: contiguous, 1-D, one dtype) in place with
  // its reduction over the ranks of `group`. Every rank of `group` calls it
  // with buckets of the same size and dtype in the same order; a rank
  // without accepted examples passes zeros and still takes part. c10d
  // exceptions (a peer died, a timeout) come back as
  // Unavailable/DeadlineExceeded/Internal.
  virtual absl::Status ReduceBucket(at::Tensor& flat,
                                    c10d::ProcessGroup& group) = 0;

  // Begins reducing `flat` in place; it may still be in flight on return,
  // and `flat` must not be touched until FinishBuckets() returns. Every rank
  // starts the same buckets in the same order. Default: ReduceBucket (done
  // on return).
  virtual absl::Status StartBucket(at::Tensor& flat, c10d::ProcessGroup& group) {
    return ReduceBucket(flat, group);
  }

  // Waits until every bucket started since the last call is reduced, then
  // forgets them. Errors as ReduceBucket. Default: nothing in flight.
  virtual absl::Status FinishBuckets() { return absl::OkStatus(); }

  // Whether the trainer should start each bucket from inside the backward
  // pass, as soon as its gradients are computed (in bucket order).
  virtual bool overlaps_backward() const { return false; }

  // Whether the reduced gradient is the ranks' SUM, whatever the number of
  // ranks: then, with a split-independent loss weighting, an update's
  // gradient does not depend on the world size (up to the order of the
  // additions). False unless a reducer says so (rank_average divides by
  // the world size).
  virtual bool world_size_independent() const { return false; }

  // What this reducer promises its result is: the ranks' contributions
  // (each rank's gradient as its backward passes left it) summed, then
  // divided by this, for a group of `world_size` ranks. The every-update
  // reduction check (verify/update_checks.h) holds every update to it, and
  // the accounting weighs each example by its loss weight over it.
  // Default 1: the sum (rank_average says world_size: the mean).
  virtual int reduced_divisor(int /*world_size*/) const { return 1; }

  // The ordered reduction mode (reducers/ordered_sum_reducer.h): the slots
  // of one chunk when this reducer sums the gradients of fixed chunks of
  // the global batch in one fixed order, or 0 (every other reducer) when it
  // reduces each rank's summed gradient through the buckets above. With
  // C > 0 the trainer computes every chunk of C slots alone and calls
  // SumChunks once per update instead of the bucket calls.
  virtual int chunk_slots() const { return 0; }

  // Ordered mode only. `chunks` is [K, n] (K chunks of the global batch, n
  // gradient elements): row k is the flattened gradient of the update's
  // chunk k where this rank computed it, zeros elsewhere. Rank r computed
  // the rows [row_bounds[r], row_bounds[r + 1]) (world size + 1 bounds,
  // from 0 to K: each rank's share is a contiguous run of whole chunks;
  // rows past the update's last slot are zeros on every rank and count as
  // their rank's). `group` is nullptr on one rank (row_bounds {0, K}).
  // Returns the update's gradient [n], the same bits on every rank and at
  // every world size; `chunks` may be overwritten. Default: Unimplemented.
  virtual absl::StatusOr<at::Tensor> SumChunks(at::Tensor& chunks,
                                               absl::Span<const int64_t> row_bounds,
                                               c10d::ProcessGroup* group);

  // Ordered mode on a group, through the buckets: the reduction starts
  // bucket by bucket inside the backward of the last chunk this rank
  // computes, and the every-update reports ride in the last bucket. Once
  // per update, before that backward, the trainer calls
  //   BeginChunkBuckets(rows, buckets_node, row_bounds)
  // `rows` ([R, n], R = row_bounds[rank + 1] - row_bounds[rank]) holds this
  // rank's chunk rows in the buckets' layout (n: the buckets' gradients
  // laid end to end, no rider), the rows it computed already, zeros for the
  // rows it computes none of. `buckets_node` (rows of the whole tree,
  // reducers/chunk_tree.h) is what the buckets will hold when they start:
  // one of this rank's rows; or one of the subtrees this rank holds
  // (HeldSubtrees), its rows' tree sum, which the trainer made (two chunks
  // accumulated into the same gradients are their node's sum), and then
  // `rows` is not read for that node's rows; or none (lo == hi: the rank
  // computes no chunk and its buckets hold zeros). Then StartBucket(flat)
  // for every bucket in order (each copies its gradients into that row)
  // and FinishBuckets(): every bucket's gradients hold the update's
  // gradient for their elements, SumChunks' bits, and a rider (the last
  // bucket's values after the gradients) the ranks' riders summed in rank
  // order. `rows` must live, unchanged but for those copies, until
  // FinishBuckets() returns. Default: Unimplemented.
  virtual absl::Status BeginChunkBuckets(const at::Tensor& rows, ChunkTreeNode buckets_node,
                                         absl::Span<const int64_t> row_bounds);

  // Totals since construction.
  virtual ReduceStats stats() const = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_GRADIENT_REDUCER_H_
