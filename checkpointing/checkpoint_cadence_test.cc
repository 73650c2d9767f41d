#include "checkpointing/checkpoint_cadence.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

CheckpointPlan Every(int every_updates) {
  CheckpointPlan plan;
  plan.folder = "unused";
  plan.every_updates = every_updates;
  plan.keep_last = 2;
  return plan;
}

struct Save {
  int64_t generation;
  TrainingCursor cursor;
};

// Records every save; the n-th save (0-based) reports bytes 1000 + n and
// seconds as given.
class FakeSaver {
 public:
  explicit FakeSaver(std::vector<double> seconds = {}, bool fails = false)
      : seconds_(std::move(seconds)), fails_(fails) {}

  SaveGenerationCall Call() {
    return [this](int64_t generation, const TrainingCursor& cursor)
               -> absl::StatusOr<SaveResult> {
      if (fails_) return absl::UnavailableError("rank 1 never confirmed");
      const size_t n = saves.size();
      saves.push_back({generation, cursor});
      SaveResult result;
      result.generation = generation;
      result.bytes = 1000 + static_cast<int64_t>(n);
      result.seconds = n < seconds_.size() ? seconds_[n] : 0;
      result.sequential_write_seconds = result.seconds / 4;
      result.phases.set_shard(result.seconds / 2);
      return result;
    };
  }

  std::vector<Save> saves;

 private:
  std::vector<double> seconds_;
  bool fails_;
};

// Runs `epochs` epochs of `per_epoch` updates from `start` through the
// cadence, as the update loop does.
void RunEpochs(CheckpointCadence& cadence, int epochs, int64_t per_epoch,
               TrainingCursor start = {}) {
  int64_t total = start.total_updates;
  for (int epoch = start.epoch; epoch < epochs; ++epoch) {
    for (int64_t u = epoch == start.epoch ? start.update_in_epoch : 0; u < per_epoch; ++u) {
      ++total;
      ASSERT_TRUE(cadence.AfterUpdate(total, epoch, u, per_epoch).ok());
    }
  }
}

TEST(CheckpointCadenceTest, SavesEveryNCompletedUpdates) {
  CheckpointCadence cadence(Every(3), 1, nullptr);
  EXPECT_TRUE(cadence.saves());
  EXPECT_FALSE(cadence.SavesAfter(1));
  EXPECT_FALSE(cadence.SavesAfter(2));
  EXPECT_TRUE(cadence.SavesAfter(3));
  EXPECT_FALSE(cadence.SavesAfter(4));
  EXPECT_TRUE(cadence.SavesAfter(6));
}

TEST(CheckpointCadenceTest, NoPlanNeverSavesNorCallsTheSaver) {
  CheckpointCadence cadence(std::nullopt, 1, nullptr);  // a null saver would crash
  EXPECT_FALSE(cadence.saves());
  EXPECT_FALSE(cadence.SavesAfter(3));
  RunEpochs(cadence, 2, 4);
  EXPECT_EQ(cadence.next_generation(), 1);
  EXPECT_EQ(cadence.cost().generations_saved(), 0);
  EXPECT_EQ(cadence.cost().save_seconds_size(), 0);
}

TEST(CheckpointCadenceTest, CursorIsTheNextUpdateOrTheNextEpochsFirst) {
  TrainingCursor mid = CheckpointCadence::CursorAfter(6, 1, 1, 4);
  EXPECT_EQ(mid.total_updates, 6);
  EXPECT_EQ(mid.epoch, 1);
  EXPECT_EQ(mid.update_in_epoch, 2);
  TrainingCursor end = CheckpointCadence::CursorAfter(8, 1, 3, 4);
  EXPECT_EQ(end.total_updates, 8);
  EXPECT_EQ(end.epoch, 2);
  EXPECT_EQ(end.update_in_epoch, 0);
}

