// Metric dedup plugins: how gathered validation predictions become the
// predictions that metrics count.
//
// Built-ins: by_receipt_id (each identity counted once; duplicates that
// disagree are an error), none (every prediction counted: the naive
// inflation, kept to show it).
#ifndef RECEIPT_PARITY_METRICS_METRIC_DEDUP_H_
#define RECEIPT_PARITY_METRICS_METRIC_DEDUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

struct Prediction {
  std::string receipt_id;
  int predicted = 0;
  int label = 0;
  // Where it came from, for error messages and reports.
  int rank = 0;
  int64_t slot = 0;
};

struct DedupResult {
  // In a deterministic order (sorted by receipt id, then rank, then slot).
  std::vector<Prediction> counted;
  int64_t duplicates_dropped = 0;
};

class MetricDedup {
 public:
  static constexpr char kKind[] = "metric_dedup";
  virtual ~MetricDedup() = default;

  // `gathered`: every rank's predictions, in any order.
  // FailedPrecondition when duplicates of one receipt id disagree (the
  // message names the id, ranks and slots).
  virtual absl::StatusOr<DedupResult> Dedup(
      const std::vector<Prediction>& gathered) const = 0;

  // How a validation pass of `predictions` predictions in all (every
  // rank's) brings them together for this plugin: 0 = gathered on every
  // rank and given to Dedup(); N > 0 = by the sorted streaming merge
  // (metrics/sorted_stream_merge.h) in chunks of N, which applies
  // by_receipt_id's rule (the first copy of each id in (rank, slot) order
  // counted, disagreeing copies refused), so only a plugin whose Dedup()
  // is that rule may return N > 0.
  virtual int64_t StreamedMergeChunk(int64_t predictions) const {
    (void)predictions;
    return 0;
  }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_METRIC_DEDUP_H_
