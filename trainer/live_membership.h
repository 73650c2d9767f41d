// Survivors go on: what a rank does when its run's update loop failed
// under a launcher whose lost ranks leave while the others train on
// (runtime/launcher.h `survivors_go_on`, runtime/membership.h).
//
// GoOnWithoutLostRanks, on every survivor:
//   1. drops its process group: its sockets close, so a survivor still
//      blocked in a collective with it fails too, at once;
//   2. waits for the launcher's next membership; none in time means the
//      failure was not a lost rank's (a peer's own error, a timeout), and
//      the run's error stands;
//   3. forms a Gloo group of the membership (a later one when ranks were
//      lost one after another, or while forming);
//   4. agrees on the state: every member says the updates it has stepped;
//      the lowest rank of those furthest on (a rank may have stepped the
//      update in flight before the loss reached it) sends its whole state
//      over the new group (LibTorch's serialization, a broadcast); every
//      member at the same update checks that its own state hashes the same
//      (checkpoint/shard_state.h ReplicaHash: a replica that differs is an
//      error naming both ranks), and every member takes the sent state;
//   5. reports to the launcher (runtime/membership.h ReformedReport).
// The rank then runs the run again at the new world size from that state
// (TrainingRunOptions::resume_from_memory), redoing at most the update in
// flight. No checkpoint is read or written for any of it.
//
// The same steps, from 2 on, grow the group back: when the launcher
// publishes a membership with a replacement (runtime/membership.h), the
// members' runs stop together at an update boundary (trainer/
// membership_gate.h), hand their state over with no update in flight, and
// GoOnWithoutLostRanks forms the grown group; the replacement
// (JoinAsReplacement) receives the state there.
#ifndef RECEIPT_PARITY_TRAINER_LIVE_MEMBERSHIP_H_
#define RECEIPT_PARITY_TRAINER_LIVE_MEMBERSHIP_H_

#include <chrono>
#include <optional>

#include "absl/status/statusor.h"
#include "runtime/distributed_env.h"
#include "runtime/membership.h"
#include "runtime/process_group.h"
#include "trainer/training_run_options.h"

namespace receipt_parity {

struct GroupAfterLoss {
  ProcessGroupHandle group;
  // The membership it is (1, 2, ...), this rank's place in it and its size.
  int membership = 0;
  int rank = 0;
  int world_size = 1;
  // What this rank reported of the change.
  ReformedReport report;
};

// REQUIRES: env.survivors_go_on, `handover` filled by the failed run,
// `membership` the group's current one (0 at the start). Replaces
// `handover`'s state with the agreed one. nullopt when no new membership
// came within `wait`; errors: the new group's, the store's, DataLoss for a
// state that does not deserialise, FailedPrecondition when two replicas of
// one update differ.
absl::StatusOr<std::optional<GroupAfterLoss>> GoOnWithoutLostRanks(
    const DistributedEnv& env, int membership, ProcessGroupHandle* group,
    LiveHandover* handover, std::chrono::seconds collective_timeout,
    std::chrono::milliseconds wait);

// A replacement the launcher started for a lost rank
// (env.joins_after_membership >= 0), instead of joining the run's first
// group: starts its heartbeat, says it is ready (runtime/membership.h
// JoiningKey), waits up to `wait` for a membership that lists it (the
// members stop at an update boundary to form it), forms that group and
// receives the state as step 4 above (it holds none: it is never the
// source), checking the received state's replica hash against the one its
// sender computed from its memory; then reports as step 5. `handover`
// receives the state. Errors: NotFound when no membership takes it in
// `wait`; the group's, the store's; DataLoss and FailedPrecondition as
// above, and FailedPrecondition when no member holds a state.
absl::StatusOr<GroupAfterLoss> JoinAsReplacement(const DistributedEnv& env,
                                                 LiveHandover* handover,
                                                 std::chrono::seconds collective_timeout,
                                                 std::chrono::milliseconds wait);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_LIVE_MEMBERSHIP_H_