TEST(CheckpointCadenceTest, SavesTheRightUpdatesWithConsecutiveGenerations) {
  FakeSaver saver;
  CheckpointCadence cadence(Every(3), 7, saver.Call());
  RunEpochs(cadence, 2, 4);  // updates 1..8
  ASSERT_EQ(saver.saves.size(), 2u);
  EXPECT_EQ(saver.saves[0].generation, 7);
  EXPECT_EQ(saver.saves[0].cursor.total_updates, 3);
  EXPECT_EQ(saver.saves[0].cursor.epoch, 0);
  EXPECT_EQ(saver.saves[0].cursor.update_in_epoch, 3);
  EXPECT_EQ(saver.saves[1].generation, 8);
  EXPECT_EQ(saver.saves[1].cursor.total_updates, 6);
  EXPECT_EQ(saver.saves[1].cursor.epoch, 1);
  EXPECT_EQ(saver.saves[1].cursor.update_in_epoch, 2);
  EXPECT_EQ(cadence.next_generation(), 9);
}

TEST(CheckpointCadenceTest, SaveAtTheEpochsLastUpdateResumesAtTheNextEpoch) {
  FakeSaver saver;
  CheckpointCadence cadence(Every(4), 1, saver.Call());
  RunEpochs(cadence, 2, 4);
  ASSERT_EQ(saver.saves.size(), 2u);
  EXPECT_EQ(saver.saves[0].cursor.total_updates, 4);
  EXPECT_EQ(saver.saves[0].cursor.epoch, 1);
  EXPECT_EQ(saver.saves[0].cursor.update_in_epoch, 0);
  EXPECT_EQ(saver.saves[1].cursor.total_updates, 8);
  EXPECT_EQ(saver.saves[1].cursor.epoch, 2);
  EXPECT_EQ(saver.saves[1].cursor.update_in_epoch, 0);
}

TEST(CheckpointCadenceTest, ResumedRunCountsFromTheWholeRunsUpdates) {
  FakeSaver saver;
  CheckpointCadence cadence(Every(3), 3, saver.Call());
  RunEpochs(cadence, 2, 4, TrainingCursor{5, 1, 1});  // updates 6, 7, 8
  ASSERT_EQ(saver.saves.size(), 1u);
  EXPECT_EQ(saver.saves[0].generation, 3);
  EXPECT_EQ(saver.saves[0].cursor.total_updates, 6);
  EXPECT_EQ(saver.saves[0].cursor.epoch, 1);
  EXPECT_EQ(saver.saves[0].cursor.update_in_epoch, 2);
}

TEST(CheckpointCadenceTest, CostBooksEverySaveAndTheMedians) {
  FakeSaver saver({0.4, 0.1, 0.2});
  CheckpointCadence cadence(Every(2), 1, saver.Call());
  RunEpochs(cadence, 1, 6);  // saves after 2, 4, 6
  const CheckpointCost cost = cadence.cost();
  EXPECT_EQ(cost.generations_saved(), 3);
  EXPECT_DOUBLE_EQ(cost.bytes_per_generation(), 1002);  // the last save's
  ASSERT_EQ(cost.save_seconds_size(), 3);
  EXPECT_DOUBLE_EQ(cost.save_seconds(0), 0.4);
  EXPECT_DOUBLE_EQ(cost.save_seconds(2), 0.2);
  ASSERT_EQ(cost.sequential_write_seconds_size(), 3);
  EXPECT_DOUBLE_EQ(cost.sequential_write_seconds(1), 0.025);
  EXPECT_DOUBLE_EQ(cost.save_seconds_median(), 0.2);
  EXPECT_DOUBLE_EQ(cost.sequential_write_seconds_median(), 0.05);
  EXPECT_DOUBLE_EQ(cost.save_vs_sequential_ratio(), 4);
  // Where each save went, in save order, and each phase's median.
  ASSERT_EQ(cost.save_phases_size(), 3);
  EXPECT_DOUBLE_EQ(cost.save_phases(0).shard(), 0.2);
  EXPECT_DOUBLE_EQ(cost.save_phases_median().shard(), 0.1);
}

