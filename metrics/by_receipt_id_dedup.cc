#include "metrics/by_receipt_id_dedup.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "metrics/first_per_receipt.h"

namespace receipt_parity {

absl::StatusOr<DedupResult> ByReceiptIdDedup::Dedup(
    const std::vector<Prediction>& gathered) const {
  FirstPerReceipt first = KeepFirstPerReceiptId(gathered);
  if (!first.disagreements.empty()) {
    const size_t total = first.disagreements.size();
    first.disagreements.resize(std::min(total, kDisagreementsShown));
    return absl::FailedPreconditionError(
        DisagreeingCopiesMessage(kName, first.disagreements, total));
  }
  return std::move(first.result);
}

int64_t ByReceiptIdDedup::StreamedMergeChunk(int64_t predictions) const {
  const bool streamed =
      merge_.merge == ReceiptMerge::kStreamed ||
      (merge_.merge == ReceiptMerge::kAuto && predictions >= merge_.streamed_from);
  return streamed ? merge_.chunk_rows : 0;
}

}  // namespace receipt_parity
