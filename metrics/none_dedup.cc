#include "metrics/none_dedup.h"

#include "metrics/first_per_receipt.h"

namespace receipt_parity {

absl::StatusOr<DedupResult> NoneDedup::Dedup(
    const std::vector<Prediction>& gathered) const {
  DedupResult result;
  result.counted = gathered;
  SortPredictions(&result.counted);
  return result;
}

}  // namespace receipt_parity
