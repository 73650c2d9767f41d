// The fixed receipt-quality label map.
//
// Label ids are positions in LabelNames(): 0 "ok", 1 "blurred", 2 "faded",
// 3 "cropped" (the rare class). The map is part of the data format: it is
// recorded in run manifests, so it changes only with a format version bump.
// Thread safety: all functions are safe to call concurrently.
#ifndef RECEIPT_PARITY_DATA_LABEL_MAP_H_
#define RECEIPT_PARITY_DATA_LABEL_MAP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

// Label ids, for code that names a class.
enum ReceiptLabel : int {
  kLabelOk = 0,
  kLabelBlurred = 1,
  kLabelFaded = 2,
  kLabelCropped = 3,
};
inline constexpr int kNumLabels = 4;
// The rare class: the synthetic generator makes it rare on purpose.
inline constexpr int kRareLabel = kLabelCropped;

// The names, indexed by label id. Never destroyed.
const std::vector<std::string>& LabelNames();

// The id of `name` (exact, case-sensitive). Unknown -> InvalidArgument whose
// message lists the valid names.
absl::StatusOr<int> LabelId(absl::string_view name);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_LABEL_MAP_H_
