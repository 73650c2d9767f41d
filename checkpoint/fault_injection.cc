#include "checkpoint/fault_injection.h"

#include <csignal>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "logging/glog.h"

namespace receipt_parity {
namespace {

// The value whose stable name is `name`; else InvalidArgument "unknown
// <what> "NAME"; valid: a, b, c".
template <typename Enum>
absl::StatusOr<Enum> ParseStableName(absl::string_view name, const std::vector<Enum>& all,
                                     absl::string_view (*name_of)(Enum),
                                     absl::string_view what) {
  std::vector<absl::string_view> names;
  for (Enum value : all) {
    if (name_of(value) == name) return value;
    names.push_back(name_of(value));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown ", what, " \"", name,
                                                 "\"; valid: ", absl::StrJoin(names, ", ")));
}

// OK for an armed rank (>= 0); -1 (none) is the caller's to handle.
absl::Status CheckKillRank(int rank) {
  if (rank >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("kill rank ", rank, " must be >= 0, or -1 for none"));
}

}  // namespace

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
  return ParseStableName(name, AllKillPoints(), &KillPointName, "kill point");
}

absl::StatusOr<FaultPlan> MakeFaultPlan(int rank, absl::string_view point,
                                        int64_t generation) {
  if (rank == -1) return FaultPlan();
  if (absl::Status s = CheckKillRank(rank); !s.ok()) return s;
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

const std::vector<KillPhase>& AllKillPhases() {
  static const auto* const phases = new std::vector<KillPhase>{
      KillPhase::kForwardBackward, KillPhase::kAllReduce,
      KillPhase::kValidationGather, KillPhase::kSave, KillPhase::kSaveBackground,
      KillPhase::kOptimizerStep};
  return *phases;
}

absl::string_view KillPhaseName(KillPhase phase) {
  switch (phase) {
    case KillPhase::kForwardBackward:
      return "forward_backward";
    case KillPhase::kAllReduce:
      return "allreduce";
    case KillPhase::kValidationGather:
      return "validation_gather";
    case KillPhase::kSave:
      return "save";
    case KillPhase::kSaveBackground:
      return "save_background";
    case KillPhase::kOptimizerStep:
      return "optimizer_step";
  }
  LOG(FATAL) << "invalid KillPhase " << static_cast<int>(phase);
}

absl::StatusOr<KillPhase> ParseKillPhase(absl::string_view name) {
  return ParseStableName(name, AllKillPhases(), &KillPhaseName, "kill phase");
}

absl::StatusOr<PhaseKillPlan> MakePhaseKillPlan(int rank, absl::string_view phase,
                                                int64_t update, int64_t delay_us) {
  if (rank == -1) return PhaseKillPlan();
  if (absl::Status s = CheckKillRank(rank); !s.ok()) return s;
  if (update < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kill update ", update, " must be >= 0 (the updates completed when the phase begins)"));
  }
  if (delay_us < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kill delay ", delay_us, " us must be >= 0"));
  }
  absl::StatusOr<KillPhase> parsed = ParseKillPhase(phase);
  if (!parsed.ok()) return parsed.status();
  PhaseKillPlan plan;
  plan.rank = rank;
  plan.phase = *parsed;
  plan.update = update;
  plan.delay_us = delay_us;
  return plan;
}

void KillIfPlanned(const FaultPlan& plan, KillPoint point, int rank,
                   int64_t generation) {
  if (!plan.Kills(point, rank, generation)) return;
  DieOfInjectedFault(absl::StrCat("rank ", rank, " kills itself (SIGKILL) at ",
                                  KillPointName(point), " of generation ", generation));
}

std::function<void()> KillHook(const FaultPlan& plan, KillPoint point, int rank,
                               int64_t generation) {
  if (!plan.Kills(point, rank, generation)) return {};
  return [plan, point, rank, generation] { KillIfPlanned(plan, point, rank, generation); };
}

void DieOfInjectedFault(const std::string& what) {
  LOG(ERROR) << "fault injection: " << what;
  google::FlushLogFiles(google::GLOG_INFO);
  std::raise(SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
}

}  // namespace receipt_parity
