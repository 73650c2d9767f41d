#include "trainer/live_membership.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "checkpoint/shard_state.h"
#include "checkpointing/run_checkpoints.h"
#include "collectives/collective_error.h"
#include "logging/glog.h"
#include "runtime/membership.h"
#include "runtime/store_host.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

// How many memberships a rank tries to form before it gives up (ranks lost
// one after another while the group forms).
constexpr int kMostFormingTries = 4;

// The newest membership from `membership` on that the store holds now.
int NewestMembership(c10d::Store& store, int membership) {
  try {
    while (store.check({MembershipKey(membership + 1)})) ++membership;
  } catch (const std::exception&) {
  }
  return membership;
}

// The group of the newest membership after `membership` (waiting up to
// `wait` for the first); nullopt when none comes.
absl::StatusOr<std::optional<GroupAfterLoss>> FormNextGroup(
    const DistributedEnv& env, c10d::Store& store, int membership,
    const std::shared_ptr<RankHeartbeat>& heartbeat, std::chrono::seconds timeout,
    std::chrono::milliseconds wait) {
  absl::Status last = absl::OkStatus();
  for (int tries = 0; tries < kMostFormingTries; ++tries) {
    absl::StatusOr<std::optional<std::vector<int>>> awaited =
        AwaitMembership(store, membership + 1, wait);
    if (!awaited.ok()) return awaited.status();
    if (!awaited->has_value()) {
      if (!last.ok()) return last;
      return std::optional<GroupAfterLoss>();
    }
    membership = NewestMembership(store, membership + 1);
    absl::StatusOr<std::optional<std::vector<int>>> ranks =
        AwaitMembership(store, membership, wait);
    if (!ranks.ok()) return ranks.status();
    const std::vector<int>& members = **ranks;
    absl::StatusOr<ProcessGroupHandle> formed =
        ReformProcessGroup(env, membership, members, timeout, heartbeat);
    if (formed.ok()) {
      GroupAfterLoss next;
      next.group = *std::move(formed);
      next.membership = membership;
      next.rank = next.group.group->getRank();
      next.world_size = next.group.group->getSize();
      return std::optional<GroupAfterLoss>(std::move(next));
    }
    LOG(WARNING) << "launch rank " << env.rank << ": membership " << membership
                 << " did not form (" << formed.status().message() << "); trying the next";
    last = formed.status();
  }
  return last;
}

// Every member's stepped updates, by group rank.
std::vector<int64_t> GatherUpdates(c10d::ProcessGroup& group, int64_t mine) {
  std::vector<at::Tensor> input = {at::full({1}, mine, at::kLong)};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < group.getSize(); ++r) output[0].push_back(at::empty({1}, at::kLong));
  group.allgather(output, input)->wait();
  std::vector<int64_t> all;
  for (const at::Tensor& t : output[0]) all.push_back(t.item<int64_t>());
  return all;
}

// `bytes` from `root` to every member (its length first).
std::string BroadcastBytes(c10d::ProcessGroup& group, int root, const std::string& bytes) {
  std::vector<at::Tensor> length = {at::full({1}, static_cast<int64_t>(bytes.size()), at::kLong)};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  group.broadcast(length, options)->wait();
  const int64_t size = length[0].item<int64_t>();
  std::vector<at::Tensor> payload = {at::empty({size}, at::kByte)};
  if (group.getRank() == root) std::memcpy(payload[0].data_ptr(), bytes.data(), bytes.size());
  group.broadcast(payload, options)->wait();
  return std::string(static_cast<const char*>(payload[0].data_ptr()), size);
}

// Per-rank entries of the sent state (outside its replica hash): whether
// the sender abandoned the update in flight, and its checks' record (the
// protobuf's bytes).
constexpr char kAbandonedEntry[] = "live/abandoned_in_flight";
constexpr char kEveryUpdateEntry[] = "live/every_update";

// What the source sends: its whole state with those two entries, in
// LibTorch's serialization (checkpoint/shard_state.h).
absl::StatusOr<std::string> Package(const LiveHandover& handover) {
  ShardState sent = handover.state.whole;
  sent.rank_tensors[kAbandonedEntry] =
      at::full({1}, handover.abandoned_in_flight ? 1 : 0, at::kLong);
  if (handover.every_update.has_value()) {
    const std::string record = handover.every_update->SerializeAsString();
    at::Tensor bytes = at::empty({static_cast<int64_t>(record.size())}, at::kByte);
    std::memcpy(bytes.data_ptr(), record.data(), record.size());
    sent.rank_tensors[kEveryUpdateEntry] = bytes;
  }
  return SerializeShardState(sent);
}

