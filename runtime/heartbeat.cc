#include "runtime/heartbeat.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/membership.h"
#include "runtime/store_host.h"

namespace receipt_parity {
namespace {

std::atomic<int64_t> updates_completed{0};
// WatchForMembership's membership (-1: none) and whether it was seen.
std::atomic<int> watched_membership{-1};
std::atomic<bool> watched_membership_seen{false};

using Clock = std::chrono::steady_clock;

// The updates in a heartbeat's value "<beat> <updates>"; -1 when absent.
int64_t UpdatesOf(const std::string& value) {
  const std::vector<std::string> parts = absl::StrSplit(value, ' ');
  int64_t updates = -1;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &updates)) return -1;
  return updates;
}

}  // namespace

std::string HeartbeatKey(int rank) { return absl::StrCat("heartbeat/", rank); }

std::chrono::milliseconds HeartbeatInterval(std::chrono::milliseconds timeout) {
  return std::max(std::chrono::milliseconds(20), timeout / 10);
}

void PublishUpdatesCompleted(int64_t updates) {
  updates_completed.store(updates, std::memory_order_relaxed);
}

void WatchForMembership(int membership) {
  watched_membership_seen.store(false);
  watched_membership.store(membership);
}

bool NewMembershipPublished() { return watched_membership_seen.load(std::memory_order_relaxed); }

absl::StatusOr<std::unique_ptr<RankHeartbeat>> RankHeartbeat::Start(
    const std::string& address, int port, int rank, std::chrono::milliseconds interval) {
  // A beat that cannot be delivered within a few intervals is late anyway.
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      ConnectToStore(address, port, std::max(std::chrono::milliseconds(1000), 4 * interval));
  if (!store.ok()) return store.status();
  return std::unique_ptr<RankHeartbeat>(new RankHeartbeat(*store, rank, interval));
}

RankHeartbeat::RankHeartbeat(c10::intrusive_ptr<c10d::Store> store, int rank,
                             std::chrono::milliseconds interval)
    : store_(std::move(store)), key_(HeartbeatKey(rank)), interval_(interval) {
  thread_ = std::thread([this] { Beat(); });
}

RankHeartbeat::~RankHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

void RankHeartbeat::Beat() {
  int64_t beat = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const std::string value =
        absl::StrCat(++beat, " ", updates_completed.load(std::memory_order_relaxed));
    try {
      store_->set(key_, std::vector<uint8_t>(value.begin(), value.end()));
      const int membership = watched_membership.load();
      if (membership >= 0 && !watched_membership_seen.load() &&
          store_->check({MembershipKey(membership)}) && watched_membership.load() == membership) {
        watched_membership_seen.store(true);
      }
    } catch (const std::exception&) {
      // The launcher is gone or busy: the next beat tries again; a rank
      // whose launcher died dies with it (PR_SET_PDEATHSIG).
    }
    stop_requested_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

HeartbeatWatch::HeartbeatWatch(c10::intrusive_ptr<c10d::Store> store, int world_size,
                               std::chrono::milliseconds timeout)
    : store_(std::move(store)), timeout_(timeout), ranks_(world_size) {}

std::vector<int> HeartbeatWatch::Frozen(const std::vector<bool>& watched) {
  std::vector<int> frozen;
  const Clock::time_point now = Clock::now();
  for (int rank = 0; rank < static_cast<int>(ranks_.size()); ++rank) {
    Seen& seen = ranks_[rank];
    if (!watched[rank] || seen.reported) continue;
    const std::optional<std::string> value = ValueIfPresent(*store_, HeartbeatKey(rank));
    if (!value.has_value()) continue;  // not beaten yet, or not read this time
    if (*value != seen.value) {
      seen.value = *value;
      seen.changed = now;
      seen.updates = UpdatesOf(*value);
      continue;
    }
    if (now - seen.changed >= timeout_) {
      seen.reported = true;
      frozen.push_back(rank);
    }
  }
  return frozen;
}

void HeartbeatWatch::Restart(int rank) {
  try {
    store_->deleteKey(HeartbeatKey(rank));
  } catch (const std::exception&) {
    // Not there, or the store is busy: the new process's first beat
    // replaces it.
  }
  ranks_[rank] = Seen();
}

double HeartbeatWatch::SecondsSinceLastBeat(int rank) const {
  const Seen& seen = ranks_[rank];
  if (seen.value.empty()) return 0;
  return std::chrono::duration<double>(Clock::now() - seen.changed).count();
}

}  // namespace receipt_parity
