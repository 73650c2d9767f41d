#include "metrics/by_receipt_id_dedup.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "metrics/first_per_receipt.h"

namespace receipt_parity {

absl::StatusOr<DedupResult> ByReceiptIdDedup::Dedup(
    const std::vector<Prediction>& gathered) const {
  FirstPerReceipt first = KeepFirstPerReceiptId(gathered);
  if (!first.disagreements.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        kName, ": ", first.disagreements.size(),
        " receipt id(s) predicted more than once with different predicted "
        "class or label: ",
        JoinDisagreements(first.disagreements)));
  }
  return std::move(first.result);
}

}  // namespace receipt_parity
