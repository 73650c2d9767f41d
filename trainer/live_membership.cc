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

// `group`, formed for `membership`, with this rank's place in it.
GroupAfterLoss Formed(ProcessGroupHandle group, int membership) {
  GroupAfterLoss formed;
  formed.group = std::move(group);
  formed.membership = membership;
  formed.rank = formed.group.group->getRank();
  formed.world_size = formed.group.group->getSize();
  return formed;
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
    if (formed.ok()) return std::optional<GroupAfterLoss>(Formed(*std::move(formed), membership));
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
// the sender abandoned the update in flight, its checks' record (the
// protobuf's bytes), its replica hash (the state as it holds it in
// memory), and what a replacement does not know of the group: the world
// size and local batches the state was trained at, the next generation a
// save writes and the run folder's attempt.
constexpr char kAbandonedEntry[] = "live/abandoned_in_flight";
constexpr char kEveryUpdateEntry[] = "live/every_update";
constexpr char kReplicaHashEntry[] = "live/replica_hash";
constexpr char kGroupEntry[] = "live/world_size,next_generation,attempt";
constexpr char kLocalBatchEntry[] = "live/local_batch";

at::Tensor BytesTensor(const std::string& bytes) {
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

std::string TensorBytes(const at::Tensor& tensor) {
  const at::Tensor data = tensor.contiguous();
  return std::string(static_cast<const char*>(data.data_ptr()), data.numel());
}

// What the source sends: its whole state with those entries (`own_hash`:
// its state's ReplicaHash), in LibTorch's serialization
// (checkpoint/shard_state.h).
absl::StatusOr<std::string> Package(const LiveHandover& handover, const std::string& own_hash) {
  ShardState sent = handover.state.whole;
  sent.rank_tensors[kAbandonedEntry] =
      at::full({1}, handover.abandoned_in_flight ? 1 : 0, at::kLong);
  if (handover.every_update.has_value()) {
    sent.rank_tensors[kEveryUpdateEntry] = BytesTensor(handover.every_update->SerializeAsString());
  }
  sent.rank_tensors[kReplicaHashEntry] = BytesTensor(own_hash);
  sent.rank_tensors[kGroupEntry] = at::tensor(
      std::vector<int64_t>{handover.state.world_size, handover.state.next_generation,
                           handover.attempt},
      at::kLong);
  sent.rank_tensors[kLocalBatchEntry] =
      at::tensor(std::vector<int64_t>(handover.state.local_batch.begin(),
                                      handover.state.local_batch.end()),
                 at::kLong);
  return SerializeShardState(sent);
}

// Takes entry `name` out of `state`; DataLoss when it is not there.
absl::StatusOr<at::Tensor> TakeEntry(ShardState& state, const char* name) {
  auto entry = state.rank_tensors.find(name);
  if (entry == state.rank_tensors.end()) {
    return absl::DataLossError(
        absl::StrCat("the state sent over the new group lacks ", name));
  }
  at::Tensor tensor = entry->second.contiguous();
  state.rank_tensors.erase(entry);
  return tensor;
}

// The group's figures of a sent state into `handover`.
absl::Status UnpackGroup(ShardState& state, LiveHandover* handover) {
  absl::StatusOr<at::Tensor> group = TakeEntry(state, kGroupEntry);
  if (!group.ok()) return group.status();
  absl::StatusOr<at::Tensor> local = TakeEntry(state, kLocalBatchEntry);
  if (!local.ok()) return local.status();
  if (group->numel() != 3 || group->scalar_type() != at::kLong ||
      local->scalar_type() != at::kLong) {
    return absl::DataLossError(absl::StrCat("the state sent over the new group has a bad ",
                                            kGroupEntry, " or ", kLocalBatchEntry));
  }
  handover->state.world_size = static_cast<int>(group->data_ptr<int64_t>()[0]);
  handover->state.next_generation = group->data_ptr<int64_t>()[1];
  handover->attempt = static_cast<int>(group->data_ptr<int64_t>()[2]);
  handover->state.local_batch.assign(local->data_ptr<int64_t>(),
                                     local->data_ptr<int64_t>() + local->numel());
  return absl::OkStatus();
}

// The inverse of Package, into `handover`; the sender's replica hash into
// `sent_hash`.
absl::Status Unpack(const std::string& bytes, LiveHandover* handover, std::string* sent_hash) {
  absl::StatusOr<ShardState> state =
      DeserializeShardState(bytes, "the state sent over the new group");
  if (!state.ok()) return state.status();
  absl::StatusOr<at::Tensor> abandoned = TakeEntry(*state, kAbandonedEntry);
  if (!abandoned.ok()) return abandoned.status();
  if (abandoned->numel() != 1) {
    return absl::DataLossError(absl::StrCat("the state sent over the new group has a bad ",
                                            kAbandonedEntry));
  }
  handover->abandoned_in_flight = abandoned->item<int64_t>() != 0;
  absl::StatusOr<at::Tensor> hash = TakeEntry(*state, kReplicaHashEntry);
  if (!hash.ok()) return hash.status();
  *sent_hash = TensorBytes(*hash);
  if (absl::Status s = UnpackGroup(*state, handover); !s.ok()) return s;
  handover->every_update.reset();
  if (state->rank_tensors.count(kEveryUpdateEntry) > 0) {
    const std::string record = TensorBytes(*TakeEntry(*state, kEveryUpdateEntry));
    EveryUpdateVerdict parsed;
    if (!parsed.ParseFromString(record)) {
      return absl::DataLossError("the every-update record sent over the new group does not parse");
    }
    handover->every_update = std::move(parsed);
  }
  absl::StatusOr<TrainingCursor> cursor = CursorOf(*state, "the state sent over the new group");
  if (!cursor.ok()) return cursor.status();
  handover->state.cursor = *cursor;
  handover->state.whole = *std::move(state);
  return absl::OkStatus();
}

// The updates a member holds: those it stepped, or -1 for a replacement
// that holds no state yet.
int64_t UpdatesHeld(const LiveHandover& handover) {
  return handover.filled ? handover.state.cursor.total_updates : -1;
}

// Step 4: every member holds the state of the lowest rank furthest on,
// checked against the replica hash the source computed from its memory: a
// member at the same update compares its own state's, a replacement (and
// every member) the received state's.
absl::Status AgreeOnState(GroupAfterLoss& next, LiveHandover* handover) {
  c10d::ProcessGroup& group = *next.group.group;
  const int64_t mine = UpdatesHeld(*handover);
  const std::vector<int64_t> updates = GatherUpdates(group, mine);
  const int source = static_cast<int>(std::max_element(updates.begin(), updates.end()) -
                                      updates.begin());
  if (updates[source] < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "membership ", next.membership,
        " holds only replacements: no member has the state to go on from"));
  }
  // A member at the source's update hashes the state it holds (once: the
  // source sends that hash); one behind hashes the state it receives.
  const bool at_source_update = mine == updates[source];
  const std::string held_hash = at_source_update ? ReplicaHash(handover->state.whole) : "";
  std::string package;
  if (next.rank == source) {
    absl::StatusOr<std::string> packed = Package(*handover, held_hash);
    if (!packed.ok()) return packed.status();
    package = *std::move(packed);
  }
  const std::string sent = BroadcastBytes(group, source, package);
  LiveHandover received = *handover;
  std::string source_hash;
  if (absl::Status s = Unpack(sent, &received, &source_hash); !s.ok()) return s;
  const std::string own_hash = at_source_update ? held_hash : ReplicaHash(received.state.whole);
  if (own_hash != source_hash) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", next.rank, " of membership ", next.membership,
        at_source_update
            ? absl::StrCat(" and rank ", source, " both completed update ", mine,
                           " but their states differ (replica hash ", own_hash, " != ",
                           source_hash, "): the survivors cannot go on from one state")
            : absl::StrCat(" received a state from rank ", source,
                           " whose replica hash differs from the sender's (", own_hash, " != ",
                           source_hash, "): it cannot go on from it")));
  }
  received.filled = true;
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

