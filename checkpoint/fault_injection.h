// Injected failures for checkpoint saves: a rank that really dies
// (SIGKILL to itself) at a chosen point of a chosen generation's save.
// Nothing is simulated; the point is to leave on disk exactly what a
// crash at that moment leaves.
//
// The points, in the order a save passes them (checkpoint/save_generation.h):
//   before_shard               nothing of this rank's shard is written
//   mid_shard                  half the shard's bytes are in its temp file
//                              (written and fsynced)
//   after_shard_before_rename  the whole shard is in its temp file, fsynced,
//                              not renamed
//   before_manifest            rank 0: every shard confirmed durable, no
//                              MANIFEST yet. Other ranks: own shard durable,
//                              not yet confirmed to rank 0.
//   mid_manifest               rank 0: half the MANIFEST's bytes in its temp
//                              file. Other ranks: same as before_manifest
//                              (only rank 0 writes a MANIFEST).
#ifndef RECEIPT_PARITY_CHECKPOINT_FAULT_INJECTION_H_
#define RECEIPT_PARITY_CHECKPOINT_FAULT_INJECTION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

enum class KillPoint {
  kBeforeShard,
  kMidShard,
  kAfterShardBeforeRename,
  kBeforeManifest,
  kMidManifest,
};

// Every point, in save order.
const std::vector<KillPoint>& AllKillPoints();

// The stable name ("before_shard", ...), as written in configs and reports.
absl::string_view KillPointName(KillPoint point);

// Errors: InvalidArgument naming `name` and listing the valid names.
absl::StatusOr<KillPoint> ParseKillPoint(absl::string_view name);

// Which rank dies where. The default plan (rank -1) never kills.
struct FaultPlan {
  int rank = -1;
  KillPoint point = KillPoint::kBeforeShard;
  // 1-based generation during whose save the rank dies.
  int64_t generation = 0;

  bool armed() const { return rank >= 0; }
};

// A plan from config-style values. rank -1 gives the unarmed plan (the other
// arguments are then ignored). Errors (InvalidArgument): unknown point name,
// rank < -1, generation < 1 for an armed plan.
absl::StatusOr<FaultPlan> MakeFaultPlan(int rank, absl::string_view point,
                                        int64_t generation);

// If `plan` names (point, rank, generation), logs an ERROR line, flushes the
// logs and raises SIGKILL: it does not return. Otherwise it returns at once.
// Thread-safe.
void KillIfPlanned(const FaultPlan& plan, KillPoint point, int rank,
                   int64_t generation);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_FAULT_INJECTION_H_
