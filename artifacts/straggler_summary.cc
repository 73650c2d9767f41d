#include "artifacts/straggler_summary.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace receipt_parity {
namespace {

// The nearest-rank quantile q of `values` (sorted here); 0 for none.
double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
  return values[std::max<size_t>(rank, 1) - 1];
}

}  // namespace

std::vector<std::vector<double>> LatenessPerUpdate(
    const std::vector<const RankTiming*>& timings) {
  int updates = timings.empty() ? 0 : timings[0]->sync_seconds_size();
  for (const RankTiming* t : timings) updates = std::min(updates, t->sync_seconds_size());
  std::vector<std::vector<double>> lateness(timings.size());
  for (int u = 0; u < updates; ++u) {
    double longest = 0;
    for (const RankTiming* t : timings) longest = std::max(longest, t->sync_seconds(u));
    for (size_t r = 0; r < timings.size(); ++r) {
      lateness[r].push_back(longest - timings[r]->sync_seconds(u));
    }
  }
  return lateness;
}

std::vector<RankLateness> SummarizeLateness(const std::vector<RankReport>& reports) {
  if (reports.size() < 2) return {};
  std::vector<const RankTiming*> timings;
  for (const RankReport& r : reports) timings.push_back(&r.timing());
  const std::vector<std::vector<double>> lateness = LatenessPerUpdate(timings);
  const int updates = static_cast<int>(lateness[0].size());
  std::vector<int> times_last(reports.size(), 0);
  for (int u = 0; u < updates; ++u) {
    size_t last = 0;
    for (size_t r = 0; r < reports.size(); ++r) {
      if (lateness[r][u] > lateness[last][u]) last = r;
    }
    if (lateness[last][u] > 0) ++times_last[last];
  }
  std::vector<RankLateness> summary;
  for (size_t r = 0; r < reports.size(); ++r) {
    RankLateness& rank = summary.emplace_back();
    rank.set_rank(reports[r].rank());
    rank.set_times_last(times_last[r]);
    rank.set_median_lateness_seconds(Quantile(lateness[r], 0.5));
    rank.set_p90_lateness_seconds(Quantile(lateness[r], 0.9));
    rank.set_updates(updates);
  }
  return summary;
}

int StragglerRank(const std::vector<RankLateness>& lateness) {
  int straggler = -1;
  int most = 0;
  for (const RankLateness& rank : lateness) {
    if (rank.times_last() > most) {
      most = rank.times_last();
      straggler = rank.rank();
    }
  }
  return straggler;
}

}  // namespace receipt_parity