TEST(CheckpointCadenceTest, FailedSaveIsReturnedAndNotBooked) {
  FakeSaver saver({}, /*fails=*/true);
  CheckpointCadence cadence(Every(1), 1, saver.Call());
  absl::Status status = cadence.AfterUpdate(1, 0, 0, 4);
  EXPECT_EQ(status, absl::UnavailableError("rank 1 never confirmed"));
  EXPECT_EQ(cadence.cost().generations_saved(), 0);
  EXPECT_EQ(cadence.cost().save_seconds_size(), 0);
}

}  // namespace
}  // namespace receipt_parity

namespace receipt_parity {
namespace {

// A background save's write that waits until the test releases it, so
// that a test controls what is in flight.
class HeldWrites {
 public:
  StartSaveCall Start(bool copy_fails = false, bool write_fails = false) {
    return [this, copy_fails, write_fails](int64_t generation, const TrainingCursor& cursor)
               -> absl::StatusOr<AsyncSaveWriter::Write> {
      if (copy_fails) return absl::FailedPreconditionError("model/w is not finite");
      started.push_back({generation, cursor});
      return AsyncSaveWriter::Write([this, generation, write_fails]() -> absl::StatusOr<SaveResult> {
        std::unique_lock<std::mutex> lock(mu_);
        released_.wait(lock, [this] { return open_; });
        if (write_fails) return absl::UnavailableError("rank 1 never confirmed");
        SaveResult result;
        result.generation = generation;
        result.bytes = 500;
        result.seconds = 0.25;
        return result;
      });
    };
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    released_.notify_all();
  }

  std::vector<Save> started;

