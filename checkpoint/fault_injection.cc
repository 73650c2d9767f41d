#include "checkpoint/fault_injection.h"

#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "logging/glog.h"

namespace receipt_parity {

const std::vector<KillPoint>& AllKillPoints() {
  static const auto* const points = new std::vector<KillPoint>{
      KillPoint::kBeforeShard, KillPoint::kMidShard,
      KillPoint::kAfterShardBeforeRename, KillPoint::kBeforeManifest,
      KillPoint::kMidManifest};
  return *points;
}

absl::string_view KillPointName(KillPoint point) {
  switch (point) {
    case KillPoint::kBeforeShard:
      return "before_shard";
    case KillPoint::kMidShard:
      return "mid_shard";
    case KillPoint::kAfterShardBeforeRename:
      return "after_shard_before_rename";
    case KillPoint::kBeforeManifest:
      return "before_manifest";
    case KillPoint::kMidManifest:
      return "mid_manifest";
  }
  LOG(FATAL) << "invalid KillPoint " << static_cast<int>(point);
}

absl::StatusOr<KillPoint> ParseKillPoint(absl::string_view name) {
  std::vector<absl::string_view> names;
  for (KillPoint point : AllKillPoints()) {
    if (KillPointName(point) == name) return point;
    names.push_back(KillPointName(point));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown kill point \"", name,
                   "\"; valid: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<FaultPlan> MakeFaultPlan(int rank, absl::string_view point,
                                        int64_t generation) {
  if (rank == -1) return FaultPlan();
  if (rank < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("kill rank ", rank, " must be >= 0, or -1 for none"));
  }
  if (generation < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("kill generation ", generation,
                     " must be >= 1 (generations are 1-based)"));
  }
  absl::StatusOr<KillPoint> parsed = ParseKillPoint(point);
  if (!parsed.ok()) return parsed.status();
  FaultPlan plan;
  plan.rank = rank;
  plan.point = *parsed;
  plan.generation = generation;
  return plan;
}

void KillIfPlanned(const FaultPlan& plan, KillPoint point, int rank,
                   int64_t generation) {
  if (!plan.armed() || plan.point != point || plan.rank != rank ||
      plan.generation != generation) {
    return;
  }
  LOG(ERROR) << "fault injection: rank " << rank
             << " kills itself (SIGKILL) at " << KillPointName(point)
             << " of generation " << generation;
  google::FlushLogFiles(google::GLOG_INFO);
  std::raise(SIGKILL);
}

}  // namespace receipt_parity
