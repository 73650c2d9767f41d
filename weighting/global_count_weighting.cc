#include "weighting/global_count_weighting.h"

#include "logging/glog.h"

#include "weighting/accepted_count.h"

namespace receipt_parity {

std::vector<double> GlobalCountWeighting::Weights(
    const UpdateComposition& update, int rank) const {
  CHECK(rank >= 0 && rank < static_cast<int>(update.by_rank.size()))
      << "global_count: rank " << rank << " of " << update.by_rank.size();
  const int64_t accepted = GlobalAcceptedCount(update);
  const std::vector<WeightedSlot>& slots = update.by_rank[rank];
  if (accepted == 0) return std::vector<double>(slots.size(), 0.0);
  return UniformWeights(slots, 1.0 / static_cast<double>(accepted));
}

}  // namespace receipt_parity
