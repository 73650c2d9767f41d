#include "conformance/metric_dedup_conformance.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "metrics/metric_dedup.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

constexpr int kReceipts = 20;
constexpr int kRanks = 3;

std::string ReceiptId(int i) { return absl::StrFormat("receipt-%03d", i); }

// DistributedSampler(drop_last=False) over kReceipts on kRanks: padded to
// 21 slots, the first receipt repeated on rank 2. Every copy agrees.
std::vector<Prediction> Gathered(int receipts) {
  std::vector<Prediction> gathered;
  const int padded = (receipts + kRanks - 1) / kRanks * kRanks;
  for (int position = 0; position < padded; ++position) {
    const int receipt = position % receipts;
    Prediction p;
    p.receipt_id = ReceiptId(receipt);
    p.label = receipt % 4;
    p.predicted = (receipt * 7) % 4;
    p.rank = position % kRanks;
    p.slot = position / kRanks;
    gathered.push_back(p);
  }
  return gathered;
}

std::vector<Prediction> Shuffled(std::vector<Prediction> predictions, int seed) {
  std::mt19937 random(seed);
  std::shuffle(predictions.begin(), predictions.end(), random);
  return predictions;
}

auto Key(const Prediction& p) { return std::make_tuple(p.receipt_id, p.rank, p.slot); }

bool SameCounted(const std::vector<Prediction>& a, const std::vector<Prediction>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Key(a[i]) != Key(b[i]) || a[i].predicted != b[i].predicted || a[i].label != b[i].label) {
      return false;
    }
  }
  return true;
}

// Each id counted once, and duplicates_dropped as gathered less distinct.
std::vector<std::string> CountedOnce(const std::vector<Prediction>& gathered,
                                     const DedupResult& result, const std::string& what) {
  std::vector<std::string> failures;
  std::map<std::string, int> counted;
  for (const Prediction& p : result.counted) ++counted[p.receipt_id];
  std::set<std::string> distinct;
  for (const Prediction& p : gathered) distinct.insert(p.receipt_id);
  for (const std::string& id : distinct) {
    const int n = counted.count(id) > 0 ? counted[id] : 0;
    if (n != 1) failures.push_back(absl::StrCat(what, ": ", id, " counted ", n, " times"));
  }
  const int64_t dropped = static_cast<int64_t>(gathered.size() - distinct.size());
  if (result.duplicates_dropped != dropped) {
    failures.push_back(absl::StrCat(what, ": duplicates_dropped is ", result.duplicates_dropped,
                                    "; ", gathered.size(), " gathered, ", distinct.size(),
                                    " distinct ids"));
  }
  return failures;
}

}  // namespace

absl::StatusOr<SuiteReport> RunMetricDedupSuite(const PluginSelection& selection) {
  absl::StatusOr<std::unique_ptr<MetricDedup>> dedup =
      CreateSelectedPlugin<MetricDedup>(selection, "metric_dedup");
  if (!dedup.ok()) return dedup.status();
  SuiteReport report;
  const std::vector<Prediction> gathered = Gathered(kReceipts);
  std::vector<std::string> once, order, first, disagreement, edges;
  std::vector<Prediction> reference;
  for (int seed : {0, 1, 2}) {
    const std::vector<Prediction> input = seed == 0 ? gathered : Shuffled(gathered, seed);
    absl::StatusOr<DedupResult> result = (*dedup)->Dedup(input);
    const std::string what = absl::StrCat(input.size(), " predictions from ", kRanks, " ranks",
                                          seed == 0 ? "" : absl::StrCat(", shuffled (", seed, ")"));
    if (!result.ok()) {
      once.push_back(absl::StrCat(what, ": ", result.status().message()));
      continue;
    }
    for (const std::string& f : CountedOnce(input, *result, what)) once.push_back(f);
    if (!std::is_sorted(result->counted.begin(), result->counted.end(),
                        [](const Prediction& a, const Prediction& b) { return Key(a) < Key(b); })) {
      order.push_back(absl::StrCat(what, ": counted is not in (receipt id, rank, slot) order"));
    }
    if (seed == 0) {
      reference = result->counted;
    } else if (!SameCounted(reference, result->counted)) {
      order.push_back(absl::StrCat(what, ": counts other predictions than in gathered order"));
    }
    if (seed == 0 && (*dedup)->StreamedMergeChunk(static_cast<int64_t>(input.size())) > 0) {
      std::map<std::string, std::pair<int, int64_t>> first_copy;
      for (const Prediction& p : input) {
        auto [it, inserted] = first_copy.emplace(p.receipt_id, std::make_pair(p.rank, p.slot));
        if (!inserted) it->second = std::min(it->second, std::make_pair(p.rank, p.slot));
      }
      for (const Prediction& p : result->counted) {
        if (first_copy[p.receipt_id] != std::make_pair(p.rank, p.slot)) {
          first.push_back(absl::StrCat(p.receipt_id, ": counts the copy of rank ", p.rank,
                                       " slot ", p.slot, ", not the first in (rank, slot) order"));
        }
      }
    }
  }
  report.Add("each receipt counted exactly once (3 ranks, padded with repeats)", once);
  report.Add("counted in (receipt id, rank, slot) order, whatever the gathered order", order);
  if ((*dedup)->StreamedMergeChunk(static_cast<int64_t>(gathered.size())) > 0) {
    report.Add("streams: the first copy in (rank, slot) order is counted", first);
  }

  std::vector<Prediction> disagreeing = gathered;
  const std::string repeated = ReceiptId(0);
  for (Prediction& p : disagreeing) {
    if (p.receipt_id == repeated && p.rank == kRanks - 1) p.predicted = (p.predicted + 1) % 4;
  }
  absl::StatusOr<DedupResult> refused = (*dedup)->Dedup(disagreeing);
  if (refused.ok() || refused.status().code() != absl::StatusCode::kFailedPrecondition) {
    disagreement.push_back(absl::StrCat(
        "two copies of ", repeated, " predicting different classes: ",
        refused.ok() ? "accepted" : refused.status().ToString(), ", not FailedPrecondition"));
  } else if (refused.status().message().find(repeated) == absl::string_view::npos) {
    disagreement.push_back(absl::StrCat("the error does not name ", repeated, ": ",
                                        refused.status().message()));
  }
  report.Add("copies that disagree are FailedPrecondition naming the receipt", disagreement);

  absl::StatusOr<DedupResult> empty = (*dedup)->Dedup({});
  if (!empty.ok() || !empty->counted.empty() || empty->duplicates_dropped != 0) {
    edges.push_back("nothing gathered does not count nothing");
  }
  const std::vector<Prediction> distinct = Gathered(kRanks * 6);
  absl::StatusOr<DedupResult> all = (*dedup)->Dedup(distinct);
  if (!all.ok()) {
    edges.push_back(absl::StrCat("without duplicates: ", all.status().message()));
  } else {
    for (const std::string& f : CountedOnce(distinct, *all, "without duplicates")) edges.push_back(f);
  }
  report.Add("nothing gathered counts nothing; without duplicates every prediction counts", edges);
  return report;
}

}  // namespace receipt_parity
