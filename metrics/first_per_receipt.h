// Keeping one prediction per receipt id: the grouping that `by_receipt_id`
// and shared-library dedup plugins (examples/plugins/) build on.
//
// Header only, on purpose: a shared-library plugin may use it without
// linking anything but the host's registry.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_METRICS_FIRST_PER_RECEIPT_H_
#define RECEIPT_PARITY_METRICS_FIRST_PER_RECEIPT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/metric_dedup.h"

namespace receipt_parity {

// Sorts into the deterministic order DedupResult::counted promises:
// receipt id, then rank, then slot.
inline void SortPredictions(std::vector<Prediction>* predictions) {
  std::sort(predictions->begin(), predictions->end(),
            [](const Prediction& a, const Prediction& b) {
              return std::tie(a.receipt_id, a.rank, a.slot) <
                     std::tie(b.receipt_id, b.rank, b.slot);
            });
}

struct FirstPerReceipt {
  // The first prediction of each receipt id in (rank, slot) order, sorted
  // by receipt id; duplicates_dropped = the copies left out.
  DedupResult result;
  // One line per receipt id whose copies disagree on the predicted class or
  // the label, naming the id and every (rank, slot) of it, e.g.
  //   receipt 'r7': rank 0 slot 3 (predicted 1, label 2), rank 1 slot 0
  //   (predicted 0, label 2)
  // In receipt id order.
  std::vector<std::string> disagreements;
};

// Groups `gathered` (any order) by receipt id and keeps the first of each.
inline FirstPerReceipt KeepFirstPerReceiptId(std::vector<Prediction> gathered) {
  SortPredictions(&gathered);
  FirstPerReceipt out;
  for (size_t begin = 0; begin < gathered.size();) {
    size_t end = begin + 1;
    bool disagree = false;
    while (end < gathered.size() &&
           gathered[end].receipt_id == gathered[begin].receipt_id) {
      disagree = disagree ||
                 gathered[end].predicted != gathered[begin].predicted ||
                 gathered[end].label != gathered[begin].label;
      ++end;
    }
    if (disagree) {
      std::vector<std::string> origins;
      for (size_t i = begin; i < end; ++i) {
        const Prediction& p = gathered[i];
        origins.push_back(absl::StrCat("rank ", p.rank, " slot ", p.slot,
                                       " (predicted ", p.predicted, ", label ",
                                       p.label, ")"));
      }
      out.disagreements.push_back(
          absl::StrCat("receipt '", gathered[begin].receipt_id,
                       "': ", absl::StrJoin(origins, ", ")));
    }
    out.result.counted.push_back(gathered[begin]);
    out.result.duplicates_dropped += static_cast<int64_t>(end - begin - 1);
    begin = end;
  }
  return out;
}

// `disagreements` joined with "; ", at most `max_shown` of them, then
// "... and N more".
inline std::string JoinDisagreements(
    const std::vector<std::string>& disagreements, size_t max_shown = 10) {
  if (disagreements.size() <= max_shown) {
    return absl::StrJoin(disagreements, "; ");
  }
  std::vector<std::string> shown(disagreements.begin(),
                                 disagreements.begin() + max_shown);
  return absl::StrCat(absl::StrJoin(shown, "; "), "; ... and ",
                      disagreements.size() - max_shown, " more");
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_FIRST_PER_RECEIPT_H_
