// `global_count`: the effective-batch rule. Rank r weighs each of its valid
// slots 1/|A|, A = the update's valid slots on ALL ranks (known from the
// epoch plan, so no communication), so with a SUM reducer the update's
// gradient is the one-worker gradient of the mean loss over A.
//
// Thread safety: immutable; Weights() is safe to call concurrently.
#ifndef RECEIPT_PARITY_WEIGHTING_GLOBAL_COUNT_WEIGHTING_H_
#define RECEIPT_PARITY_WEIGHTING_GLOBAL_COUNT_WEIGHTING_H_

#include <vector>

#include "weighting/loss_weighting.h"

namespace receipt_parity {

class GlobalCountWeighting : public LossWeighting {
 public:
  static constexpr char kName[] = "global_count";

  // w_i = valid_i / |A|; all zeros when |A| = 0.
  std::vector<double> Weights(const UpdateComposition& update,
                              int rank) const override;
  bool split_independent() const override { return true; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_GLOBAL_COUNT_WEIGHTING_H_
