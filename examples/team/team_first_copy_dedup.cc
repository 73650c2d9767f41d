// A team's own metric dedup: `team_first_copy` counts, of every receipt id,
// the copy first in (rank, slot) order, and refuses copies that disagree.
//
//   plugin_library: "path/to/libteam_first_copy_dedup.so"
//   metric_dedup { name: "team_first_copy" }
#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/team/team_data_options.pb.h"
#include "metrics/metric_dedup.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

constexpr char kName[] = "team_first_copy";

class TeamFirstCopy : public MetricDedup {
 public:
  absl::StatusOr<DedupResult> Dedup(const std::vector<Prediction>& gathered) const override {
    std::vector<Prediction> sorted = gathered;
    std::sort(sorted.begin(), sorted.end(), [](const Prediction& a, const Prediction& b) {
      return std::tie(a.receipt_id, a.rank, a.slot) < std::tie(b.receipt_id, b.rank, b.slot);
    });
    DedupResult result;
    for (const Prediction& p : sorted) {
      if (result.counted.empty() || result.counted.back().receipt_id != p.receipt_id) {
        result.counted.push_back(p);
        continue;
      }
      const Prediction& first = result.counted.back();
      if (first.predicted != p.predicted || first.label != p.label) {
        return absl::FailedPreconditionError(absl::StrCat(
            kName, ": receipt ", p.receipt_id, " is predicted ", first.predicted, " on rank ",
            first.rank, " slot ", first.slot, " but ", p.predicted, " on rank ", p.rank,
            " slot ", p.slot));
      }
      ++result.duplicates_dropped;
    }
    return result;
  }
};

class TeamFirstCopyFactory : public TypedFactory<MetricDedup, TeamFirstCopyOptions> {
 public:
  std::string name() const override { return kName; }

 private:
  absl::StatusOr<std::unique_ptr<MetricDedup>> CreateTyped(
      const TeamFirstCopyOptions&) const override {
    return std::make_unique<TeamFirstCopy>();
  }
};

PluginRegistrar<TeamFirstCopyFactory, MetricDedup> registrar;

}  // namespace
}  // namespace receipt_parity