// Steps 4 and 5 in the group `formed`: an error a collective threw is
// converted (a member lost meanwhile).
absl::Status AgreeAndReport(c10d::Store& store, const DistributedEnv& env,
                            GroupAfterLoss& formed, LiveHandover* handover) {
  absl::Status agreed;
  try {
    agreed = AgreeOnState(formed, handover);
  } catch (const std::exception& e) {
    agreed = CollectiveErrorToStatus(
        e, absl::StrCat("launch rank ", env.rank, ": agreeing on the state in membership ",
                        formed.membership));
  }
  if (agreed.ok()) formed.report = Report(store, env, formed, *handover);
  return agreed;
}

// A replacement's membership: the first after `after` that lists it and
// is the newest published (memberships that do not list it are losses
// published before it was taken in). NotFound when none comes in `wait`.
absl::StatusOr<std::pair<int, std::vector<int>>> AwaitMembershipWithMe(
    c10d::Store& store, int launch_rank, int after, std::chrono::milliseconds wait) {
  const Clock::time_point deadline = Clock::now() + wait;
  int membership = after + 1;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    absl::StatusOr<std::optional<std::vector<int>>> members =
        AwaitMembership(store, membership, std::max(left, std::chrono::milliseconds(1)));
    if (!members.ok()) return members.status();
    if (!members->has_value()) {
      return absl::NotFoundError(absl::StrCat("launch rank ", launch_rank,
                                              ": no membership took this replacement in"));
    }
    const int newest = NewestMembership(store, membership);
    if (newest != membership) {
      membership = newest;
      continue;
    }
    const std::vector<int>& ranks = **members;
    if (std::find(ranks.begin(), ranks.end(), launch_rank) != ranks.end()) {
      return std::make_pair(membership, ranks);
    }
    ++membership;
  }
}

}  // namespace

