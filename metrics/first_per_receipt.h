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

// The disagreement line of one receipt id's copies [begin, end) (see
// FirstPerReceipt::disagreements). REQUIRES: begin != end, one receipt id.
template <typename Iterator>
std::string DescribeDisagreement(Iterator begin, Iterator end) {
  std::vector<std::string> origins;
  for (Iterator p = begin; p != end; ++p) {
    origins.push_back(absl::StrCat("rank ", p->rank, " slot ", p->slot, " (predicted ",
                                   p->predicted, ", label ", p->label, ")"));
  }
  return absl::StrCat("receipt '", begin->receipt_id, "': ", absl::StrJoin(origins, ", "));
}

// Whether two copies of one receipt id disagree on what counts.
inline bool CopiesDisagree(const Prediction& a, const Prediction& b) {
  return a.predicted != b.predicted || a.label != b.label;
}

// Groups `gathered` (any order) by receipt id and keeps the first of each.
inline FirstPerReceipt KeepFirstPerReceiptId(std::vector<Prediction> gathered) {
  SortPredictions(&gathered);
  FirstPerReceipt out;
  for (size_t begin = 0; begin < gathered.size();) {
    size_t end = begin + 1;
    bool disagree = false;
    while (end < gathered.size() &&
           gathered[end].receipt_id == gathered[begin].receipt_id) {
      disagree = disagree || CopiesDisagree(gathered[end], gathered[begin]);
      ++end;
    }
    if (disagree) {
      out.disagreements.push_back(
          DescribeDisagreement(gathered.begin() + begin, gathered.begin() + end));
    }
    out.result.counted.push_back(gathered[begin]);
    out.result.duplicates_dropped += static_cast<int64_t>(end - begin - 1);
    begin = end;
  }
  return out;
}

// The disagreement lines shown in an error: at most this many, then
// "... and N more".
inline constexpr size_t kDisagreementsShown = 10;

// The first `shown` of `total` disagreement lines joined with "; ", then
// "; ... and N more" when total > shown.size(). REQUIRES: total >=
// shown.size().
inline std::string JoinShownDisagreements(const std::vector<std::string>& shown, size_t total) {
  if (total <= shown.size()) return absl::StrJoin(shown, "; ");
  return absl::StrCat(absl::StrJoin(shown, "; "), "; ... and ", total - shown.size(), " more");
}

// `disagreements` joined with "; ", at most `max_shown` of them, then
// "... and N more".
inline std::string JoinDisagreements(const std::vector<std::string>& disagreements,
                                     size_t max_shown = kDisagreementsShown) {
  if (disagreements.size() <= max_shown) {
    return JoinShownDisagreements(disagreements, disagreements.size());
  }
  const std::vector<std::string> shown(disagreements.begin(), disagreements.begin() + max_shown);
  return JoinShownDisagreements(shown, disagreements.size());
}

// The refusal of a plugin that keeps one copy per receipt id when `total`
// ids have copies that disagree, `shown` being the first lines (at most
// kDisagreementsShown) of them:
//   "<plugin>: N receipt id(s) predicted more than once with different
//   predicted class or label: receipt 'r0': rank 0 slot 1 (...), ...".
inline std::string DisagreeingCopiesMessage(const std::string& plugin,
                                            const std::vector<std::string>& shown, size_t total) {
  return absl::StrCat(plugin, ": ", total,
                      " receipt id(s) predicted more than once with different predicted class or "
                      "label: ",
                      JoinShownDisagreements(shown, total));
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_FIRST_PER_RECEIPT_H_
