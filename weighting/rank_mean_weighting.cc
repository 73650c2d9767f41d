#include "weighting/rank_mean_weighting.h"

#include "logging/glog.h"

#include "weighting/accepted_count.h"

namespace receipt_parity {

std::vector<double> RankMeanWeighting::Weights(const UpdateComposition& update,
                                               int rank) const {
  CHECK(rank >= 0 && rank < static_cast<int>(update.by_rank.size()))
      << "rank_mean: rank " << rank << " of " << update.by_rank.size();
  const std::vector<WeightedSlot>& slots = update.by_rank[rank];
  const int64_t accepted = AcceptedCount(slots);
  if (accepted == 0) return std::vector<double>(slots.size(), 0.0);
  return UniformWeights(slots, 1.0 / static_cast<double>(accepted));
}

}  // namespace receipt_parity
