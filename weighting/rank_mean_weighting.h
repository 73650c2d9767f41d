// `rank_mean`: each rank's own mean, w_i = valid_i / |A_r| with A_r this
// rank's valid slots (0 for a rank without any). This is what plain DDP
// averaging assumes; with a SUM reducer the weights of an update sum to the
// number of non-empty ranks, and with an averaging reducer the result
// equals the one-worker gradient only when every rank holds the same count.
// Kept to demonstrate that error.
//
// Thread safety: immutable; Weights() is safe to call concurrently.
#ifndef RECEIPT_PARITY_WEIGHTING_RANK_MEAN_WEIGHTING_H_
#define RECEIPT_PARITY_WEIGHTING_RANK_MEAN_WEIGHTING_H_

#include <vector>

#include "weighting/loss_weighting.h"

namespace receipt_parity {

class RankMeanWeighting : public LossWeighting {
 public:
  static constexpr char kName[] = "rank_mean";

  // w_i = valid_i / |A_rank|; all zeros when |A_rank| = 0.
  std::vector<double> Weights(const UpdateComposition& update,
                              int rank) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_RANK_MEAN_WEIGHTING_H_
