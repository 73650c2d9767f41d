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

// Updates every rank timed.
int TimedUpdates(const std::vector<RankReport>& reports) {
  int updates = reports.empty() ? 0 : reports[0].timing().sync_seconds_size();
  for (const RankReport& r : reports) {
    updates = std::min(updates, r.timing().sync_seconds_size());
  }
  return updates;
}

}  // namespace

std::vector<RankLateness> SummarizeLateness(const std::vector<RankReport>& reports) {
  if (reports.size() < 2) return {};
  const int updates = TimedUpdates(reports);
  std::vector<std::vector<double>> lateness(reports.size());
  std::vector<int> times_last(reports.size(), 0);
  for (int u = 0; u < updates; ++u) {
    double longest = 0;
    for (const RankReport& r : reports) longest = std::max(longest, r.timing().sync_seconds(u));
    size_t last = 0;
    for (size_t r = 0; r < reports.size(); ++r) {
      lateness[r].push_back(longest - reports[r].timing().sync_seconds(u));
      if (lateness[r].back() > lateness[last].back()) last = r;
    }
    if (lateness[last].back() > 0) ++times_last[last];
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