absl::StatusOr<GroupAfterLoss> JoinAsReplacement(const DistributedEnv& env,
                                                 LiveHandover* handover,
                                                 std::chrono::seconds collective_timeout,
                                                 std::chrono::milliseconds wait) {
  std::shared_ptr<RankHeartbeat> heartbeat;
  if (env.heartbeat_interval_ms > 0) {
    absl::StatusOr<std::unique_ptr<RankHeartbeat>> started =
        RankHeartbeat::Start(env.master_addr, env.master_port, env.rank,
                             std::chrono::milliseconds(env.heartbeat_interval_ms));
    if (!started.ok()) return started.status();
    heartbeat = *std::move(started);
  }
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      ConnectToStore(env.master_addr, env.master_port, collective_timeout);
  if (!store.ok()) return store.status();
  if (absl::Status s = StoreSet(**store, JoiningKey(env.joins_after_membership, env.rank), "ready");
      !s.ok()) {
    return s;
  }
  LOG(WARNING) << "launch rank " << env.rank << ": a replacement, ready to join after membership "
               << env.joins_after_membership;
  *handover = LiveHandover();
  int after = env.joins_after_membership;
  absl::Status last = absl::OkStatus();
  for (int tries = 0; tries < kMostFormingTries; ++tries) {
    absl::StatusOr<std::pair<int, std::vector<int>>> found =
        AwaitMembershipWithMe(**store, env.rank, after, wait);
    if (!found.ok()) return last.ok() ? found.status() : last;
    handover->failed_at = Clock::now();
    absl::StatusOr<ProcessGroupHandle> formed =
        ReformProcessGroup(env, found->first, found->second, collective_timeout, heartbeat);
    after = found->first;
    if (!formed.ok()) {
      last = formed.status();
      continue;
    }
    GroupAfterLoss next = Formed(*std::move(formed), found->first);
    const absl::Status agreed = AgreeAndReport(**store, env, next, handover);
    if (agreed.ok()) return next;
    if (absl::IsFailedPrecondition(agreed) || absl::IsDataLoss(agreed)) return agreed;
    LOG(WARNING) << agreed.message() << "; waiting for the next membership";
    last = agreed;
  }
  return last;
}

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
    const absl::Status agreed = AgreeAndReport(**store, env, formed, handover);
    if (agreed.ok()) return next;
    if (absl::IsFailedPrecondition(agreed) || absl::IsDataLoss(agreed)) return agreed;
    LOG(WARNING) << agreed.message() << "; waiting for the next membership";
    membership = formed.membership;
    last = agreed;
  }
  return last;
}

}  // namespace receipt_parity