 private:
  std::mutex mu_;
  std::condition_variable released_;
  bool open_ = false;
};

TEST(CheckpointCadenceInBackgroundTest, TheLoopGoesOnWhileAWriteIsInFlight) {
  HeldWrites writes;
  CheckpointCadence cadence = CheckpointCadence::InBackground(Every(2), 4, writes.Start());
  ASSERT_TRUE(cadence.AfterUpdate(1, 0, 0, 10).ok());
  ASSERT_TRUE(cadence.AfterUpdate(2, 0, 1, 10).ok());  // starts generation 4, held
  ASSERT_EQ(writes.started.size(), 1u);
  EXPECT_EQ(writes.started[0].generation, 4);
  EXPECT_EQ(writes.started[0].cursor.total_updates, 2);
  // The write is held, yet the loop runs on: nothing booked yet.
  ASSERT_TRUE(cadence.AfterUpdate(3, 0, 2, 10).ok());
  EXPECT_EQ(cadence.cost().generations_saved(), 0);
  EXPECT_EQ(cadence.cost().blocked_seconds_size(), 1);
  writes.Release();
  ASSERT_TRUE(cadence.Finish().ok());
  const CheckpointCost cost = cadence.cost();
  EXPECT_TRUE(cost.async());
  EXPECT_EQ(cost.generations_saved(), 1);
  EXPECT_DOUBLE_EQ(cost.save_seconds_median(), 0.25);
  EXPECT_EQ(cost.saves_that_waited(), 0);
  EXPECT_LT(cost.blocked_seconds(0), 0.25);
  EXPECT_EQ(cadence.next_generation(), 5);
}

TEST(CheckpointCadenceInBackgroundTest, AtMostOneWriteInFlightAndTheWaitIsBooked) {
  HeldWrites writes;
  CheckpointCadence cadence = CheckpointCadence::InBackground(Every(1), 1, writes.Start());
  ASSERT_TRUE(cadence.AfterUpdate(1, 0, 0, 10).ok());
  // The second save must wait for the first: release it from another
  // thread a little later.
  std::thread releaser([&writes] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    writes.Release();
  });
  ASSERT_TRUE(cadence.AfterUpdate(2, 0, 1, 10).ok());
  releaser.join();
  // By the time the second was started, the first was booked.
  EXPECT_EQ(cadence.cost().generations_saved(), 1);
  ASSERT_TRUE(cadence.Finish().ok());
  const CheckpointCost cost = cadence.cost();
  EXPECT_EQ(cost.generations_saved(), 2);
  EXPECT_EQ(cost.saves_that_waited(), 1);
  EXPECT_GE(cost.waited_seconds(), 0.04);
  ASSERT_EQ(cost.blocked_seconds_size(), 2);
  EXPECT_GE(cost.blocked_seconds(1), cost.waited_seconds());
  EXPECT_GT(cost.blocked_vs_save_ratio(), 0);
  EXPECT_TRUE(cadence.Finish().ok());  // nothing left in flight
}

TEST(CheckpointCadenceInBackgroundTest, AWriteThatFinishedIsBookedWithoutAWait) {
  HeldWrites writes;
  writes.Release();  // every write returns at once
  CheckpointCadence cadence = CheckpointCadence::InBackground(Every(1), 1, writes.Start());
  ASSERT_TRUE(cadence.AfterUpdate(1, 0, 0, 10).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the write is done by now
  ASSERT_TRUE(cadence.AfterUpdate(2, 0, 1, 10).ok());
  ASSERT_TRUE(cadence.Finish().ok());
  EXPECT_EQ(cadence.cost().generations_saved(), 2);
  EXPECT_EQ(cadence.cost().saves_that_waited(), 0);
}

TEST(CheckpointCadenceInBackgroundTest, AFailedWriteFailsTheNextSaveOrTheFinish) {
  {
    HeldWrites writes;
    CheckpointCadence cadence = CheckpointCadence::InBackground(
        Every(1), 1, writes.Start(/*copy_fails=*/false, /*write_fails=*/true));
    ASSERT_TRUE(cadence.AfterUpdate(1, 0, 0, 10).ok());
    writes.Release();
    absl::Status next = cadence.AfterUpdate(2, 0, 1, 10);
    EXPECT_EQ(next.code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(writes.started.size(), 1u);  // the next save did not start
    EXPECT_EQ(cadence.cost().generations_saved(), 0);
  }
  {
    HeldWrites writes;
    CheckpointCadence cadence = CheckpointCadence::InBackground(
        Every(1), 1, writes.Start(/*copy_fails=*/false, /*write_fails=*/true));
    ASSERT_TRUE(cadence.AfterUpdate(1, 0, 0, 10).ok());
    writes.Release();
    EXPECT_EQ(cadence.Finish().code(), absl::StatusCode::kUnavailable);
  }
}

TEST(CheckpointCadenceInBackgroundTest, AFailedCopyStartsNothing) {
  HeldWrites writes;
  CheckpointCadence cadence =
      CheckpointCadence::InBackground(Every(1), 1, writes.Start(/*copy_fails=*/true));
  absl::Status s = cadence.AfterUpdate(1, 0, 0, 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(writes.started.empty());
  EXPECT_TRUE(cadence.Finish().ok());
}

TEST(CheckpointCadenceTest, ASynchronousSaveBooksItsWholeTimeAsBlocked) {
  CheckpointCadence cadence(Every(1), 1, [](int64_t generation, const TrainingCursor&) {
    SaveResult result;
    result.generation = generation;
    result.seconds = 0.5;
    result.blocked_seconds = 0.5;
    return absl::StatusOr<SaveResult>(result);
  });
  ASSERT_TRUE(cadence.AfterUpdate(1, 0, 0, 10).ok());
  ASSERT_TRUE(cadence.Finish().ok());
  const CheckpointCost cost = cadence.cost();
  EXPECT_FALSE(cost.async());
  EXPECT_DOUBLE_EQ(cost.blocked_seconds_median(), 0.5);
  EXPECT_DOUBLE_EQ(cost.blocked_vs_save_ratio(), 1.0);
}

}  // namespace
}  // namespace receipt_parity
