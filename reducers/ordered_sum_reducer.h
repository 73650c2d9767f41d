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
// wire, one collective instead of two).
// The collectives move bits without adding them; every node is added from
// the same two operands wherever it is added, so the total is the tree's
// sum of the rows, bit for bit, at every world size whose split keeps each
// chunk on one rank (config/config_loader.h refuses the others), and so
// are the parameters after any number of updates.
//
// Cost: with one subtree a rank, the all-to-all and the all-gather carry
// what a ring all-reduce carries (2 (W - 1) / W of the gradient a rank);
// stats().bytes counts the subtree sums a rank puts into the reduction
// (the gradient's bytes times its subtrees), as allreduce_sum counts its
// gradient. A rank computes its chunks' forwards and backwards alone, C
// slots each, instead of one over its share (bench/README.md gives the
// measured figures).
//
// Thread safety: one reducer per rank; its calls must not run concurrently.
#ifndef RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_

#include "absl/status/statusor.h"
#include "reducers/chunk_tree.h"
#include "reducers/gradient_reducer.h"

namespace receipt_parity {

class OrderedSumReducer : public GradientReducer {
 public:
  static constexpr char kName[] = "ordered_sum";

  // InvalidArgument naming chunk_slots unless chunk_slots >= 1.
  static absl::StatusOr<OrderedSumReducer> Create(int chunk_slots);

  // Unimplemented: the trainer calls SumChunks in the ordered mode.
  absl::Status ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) override;
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
  explicit OrderedSumReducer(int chunk_slots) : chunk_slots_(chunk_slots) {}

  // Two ranks: one all-gather of both ranks' subtree sums (padded to the
  // larger count), the tree above them added on each. `own` is this rank's
  // sums of `held[rank]`. Throws the collective's and LibTorch's errors.
  absl::StatusOr<at::Tensor> SumOverTwoRanks(const at::Tensor& chunks,
                                             const std::vector<std::vector<ChunkTreeNode>>& held,
                                             const std::vector<at::Tensor>& own,
                                             c10d::ProcessGroup& group);
  // Three ranks or more: the all-to-all of pieces, each rank adding the
  // tree above every rank's subtrees for its piece, then the all-gather.
  absl::StatusOr<at::Tensor> SumByPieces(const at::Tensor& chunks,
                                         const std::vector<std::vector<ChunkTreeNode>>& held,
                                         const std::vector<at::Tensor>& own,
                                         c10d::ProcessGroup& group);

  int chunk_slots_;
  ReduceStats stats_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_
