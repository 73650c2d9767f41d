// Live membership: which of the ranks this binary's launcher started are
// still in the run, as the launcher publishes it in the store it hosts
// (runtime/launcher.h, `survivors_go_on`).
//
// Membership 0 is every launched rank. When a rank is lost (killed by a
// signal, or frozen and killed: runtime/heartbeat.h), the launcher
// publishes membership k+1: the launch ranks still running, in their order
// in k, under MembershipKey(k+1).
//
// Replacements: the launcher may start a new process for a lost launch
// rank, told to join after membership k+1
// (RECEIPT_PARITY_JOINS_AFTER_MEMBERSHIP). It says it is ready under
// JoiningKey(k+1, launch rank) once it can train; when the survivors of the
// newest membership have all reported, the launcher publishes the next one:
// those members, then the ready replacements, in that order (so a
// membership lists distinct launch ranks, not always increasing). The
// survivors see it at an update boundary (runtime/heartbeat.h
// WatchForMembership), stop there together, and the grown group forms. The survivors, whose collective failed, wait for it,
// form a new process group of its ranks (group rank = the index of their
// launch rank in it; runtime/process_group.h, ReformProcessGroup), and go
// on. Each survivor reports how its change went
// under ReformedKey(k, launch rank); the launcher reads the reports into
// membership.json.
//
// Keys live at the root of the launcher's store (the ranks' own keys live
// under "attempt-N/"), so nothing a rank writes can be mistaken for them.
#ifndef RECEIPT_PARITY_RUNTIME_MEMBERSHIP_H_
#define RECEIPT_PARITY_RUNTIME_MEMBERSHIP_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

std::string MembershipKey(int membership);
std::string ReformedKey(int membership, int launch_rank);
std::string JoiningKey(int joins_after, int launch_rank);

// "0,2" <-> {0, 2}. ParseMembership: InvalidArgument for anything else
// than distinct non-negative integers separated by commas.
std::string FormatMembership(const std::vector<int>& launch_ranks);
absl::StatusOr<std::vector<int>> ParseMembership(const std::string& text);

// The launcher: publishes membership `membership` (Unavailable with
// c10d's message when the store cannot be written).
absl::Status PublishMembership(c10d::Store& store, int membership,
                               const std::vector<int>& launch_ranks);

// A survivor: waits up to `timeout` for membership `membership`. nullopt
// when none comes in time (the failure this rank saw was not a lost
// rank's); DataLoss when what is there does not parse.
absl::StatusOr<std::optional<std::vector<int>>> AwaitMembership(
    c10d::Store& store, int membership, std::chrono::milliseconds timeout);

// What a survivor reports of one change: seconds from its failed
// collective to the new group's first agreement, the updates its new group
// redid (the abandoned one, when no survivor had stepped it), and the
// update the survivors went on from.
struct ReformedReport {
  double reforming_seconds = 0;
  int updates_redone = 0;
  int64_t went_on_from_update = 0;
};
std::string FormatReformed(const ReformedReport& report);
std::optional<ReformedReport> ParseReformed(const std::string& text);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_MEMBERSHIP_H_
