// Loss weighting plugins: per-example weights of one update.
//
// Rank r's loss for an update is sum_i w_i * loss_i over its slots, and the
// reducer SUMS the ranks' gradients. The effective-batch rule: with A the
// valid slots of the update on ALL ranks, `global_count` gives
// w_i = 1/|A| for valid slots, so the reduced gradient equals the
// one-worker gradient of the mean loss over A. Masked slots always weigh 0.
//
// Every input comes from the epoch plan, which every rank holds: weighting
// costs no communication.
//
// Built-ins: global_count, rank_mean (each rank's own mean: plain DDP
// averaging, kept to demonstrate the error), class_balanced.
#ifndef RECEIPT_PARITY_WEIGHTING_LOSS_WEIGHTING_H_
#define RECEIPT_PARITY_WEIGHTING_LOSS_WEIGHTING_H_

#include <cstdint>
#include <vector>

namespace receipt_parity {

struct WeightedSlot {
  int label = 0;
  bool valid = true;
  // Its micro-batch on its rank (samplers/micro_batches.h); 0 without
  // gradient accumulation.
  int micro_batch = 0;
};

// One update as every rank sees it.
struct UpdateComposition {
  // by_rank[r]: rank r's slots of this update, in slot order.
  std::vector<std::vector<WeightedSlot>> by_rank;
  // Training-set examples per class (for class_balanced).
  std::vector<int64_t> class_counts;
  // Micro-batches per rank in the update (accumulation_steps; 1 without).
  int micro_batches = 1;
};

class LossWeighting {
 public:
  static constexpr char kKind[] = "loss_weighting";
  virtual ~LossWeighting() = default;

  // Weights of `rank`'s slots of the update, in slot order (size
  // update.by_rank[rank].size()). Masked slots get 0. A rank without valid
  // slots gets all zeros; an update without any valid slot gets all zeros.
  // REQUIRES: 0 <= rank < update.by_rank.size().
  virtual std::vector<double> Weights(const UpdateComposition& update,
                                      int rank) const = 0;

  // Whether a slot's weight depends only on the update's valid slots as a
  // whole, never on how they are split over ranks and micro-batches: then
  // the update's weighted loss is the same at any world size. False unless
  // a plugin says so (rank_mean and micro_batch_mean weigh by the split).
  virtual bool split_independent() const { return false; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_LOSS_WEIGHTING_H_
