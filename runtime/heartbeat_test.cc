#include "runtime/heartbeat.h"

#include <chrono>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/membership.h"
#include "runtime/process_group.h"
#include "runtime/store_host.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Clock = std::chrono::steady_clock;

c10::intrusive_ptr<c10d::TCPStore> HostOnFreePort(int* port) {
  *port = *PickFreePort();
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      HostStore("127.0.0.1", *port, std::chrono::seconds(5));
  EXPECT_TRUE(store.ok()) << store.status();
  return *store;
}

// Polls the watch until it calls a rank frozen or `limit` passes.
std::vector<int> FrozenWithin(HeartbeatWatch& watch, const std::vector<bool>& watched,
                              std::chrono::milliseconds limit) {
  const Clock::time_point end = Clock::now() + limit;
  while (Clock::now() < end) {
    std::vector<int> frozen = watch.Frozen(watched);
    if (!frozen.empty()) return frozen;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

TEST(HeartbeatTest, IntervalIsATenthOfTheTimeoutAndAtLeast20Ms) {
  EXPECT_EQ(HeartbeatInterval(std::chrono::milliseconds(3000)), std::chrono::milliseconds(300));
  EXPECT_EQ(HeartbeatInterval(std::chrono::milliseconds(50)), std::chrono::milliseconds(20));
}

TEST(HeartbeatTest, ARankThatStopsBeatingIsCalledFrozenOnceAndTheOthersAreNot) {
  int port = 0;
  c10::intrusive_ptr<c10d::TCPStore> store = HostOnFreePort(&port);
  const std::chrono::milliseconds timeout(400);
  PublishUpdatesCompleted(7);
  auto beating = RankHeartbeat::Start("127.0.0.1", port, 0, HeartbeatInterval(timeout));
  auto stopping = RankHeartbeat::Start("127.0.0.1", port, 1, HeartbeatInterval(timeout));
  ASSERT_TRUE(beating.ok()) << beating.status();
  ASSERT_TRUE(stopping.ok()) << stopping.status();
  HeartbeatWatch watch(store, 2, timeout);
  // Both beat: neither is frozen over two timeouts.
  EXPECT_THAT(FrozenWithin(watch, {true, true}, 2 * timeout), IsEmpty());
  EXPECT_EQ(watch.UpdatesCompleted(0), 7);
  EXPECT_EQ(watch.UpdatesCompleted(1), 7);
  stopping->reset();
  const Clock::time_point stopped = Clock::now();
  EXPECT_THAT(FrozenWithin(watch, {true, true}, 4 * timeout), ElementsAre(1));
  const double waited = std::chrono::duration<double>(Clock::now() - stopped).count();
  EXPECT_GE(watch.SecondsSinceLastBeat(1), 0.4);
  // Detected within the timeout, an interval and a poll (and slack).
  EXPECT_LT(waited, 0.4 + 0.04 + 0.5);
  // Reported once; rank 0 still beats.
  EXPECT_THAT(FrozenWithin(watch, {true, true}, 2 * timeout), IsEmpty());
}

TEST(HeartbeatTest, ARankNotWatchedOrNotYetBeatingIsNeverCalledFrozen) {
  int port = 0;
  c10::intrusive_ptr<c10d::TCPStore> store = HostOnFreePort(&port);
  HeartbeatWatch watch(store, 3, std::chrono::milliseconds(100));
  auto beating = RankHeartbeat::Start("127.0.0.1", port, 2, std::chrono::milliseconds(20));
  ASSERT_TRUE(beating.ok());
  beating->reset();
  // Rank 2 stopped beating but is not watched; ranks 0 and 1 never beat.
  EXPECT_THAT(FrozenWithin(watch, {true, true, false}, std::chrono::milliseconds(400)),
              IsEmpty());
  EXPECT_EQ(watch.UpdatesCompleted(0), -1);
}

TEST(HeartbeatTest, AReplacementIsWatchedFromItsOwnFirstBeat) {
  int port = 0;
  c10::intrusive_ptr<c10d::TCPStore> store = HostOnFreePort(&port);
  const std::chrono::milliseconds timeout(200);
  HeartbeatWatch watch(store, 1, timeout);
  auto first = RankHeartbeat::Start("127.0.0.1", port, 0, HeartbeatInterval(timeout));
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(FrozenWithin(watch, {true}, timeout), IsEmpty());
  first->reset();
  EXPECT_THAT(FrozenWithin(watch, {true}, 4 * timeout), ElementsAre(0));
  // Its replacement has not beaten yet: the old beat is gone, not judged.
  watch.Restart(0);
  EXPECT_FALSE(store->check({HeartbeatKey(0)}));
  EXPECT_THAT(FrozenWithin(watch, {true}, 3 * timeout), IsEmpty());
  EXPECT_EQ(watch.UpdatesCompleted(0), -1);
  // Once it beats and stops, it is frozen again.
  auto second = RankHeartbeat::Start("127.0.0.1", port, 0, HeartbeatInterval(timeout));
  ASSERT_TRUE(second.ok());
  EXPECT_THAT(FrozenWithin(watch, {true}, timeout), IsEmpty());
  second->reset();
  EXPECT_THAT(FrozenWithin(watch, {true}, 4 * timeout), ElementsAre(0));
}

TEST(HeartbeatTest, TheBeatingThreadSeesTheWatchedMembership) {
  int port = 0;
  c10::intrusive_ptr<c10d::TCPStore> store = HostOnFreePort(&port);
  auto beating = RankHeartbeat::Start("127.0.0.1", port, 0, std::chrono::milliseconds(20));
  ASSERT_TRUE(beating.ok());
  WatchForMembership(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(NewMembershipPublished());
  // Another membership is not the watched one.
  ASSERT_TRUE(PublishMembership(*store, 4, {0, 1}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(NewMembershipPublished());
  ASSERT_TRUE(PublishMembership(*store, 3, {0, 1, 2}).ok());
  const Clock::time_point end = Clock::now() + std::chrono::seconds(5);
  while (!NewMembershipPublished() && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(NewMembershipPublished());
  // A new watch starts unseen.
  WatchForMembership(5);
  EXPECT_FALSE(NewMembershipPublished());
}

TEST(HeartbeatTest, StartNamesAStoreThatDoesNotListen) {
  const int port = *PickFreePort();
  absl::StatusOr<std::unique_ptr<RankHeartbeat>> heartbeat =
      RankHeartbeat::Start("127.0.0.1", port, 0, std::chrono::milliseconds(20));
  ASSERT_FALSE(heartbeat.ok());
  EXPECT_THAT(std::string(heartbeat.status().message()),
              ::testing::HasSubstr(absl::StrCat("127.0.0.1:", port)));
}

}  // namespace
}  // namespace receipt_parity
