// The `by_receipt_id` metric dedup plugin: every receipt id is counted once,
// whatever number of ranks or slots predicted it (a sampler that pads by
// repeating receipts must not inflate the support of their classes).
//
// Copies of one id must agree on the predicted class and the label; if any
// do not, Dedup() is FailedPrecondition naming each such id and every
// (rank, slot) of it: a disagreement means the replicas differ, and picking
// one would hide it.
//
// Thread safety: immutable; Dedup() may be called concurrently.
#ifndef RECEIPT_PARITY_METRICS_BY_RECEIPT_ID_DEDUP_H_
#define RECEIPT_PARITY_METRICS_BY_RECEIPT_ID_DEDUP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"

namespace receipt_parity {

// How the ranks' predictions come together (ByReceiptIdOptions.merge).
enum class ReceiptMerge { kAuto, kGathered, kStreamed };

struct ReceiptMergeChoice {
  ReceiptMerge merge = ReceiptMerge::kAuto;
  // kAuto streams from this many predictions in all.
  int64_t streamed_from = 100000;
  int64_t chunk_rows = 4096;
};

class ByReceiptIdDedup : public MetricDedup {
 public:
  static constexpr char kName[] = "by_receipt_id";

  explicit ByReceiptIdDedup(ReceiptMergeChoice merge = {}) : merge_(merge) {}

  // `counted`: one prediction per receipt id (the first in (rank, slot)
  // order), sorted by receipt id; duplicates_dropped: the other copies.
  absl::StatusOr<DedupResult> Dedup(
      const std::vector<Prediction>& gathered) const override;

  // chunk_rows when the merge is kStreamed, or kAuto and `predictions` >=
  // streamed_from; else 0 (gathered).
  int64_t StreamedMergeChunk(int64_t predictions) const override;

 private:
  ReceiptMergeChoice merge_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_BY_RECEIPT_ID_DEDUP_H_
