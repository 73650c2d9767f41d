// Counting the accepted (valid) slots of an update, for the weighting
// plugins. Header only; no LibTorch.
#ifndef RECEIPT_PARITY_WEIGHTING_ACCEPTED_COUNT_H_
#define RECEIPT_PARITY_WEIGHTING_ACCEPTED_COUNT_H_

#include <cstdint>
#include <vector>

#include "weighting/loss_weighting.h"

namespace receipt_parity {

// Valid slots among `slots`.
inline int64_t AcceptedCount(const std::vector<WeightedSlot>& slots) {
  int64_t count = 0;
  for (const WeightedSlot& slot : slots) count += slot.valid ? 1 : 0;
  return count;
}

// |A|: valid slots of the update on all ranks.
inline int64_t GlobalAcceptedCount(const UpdateComposition& update) {
  int64_t count = 0;
  for (const auto& slots : update.by_rank) count += AcceptedCount(slots);
  return count;
}

// Every valid slot of `slots` weighs `weight`, every masked slot 0.
inline std::vector<double> UniformWeights(
    const std::vector<WeightedSlot>& slots, double weight) {
  std::vector<double> weights(slots.size(), 0.0);
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].valid) weights[i] = weight;
  }
  return weights;
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_ACCEPTED_COUNT_H_
