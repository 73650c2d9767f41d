// Heartbeats: how this binary's launcher tells a rank that stopped
// answering (frozen: SIGSTOP, a debugger, a machine that stalls) from one
// that is only slow, without waiting for a collective's timeout.
//
// Every rank under the launcher beats: a thread of its own, over a store
// connection of its own (so that a call the rank's training thread has in
// flight never delays it), sets the store key HeartbeatKey(rank) to
// "<beat> <updates completed>" every interval, the beat counting up from 1
// and the updates being what PublishUpdatesCompleted last said (the
// launcher names the update a lost rank had reached in membership.json). A
// process that is stopped stops every thread, its heartbeat too.
//
// The launcher (HeartbeatWatch) reads every rank's key and calls a rank
// frozen when its value has not changed for the watch's timeout since it
// first appeared; a rank that has not beaten yet (starting up) is judged
// by the rendezvous timeout instead.
#ifndef RECEIPT_PARITY_RUNTIME_HEARTBEAT_H_
#define RECEIPT_PARITY_RUNTIME_HEARTBEAT_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/status/statusor.h"

namespace receipt_parity {

// The store key of `rank`'s heartbeat, at the store's root.
std::string HeartbeatKey(int rank);

// The interval a watch of `timeout` asks of the ranks: a tenth of it, at
// least 20 ms.
std::chrono::milliseconds HeartbeatInterval(std::chrono::milliseconds timeout);

// Process-wide: the updates this rank has completed (the update loop says
// it after each; an atomic store, nothing else).
void PublishUpdatesCompleted(int64_t updates);

// Process-wide, for survivors that go on (runtime/membership.h): from now
// on the beating thread also looks, at every beat, for membership
// `membership` in the store, and NewMembershipPublished says whether it has
// seen it (reset by each call here). An atomic read on the training
// thread; the store is asked only by the beating thread.
void WatchForMembership(int membership);
bool NewMembershipPublished();

// A rank's beating thread; it stops (and joins) when destroyed.
// Thread safety: the object is used by the thread that made it.
class RankHeartbeat {
 public:
  // Connects to the store at `address`:`port` and starts beating every
  // `interval`. Internal when the store cannot be reached.
  static absl::StatusOr<std::unique_ptr<RankHeartbeat>> Start(const std::string& address,
                                                              int port, int rank,
                                                              std::chrono::milliseconds interval);
  ~RankHeartbeat();
  RankHeartbeat(const RankHeartbeat&) = delete;
  RankHeartbeat& operator=(const RankHeartbeat&) = delete;

 private:
  RankHeartbeat(c10::intrusive_ptr<c10d::Store> store, int rank,
                std::chrono::milliseconds interval);
  void Beat();

  c10::intrusive_ptr<c10d::Store> store_;
  const std::string key_;
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread thread_;
};

// The launcher's view of its ranks' heartbeats (over the store it hosts).
// Thread safety: one thread at a time.
class HeartbeatWatch {
 public:
  HeartbeatWatch(c10::intrusive_ptr<c10d::Store> store, int world_size,
                 std::chrono::milliseconds timeout);

  // Reads every rank's heartbeat for which `watched[rank]` is true, and
  // returns those whose value has not changed for the timeout since it was
  // first seen (each rank once: it is not watched again). A rank whose key
  // cannot be read is not judged this time.
  std::vector<int> Frozen(const std::vector<bool>& watched);

  // The updates `rank` had completed at its last beat seen; -1 before any.
  int64_t UpdatesCompleted(int rank) const { return ranks_[rank].updates; }
  // Seconds from `rank`'s last changed beat to now (0 before any).
  double SecondsSinceLastBeat(int rank) const;

  // A new process takes `rank`'s place (a replacement): its predecessor's
  // beat is deleted from the store and forgotten, and the rank is watched
  // again from its first beat.
  void Restart(int rank);

 private:
  struct Seen {
    std::string value;
    std::chrono::steady_clock::time_point changed{};
    int64_t updates = -1;
    bool reported = false;
  };

  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::vector<Seen> ranks_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_HEARTBEAT_H_
