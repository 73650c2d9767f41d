// Injected failures: a rank that really dies (SIGKILL to itself) at a
// chosen point of a chosen generation's save (a kill point), or at a
// chosen moment inside a phase of a chosen update (a phase kill, armed by
// checkpoint/phase_kill.h). Nothing is simulated; the point is to leave on
// disk, and to the other ranks, exactly what a crash at that moment leaves.
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
//
// The phases, each named by the updates the run has completed when it
// begins (its "update"):
//   forward_backward   update K's weights, forward and backward (K done)
//   allreduce          update K's reducer call: the collective over the
//                      gradients, inside every reducer (K done)
//   validation_gather  the end-of-run validation: this rank's predictions
//                      and their gather across ranks (all K updates done)
//   save               the checkpoint save after K updates, from the
//                      shard's bytes until the generation is advertised to
//                      this rank (K done); with checkpoint.async, the copy
//                      of the state on the training thread
//   save_background    checkpoint.async: the background write of the save
//                      after K updates, from serialising the copy until the
//                      generation is advertised to this rank, while the
//                      training thread goes on (K done)
#ifndef RECEIPT_PARITY_CHECKPOINT_FAULT_INJECTION_H_
#define RECEIPT_PARITY_CHECKPOINT_FAULT_INJECTION_H_

#include <cstdint>
#include <functional>
#include <string>
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

enum class KillPhase {
  kForwardBackward,
  kAllReduce,
  kValidationGather,
  kSave,
  kSaveBackground,
  // The optimizer's step of an update (after its reduction).
  kOptimizerStep,
};

// Every phase, in the order above.
const std::vector<KillPhase>& AllKillPhases();

// The stable name ("forward_backward", ...), as written in flags and reports.
absl::string_view KillPhaseName(KillPhase phase);

// Errors: InvalidArgument naming `name` and listing the valid names.
absl::StatusOr<KillPhase> ParseKillPhase(absl::string_view name);

// Which rank dies inside which phase of which update, and when. The default
// plan (rank -1) never kills.
struct PhaseKillPlan {
  int rank = -1;
  KillPhase phase = KillPhase::kForwardBackward;
  // The updates the run has completed when the phase begins (see above).
  int64_t update = 0;
  // The rank dies this long after the phase began, or at the phase's end
  // if it ends first (checkpoint/phase_kill.h).
  int64_t delay_us = 0;
  // The rank sends itself SIGTERM (a scheduler's preemption,
  // runtime/preemption.h) instead of SIGKILL, and runs on.
  bool preempt = false;

  bool armed() const { return rank >= 0; }
  // Armed, and for this phase, rank and update.
  bool Names(KillPhase at_phase, int at_rank, int64_t at_update) const {
    return armed() && phase == at_phase && rank == at_rank && update == at_update;
  }
};

// A plan from flag-style values. rank -1 gives the unarmed plan (the other
// arguments are then ignored). Errors (InvalidArgument): unknown phase
// name, rank < -1, update < 0 or delay_us < 0 for an armed plan.
absl::StatusOr<PhaseKillPlan> MakePhaseKillPlan(int rank, absl::string_view phase,
                                                int64_t update, int64_t delay_us);

// Which rank dies where. The default plan (rank -1, an unarmed `phase`)
// never kills.
struct FaultPlan {
  int rank = -1;
  KillPoint point = KillPoint::kBeforeShard;
  // 1-based generation during whose save the rank dies.
  int64_t generation = 0;
  // A kill inside a phase, independent of the kill point above (a run
  // arms one or the other).
  PhaseKillPlan phase;

  // The kill point is armed (the phase kill has its own armed()).
  bool armed() const { return rank >= 0; }
  // Armed, and for this point, rank and generation: KillIfPlanned kills.
  bool Kills(KillPoint at_point, int at_rank, int64_t at_generation) const {
    return armed() && point == at_point && rank == at_rank && generation == at_generation;
  }
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

// A write hook (io/atomic_file.h WriteHooks) that kills as KillIfPlanned
// at (point, rank, generation), or an empty one when `plan` does not name
// them: an unset hook costs its write nothing (no fsync at the half).
std::function<void()> KillHook(const FaultPlan& plan, KillPoint point, int rank,
                               int64_t generation);

// Logs the ERROR line "fault injection: <what>" (the fault drill looks for
// it), flushes the logs and raises SIGKILL: the whole process dies, from
// whichever thread calls it. Thread-safe.
[[noreturn]] void DieOfInjectedFault(const std::string& what);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_FAULT_INJECTION_H_
