// `micro_batch_mean`: each micro-batch's own mean, divided by the number of
// micro-batches and by the world size: w_i = valid_i / (|M| * k * W) with M
// the valid slots of i's micro-batch on its rank, k the micro-batches per
// rank (accumulation_steps) and W the ranks. This is the loss gradient
// accumulation computes under DDP's averaging (each micro-batch's mean loss
// divided by the accumulation steps, then the ranks' gradients averaged),
// written as weights for a SUM reducer. It equals the effective-batch rule
// only when every micro-batch on every rank holds as many valid examples;
// on a masked tail it does not. Kept to demonstrate that error (the mistake
// Hugging Face transformers fixed in 2024).
//
// Thread safety: immutable; Weights() is safe to call concurrently.
#ifndef RECEIPT_PARITY_WEIGHTING_MICRO_BATCH_MEAN_WEIGHTING_H_
#define RECEIPT_PARITY_WEIGHTING_MICRO_BATCH_MEAN_WEIGHTING_H_

#include <vector>

#include "weighting/loss_weighting.h"

namespace receipt_parity {

class MicroBatchMeanWeighting : public LossWeighting {
 public:
  static constexpr char kName[] = "micro_batch_mean";

  // As above; a micro-batch without valid slots weighs nothing.
  std::vector<double> Weights(const UpdateComposition& update,
                              int rank) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_MICRO_BATCH_MEAN_WEIGHTING_H_
