// `ordered_sum`: the ordered reduction mode, parameters bitwise the same at
// any world size (docs/design.md, "World size").
//
// Every update's gradient is the sum, in one fixed order, of the gradients
// of fixed chunks of the global batch: chunk k is the update's slots
// [k*C, (k+1)*C) in the plan's global order (C = chunk_slots), computed
// alone, as one forward and backward, by the rank that holds it
// (trainer/update_step.h). SumChunks then, on every rank:
//   1. one all-reduce SUM over the [K, n] matrix of chunk gradients, in
//      which each rank filled its own rows and left the others zero: x + 0
//      is x, so the all-reduce moves the rows without rounding them;
//   2. adds 0 to every element, so a -0 becomes +0 as the all-reduce makes
//      it on two ranks or more (on one rank there is no all-reduce);
//   3. adds the rows in chunk order 0, 1, ..., K-1.
// A chunk's gradient does not depend on which rank computed it (the same
// parameters, slots, weights and kernels), and the sum does not depend on
// the number of ranks, so the parameters after any number of updates are
// bitwise the same at every world size whose split keeps each chunk on one
// rank (config/config_loader.h refuses the others).
//
// Cost: each update moves K rows instead of one gradient (K times
// allreduce_sum's bytes), and computes K forwards and backwards of C slots
// instead of one per rank (bench/README.md gives the measured figures).
//
// Thread safety: one reducer per rank; its calls must not run concurrently.
#ifndef RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_
#define RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_

#include "absl/status/statusor.h"
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
  // Errors: the all-reduce's (CollectiveErrorToStatus); Internal for
  // anything else LibTorch throws.
  absl::StatusOr<at::Tensor> SumChunks(at::Tensor& chunks, c10d::ProcessGroup* group) override;
  ReduceStats stats() const override { return stats_; }

 private:
  explicit OrderedSumReducer(int chunk_slots) : chunk_slots_(chunk_slots) {}

  int chunk_slots_;
  ReduceStats stats_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_ORDERED_SUM_REDUCER_H_
