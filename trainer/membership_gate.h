// A new membership as an update gate (trainer/update_loop.h): when
// survivors go on and the launcher publishes a membership that takes a
// replacement in (runtime/membership.h), every member stops after the same
// update, hands its state over with nothing in flight
// (TrainingRunOptions::live), and the grown group forms
// (trainer/live_membership.h).
//
// This rank's beating thread looks for the membership in the store
// (runtime/heartbeat.h WatchForMembership); after every update the ranks
// sum over the process group's Gloo group whether they have seen it, so a
// membership any rank has seen by the end of update K stops every rank
// after update K, as the preemption gate does (trainer/preemption_gate.h).
//
// Thread safety: not thread-safe; one per rank.
#ifndef RECEIPT_PARITY_TRAINER_MEMBERSHIP_GATE_H_
#define RECEIPT_PARITY_TRAINER_MEMBERSHIP_GATE_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "trainer/update_loop.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace receipt_parity {

inline constexpr char kStoppedByMembership[] = "membership_changed";

class MembershipGate : public UpdateGate {
 public:
  // `group`: the ranks' Gloo group (not null). `published` says whether
  // this rank has seen the next membership (NewMembershipPublished).
  MembershipGate(c10d::ProcessGroup* group, int rank, std::function<bool()> published);

  absl::StatusOr<std::optional<GateStop>> AfterUpdate(int64_t completed) override;

 private:
  c10d::ProcessGroup* group_;
  int rank_;
  std::function<bool()> published_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_MEMBERSHIP_GATE_H_