// The inverse of Package, into `handover` (its world size, local batches
// and next generation are the receiver's own, the same on every member).
absl::Status Unpack(const std::string& bytes, LiveHandover* handover) {
  absl::StatusOr<ShardState> state =
      DeserializeShardState(bytes, "the state sent over the new group");
  if (!state.ok()) return state.status();
  auto abandoned = state->rank_tensors.find(kAbandonedEntry);
  if (abandoned == state->rank_tensors.end() || abandoned->second.numel() != 1) {
    return absl::DataLossError("the state sent over the new group lacks " +
                               std::string(kAbandonedEntry));
  }
  handover->abandoned_in_flight = abandoned->second.item<int64_t>() != 0;
  state->rank_tensors.erase(abandoned);
  handover->every_update.reset();
  if (auto record = state->rank_tensors.find(kEveryUpdateEntry);
      record != state->rank_tensors.end()) {
    const at::Tensor data = record->second.contiguous();
    EveryUpdateVerdict parsed;
    if (!parsed.ParseFromArray(data.data_ptr(), static_cast<int>(data.numel()))) {
      return absl::DataLossError("the every-update record sent over the new group does not parse");
    }
    handover->every_update = std::move(parsed);
    state->rank_tensors.erase(record);
  }
  absl::StatusOr<TrainingCursor> cursor = CursorOf(*state, "the state sent over the new group");
  if (!cursor.ok()) return cursor.status();
  handover->state.cursor = *cursor;
  handover->state.whole = *std::move(state);
  return absl::OkStatus();
}

// Step 4: every member holds the state of the lowest rank furthest on.
absl::Status AgreeOnState(GroupAfterLoss& next, LiveHandover* handover) {
  c10d::ProcessGroup& group = *next.group.group;
  const int64_t mine = handover->state.cursor.total_updates;
  const std::vector<int64_t> updates = GatherUpdates(group, mine);
  const int source = static_cast<int>(std::max_element(updates.begin(), updates.end()) -
                                      updates.begin());
  absl::StatusOr<std::string> package = Package(*handover);
  if (!package.ok()) return package.status();
  const std::string own_hash = ReplicaHash(handover->state.whole);
  const std::string sent = BroadcastBytes(group, source, next.rank == source ? *package : "");
  LiveHandover received = *handover;
  if (absl::Status s = Unpack(sent, &received); !s.ok()) return s;
  const std::string source_hash = ReplicaHash(received.state.whole);
  if (mine == updates[source] && own_hash != source_hash) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", next.rank, " and rank ", source, " of membership ", next.membership,
        " both completed update ", mine, " but their states differ (replica hash ", own_hash,
        " != ", source_hash, "): the survivors cannot go on from one state"));
  }
  *handover = std::move(received);
  return absl::OkStatus();
}

// Step 5: what this rank tells the launcher of the change.
ReformedReport Report(c10d::Store& store, const DistributedEnv& env, const GroupAfterLoss& formed,
                      const LiveHandover& handover) {
  ReformedReport report;
  report.reforming_seconds =
      std::chrono::duration<double>(Clock::now() - handover.failed_at).count();
  report.updates_redone = handover.abandoned_in_flight ? 1 : 0;
  report.went_on_from_update = handover.state.cursor.total_updates;
  if (absl::Status s =
          StoreSet(store, ReformedKey(formed.membership, env.rank), FormatReformed(report));
      !s.ok()) {
    LOG(WARNING) << "launch rank " << env.rank << ": cannot report membership "
                 << formed.membership << ": " << s.message();
  }
  LOG(WARNING) << "launch rank " << env.rank << ": membership " << formed.membership
               << ": going on as rank " << formed.rank << " of " << formed.world_size
               << " from update " << report.went_on_from_update << " after "
               << report.reforming_seconds << " s";
  return report;
}

}  // namespace

absl::StatusOr<std::optional<GroupAfterLoss>> GoOnWithoutLostRanks(
    const DistributedEnv& env, int membership, ProcessGroupHandle* group,
    LiveHandover* handover, std::chrono::seconds collective_timeout,
    std::chrono::milliseconds wait) {
  std::shared_ptr<RankHeartbeat> heartbeat = group->heartbeat;
  *group = ProcessGroupHandle();  // its sockets close: the others' collectives fail too
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      ConnectToStore(env.master_addr, env.master_port, collective_timeout);
  if (!store.ok()) return store.status();
  absl::Status last = absl::OkStatus();
  // A member lost while the new group agrees: the next membership, again.
  for (int tries = 0; tries < kMostFormingTries; ++tries) {
    absl::StatusOr<std::optional<GroupAfterLoss>> next =
        FormNextGroup(env, **store, membership, heartbeat, collective_timeout, wait);
    if (!next.ok()) return next.status();
    if (!next->has_value()) {
      if (!last.ok()) return last;
      return next;
    }
    GroupAfterLoss& formed = **next;
    absl::Status agreed;
    try {
      agreed = AgreeOnState(formed, handover);
    } catch (const std::exception& e) {
      agreed = CollectiveErrorToStatus(
          e, absl::StrCat("launch rank ", env.rank, ": agreeing on the state in membership ",
                          formed.membership));
    }
    if (agreed.ok()) {
      formed.report = Report(**store, env, formed, *handover);
      return next;
    }
    if (absl::IsFailedPrecondition(agreed) || absl::IsDataLoss(agreed)) return agreed;
    LOG(WARNING) << agreed.message() << "; waiting for the next membership";
    membership = formed.membership;
    last = agreed;
  }
  return last;
}

}  // namespace receipt_parity
