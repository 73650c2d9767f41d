#include "trainer/preemption_gate.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/strings/str_cat.h"
#include "collectives/local_process_group.h"
#include "collectives/sum_across_ranks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using std::chrono::seconds;

// Asks `gate` after updates 1, 2, ... (each "update" a `pause`) until it
// stops, at most `limit`; returns the update it stopped after (0: never).
int64_t StopsAfter(PreemptionGate& gate, std::chrono::microseconds pause, int64_t limit,
                   GateStop* stop = nullptr) {
  for (int64_t u = 1; u <= limit; ++u) {
    std::this_thread::sleep_for(pause);
    absl::StatusOr<std::optional<GateStop>> asked = gate.AfterUpdate(u);
    EXPECT_TRUE(asked.ok()) << asked.status();
    if (asked.ok() && asked->has_value()) {
      if (stop != nullptr) *stop = **asked;
      return u;
    }
  }
  return 0;
}

TEST(PreemptionGateTest, OneRankStopsAfterTheUpdateTheSignalCameIn) {
  int64_t now = 0;
  PreemptionGate gate(nullptr, 0, seconds(20), [&] { return now >= 3; }, [] { return 0.0; });
  GateStop stop;
  for (int64_t u = 1; u <= 10; ++u) {
    now = u;
    absl::StatusOr<std::optional<GateStop>> asked = gate.AfterUpdate(u);
    ASSERT_TRUE(asked.ok());
    if (asked->has_value()) {
      stop = **asked;
      EXPECT_EQ(u, 3);
      break;
    }
  }
  EXPECT_EQ(stop.reason, kStoppedByPreemption);
  EXPECT_TRUE(stop.save);
}

// Only rank 1 receives the signal, by the end of update 40; both stop after
// update 40.
TEST(PreemptionGateTest, EveryRankStopsAfterTheSameUpdate) {
  std::vector<int64_t> stopped(2, -1);
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    int64_t done = 0;
    PreemptionGate gate(&group, rank, seconds(20), [&] { return rank == 1 && done >= 40; },
                        [] { return 0.0; });
    for (int64_t u = 1; u <= 200; ++u) {
      // Ranks out of step, as real ones are: rank 0's updates take longer.
      std::this_thread::sleep_for(std::chrono::microseconds(rank == 0 ? 700 : 100));
      done = u;
      absl::StatusOr<std::optional<GateStop>> asked = gate.AfterUpdate(u);
      if (!asked.ok()) return asked.status();
      if (asked->has_value()) {
        stopped[rank] = u;
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(stopped[0], 40);
  EXPECT_EQ(stopped[1], 40);
}

// Rank 0's longest save is summed in, so rank 1 decides the save alike.
TEST(PreemptionGateTest, EveryRankDecidesTheSaveFromRankZerosLongestSave) {
  std::vector<int> saves(2, -1);
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    PreemptionGate gate(&group, rank, seconds(20), [&] { return rank == 0; },
                        [&] { return rank == 0 ? 8.0 : 0.0; });
    for (int64_t u = 1; u <= 3; ++u) {
      absl::StatusOr<std::optional<GateStop>> asked = gate.AfterUpdate(u);
      if (!asked.ok()) return asked.status();
      if (asked->has_value()) {
        if (u != 1) return absl::InternalError(absl::StrCat("stopped after ", u));
        saves[rank] = (*asked)->save ? 1 : 0;
        return absl::OkStatus();
      }
    }
    return absl::InternalError("never stopped");
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(saves, (std::vector<int>{0, 0}));  // 2 x 8 > 0.75 x 20
}

// Without a signal nothing stops, and the polls keep the group in step
// (the group's next collective is not disturbed).
TEST(PreemptionGateTest, NoSignalNoStop) {
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    PreemptionGate gate(&group, rank, seconds(20), [] { return false; }, [] { return 0.0; });
    for (int64_t u = 1; u <= 50; ++u) {
      absl::StatusOr<std::optional<GateStop>> asked = gate.AfterUpdate(u);
      if (!asked.ok()) return asked.status();
      if (asked->has_value()) return absl::InternalError("stopped without a signal");
    }
    at::Tensor one = at::ones({1}, at::kDouble);
    if (absl::Status s = SumAcrossRanks(group, one, "after"); !s.ok()) return s;
    if (one.item<double>() != 2) return absl::InternalError("the next sum is wrong");
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
}

TEST(PreemptionGateTest, ASaveThatDoesNotFitTheGracePeriodIsLeftOut) {
  PreemptionGate fits(nullptr, 0, seconds(20), [] { return true; }, [] { return 7.0; });
  GateStop stop;
  ASSERT_EQ(StopsAfter(fits, std::chrono::microseconds(0), 3, &stop), 1);
  EXPECT_TRUE(stop.save);  // 2 x 7 <= 15
  PreemptionGate too_long(nullptr, 0, seconds(20), [] { return true; }, [] { return 8.0; });
  ASSERT_EQ(StopsAfter(too_long, std::chrono::microseconds(0), 3, &stop), 1);
  EXPECT_FALSE(stop.save);  // 2 x 8 > 15
}

}  // namespace
}  // namespace receipt_parity
