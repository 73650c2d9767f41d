// The `none` metric dedup plugin: every gathered prediction is counted,
// duplicates included. This is the naive count a data-parallel run makes
// when it sums per-rank counts; it is kept to show how padded duplicates
// inflate class support (compare with `by_receipt_id`).
//
// Thread safety: immutable; Dedup() may be called concurrently.
#ifndef RECEIPT_PARITY_METRICS_NONE_DEDUP_H_
#define RECEIPT_PARITY_METRICS_NONE_DEDUP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"

namespace receipt_parity {

class NoneDedup : public MetricDedup {
 public:
  static constexpr char kName[] = "none";

  // `counted`: all of `gathered`, sorted by (receipt id, rank, slot);
  // duplicates_dropped is 0. Never fails.
  absl::StatusOr<DedupResult> Dedup(
      const std::vector<Prediction>& gathered) const override;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_NONE_DEDUP_H_
