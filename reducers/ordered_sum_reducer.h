// `ordered_sum`: the ordered reduction mode, parameters bitwise the same at
// any world size (docs/design.md, "World size").
//
// Every update's gradient is the sum, in one fixed order, of the gradients
// of fixed chunks of the global batch: chunk k is the update's slots
// [k*C, (k+1)*C) in the plan's global order (C = chunk_slots), computed
// alone, as one forward and backward, by the rank that holds it
// (trainer/update_step.h). The update's gradient is the chunk rows added
// along one fixed binary tree whose shape depends on the number of rows
// only (reducers/chunk_tree.h), each node the float sum of its two
// children. SumChunks, on every rank:
//   1. adds the maximal subtrees inside the rows it computed (one when its
//      share is a node of the tree, as for equal shares of a power-of-two
//      number of chunks a rank; O(log K) otherwise);
//   2. an all-to-all: piece s (1/W of the elements) of those sums to rank
//      s; rank s adds the tree's nodes above every rank's subtrees, in the
//      tree's order, for its piece;
//   3. an all-gather of the pieces.
// On two ranks steps 2 and 3 are one all-gather of both ranks' subtree
// sums, the nodes above them added on each rank (the same bytes on the
// wire, one collective instead of two); when each rank holds one subtree
// and the two are the root's children, one all-reduce SUM of them: the
// root is then one addition per element, and IEEE addition is
// commutative, so the collective's sum is the tree's bit for bit.
// Otherwise the collectives move bits without adding them; every node is added from
// the same two operands wherever it is added, so the total is the tree's
// sum of the rows, bit for bit, at every world size whose split keeps each
// chunk on one rank (config/config_loader.h refuses the others), and so
// are the parameters after any number of updates.
//
// Through the buckets (BeginChunkBuckets, StartBucket, FinishBuckets; the
// trainer's way on a group): the same steps for each bucket's elements,
// started as soon as the last chunk's backward has the bucket's gradients,
// so the reduction overlaps the rest of that backward as allreduce_sum's
// does; the elements after the gradients (the every-update reports'
// rider) are the ranks' values added in rank order, exact for values that
// only one rank writes. When a rank holds one subtree of two rows and
// computes both, the trainer accumulates the second chunk's backward into
// the first one's gradients in the buckets (autograd's in-place add is the
// node's one addition per element), and the buckets hold that subtree's
// sum: nothing of the rows is copied or added here. The tree works element by element, so a bucket's
// elements summed alone have the bits of the whole row summed at once.
//
// Cost: with one subtree a rank, the all-to-all and the all-gather carry
// what a ring all-reduce carries (2 (W - 1) / W of the gradient a rank);
// stats().bytes counts the subtree sums a rank puts into the reduction
// (the gradient's bytes times its subtrees, and a rider's), as
// allreduce_sum counts its buckets. A rank computes its chunks' forwards
// and backwards alone, C slots each, instead of one over its share
// (bench/README.md gives the measured figures).
//
// Thread safety: one reducer per rank; its calls must not run concurrently
// (StartBucket may come from autograd's thread while the caller waits in
// the backward).
#ifndef RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "absl/status/statusor.h"
#include "reducers/chunk_tree.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {

class OrderedSumReducer : public GradientReducer {
 public:
  static constexpr char kName[] = "ordered_sum";

  // InvalidArgument naming chunk_slots unless chunk_slots >= 1, naming
  // bucket_cap_bytes when it is negative (0: the default cap).
  static absl::StatusOr<OrderedSumReducer> Create(int chunk_slots, int64_t bucket_cap_bytes = 0);

  std::vector<GradientBucket> PlanBuckets(const std::vector<at::Tensor>& gradients) const override;
  // Unimplemented: a bucket alone is not the ordered sum (BeginChunkBuckets).
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
  // As GradientReducer's ordered mode. FailedPrecondition without a
  // BeginChunkBuckets since the last FinishBuckets; InvalidArgument for
  // row bounds that are not the group's, or a buckets' node that is neither
  // one of this rank's rows nor a subtree it holds (at the first bucket);
  // the collectives' errors.
  absl::Status BeginChunkBuckets(const at::Tensor& rows, ChunkTreeNode buckets_node,
                                 absl::Span<const int64_t> row_bounds) override;
  absl::Status StartBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
  absl::Status FinishBuckets() override;
  bool overlaps_backward() const override { return true; }
  bool world_size_independent() const override { return true; }
  int chunk_slots() const override { return chunk_slots_; }
  // As GradientReducer::SumChunks. REQUIRES: chunks is 2-D, contiguous.
  // Errors: InvalidArgument for row bounds that are not the group's
  // ascending bounds from 0 to K; the collectives' and LibTorch's
  // (CollectiveErrorToStatus).
  absl::StatusOr<at::Tensor> SumChunks(at::Tensor& chunks, absl::Span<const int64_t> row_bounds,
                                       c10d::ProcessGroup* group) override;
  ReduceStats stats() const override { return stats_; }

 private:
  // One stretch of elements in flight: their tree sum goes to out[0, len),
  // the ranks' tails added in rank order to out[len, len + tail).
  struct InFlight {
    at::Tensor out;
    int64_t len = 0;
    int64_t tail = 0;
    c10::intrusive_ptr<c10d::Work> work;
    // Two ranks: the all-gather's per-rank outputs. More: the all-to-all's
    // output, then the all-gather's.
    std::vector<at::Tensor> received;
    at::Tensor own_tail;  // more than two ranks: kept for the all-gather
    // Two ranks whose subtrees are the root's children: the all-reduced
    // [root sum, tail], or undefined.
    at::Tensor all_reduced;
  };

  OrderedSumReducer(int chunk_slots, int64_t bucket_cap_bytes)
      : chunk_slots_(chunk_slots), bucket_cap_bytes_(bucket_cap_bytes) {}

  // Starts the sum of `rows` (this rank's rows of the elements, `len`
  // each) and `tail` (this rank's values summed in rank order) into `out`.
  // Throws the collective's and LibTorch's errors.
  void Start(const std::vector<at::Tensor>& rows, int64_t len, const at::Tensor& tail,
             at::Tensor out, c10d::ProcessGroup& group);
  // The buffer `slot` of the `stretch`-th stretch of a reduction, of
  // `numel` elements: kept from one update to the next (a fresh large
  // tensor each update costs its pages again).
  at::Tensor Buffer(size_t stretch, int slot, int64_t numel, const at::TensorOptions& options);
  // Every stretch in flight summed into its `out`, in the order started.
  // Throws as Start.
  void FinishAll();
  void FinishTwoRanks(InFlight& stretch);
  // More than two ranks: the all-to-all waited for, this rank's piece of
  // the tree added, its all-gather started; then FinishGathered.
  void StartGather(InFlight& stretch);
  void FinishGathered(InFlight& stretch);
  // Every rank's subtree roots, in row order (the tree's leaves covered
  // once, left to right).
  std::vector<ChunkTreeNode> RootsInRowOrder() const;
  // Whether `node` is what the buckets hold (buckets_node_) and `stretch` a
  // whole bucket ([gradients, tail]): the bucket itself is then its sum.
  bool IsTheBucket(ChunkTreeNode node, const InFlight& stretch) const;
  // The sum of `node`, one of this rank's subtrees, into `out`: the
  // buckets' piece itself (rows[buckets_node_.lo - first_row_]) when the
  // buckets hold it; else its rows added along the tree.
  void OwnSubtreeInto(const std::vector<at::Tensor>& rows, ChunkTreeNode node,
                      at::Tensor out) const;
  // OkStatus when buckets_node_ is none, one of this rank's rows or one of
  // its subtrees; else InvalidArgument.
  absl::Status CheckBucketsNode() const;
  // The most subtrees any rank holds.
  int64_t MostHeld() const;
  // Two ranks, one subtree each, the root's two children: the whole sum is
  // one addition per element, r0 + r1, which an all-reduce SUM gives bit
  // for bit (IEEE addition is commutative; a sum of two terms has one
  // rounding, whichever rank adds).
  bool RootOfTwoSubtrees() const;
  // Then: one all-reduce SUM of [this rank's subtree sum, its tail] into
  // `stretch`. Throws as Start.
  void StartAllReduce(const std::vector<at::Tensor>& rows, const at::Tensor& tail,
                      c10d::ProcessGroup& group, size_t ordinal, InFlight& stretch);

  int chunk_slots_;
  int64_t bucket_cap_bytes_;
  ReduceStats stats_;
  // Set by BeginChunkBuckets (or SumChunks) for one reduction.
  at::Tensor rows_;
  ChunkTreeNode buckets_node_;
  int64_t total_rows_ = 0;
  int64_t first_row_ = 0;
  int64_t next_element_ = 0;
  bool begun_ = false;
  int rank_ = 0;
  int world_ = 1;
  std::vector<int64_t> row_bounds_;
  // Every rank's subtrees, by rank.
  std::vector<std::vector<ChunkTreeNode>> held_;
  std::vector<InFlight> in_flight_;
  // Buffer()'s, by stretch and slot.
  std::vector<std::vector<at::Tensor>> buffers_;
  c10d::ProcessGroup* group_ = nullptr;
  double start_seconds_ = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_
