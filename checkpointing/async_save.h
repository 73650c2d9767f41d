// Checkpoint generations written in the background (checkpoint { async:
// true }): the update loop copies the state a save needs
// (checkpointing/run_checkpoints.h, CopyForSave) and goes on while this writer's
// thread writes, verifies and advertises it (WriteSaveCopy, the same
// commit rule as a synchronous save: every shard durable and verified
// before the MANIFEST).
//
// At most one write is in flight: the caller waits for it (Wait) before it
// starts the next, and at the end of the run. A write's error comes back
// from that Wait; the run then fails as a synchronous save's error makes
// it fail. Until a write is advertised the newest generation on disk is
// the one before, so a rank that dies meanwhile loses the save in flight
// as well: a restart redoes up to 2 x every_updates updates.
//
// Thread safety: one caller thread (the training thread); the write runs
// on the writer's own thread and must touch nothing the training thread
// changes.
#ifndef RECEIPT_PARITY_CHECKPOINTING_ASYNC_SAVE_H_
#define RECEIPT_PARITY_CHECKPOINTING_ASYNC_SAVE_H_

#include <atomic>
#include <functional>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "checkpointing/run_checkpoints.h"

namespace receipt_parity {

class AsyncSaveWriter {
 public:
  using Write = std::function<absl::StatusOr<SaveResult>()>;

  AsyncSaveWriter() = default;
  // Waits for the write in flight (its result is dropped: call Wait()).
  ~AsyncSaveWriter();
  AsyncSaveWriter(const AsyncSaveWriter&) = delete;
  AsyncSaveWriter& operator=(const AsyncSaveWriter&) = delete;

  // A write was started and its result not yet taken by Wait().
  bool pending() const { return worker_.joinable(); }
  // A write is still running (pending and not finished): a Wait() now
  // would block.
  bool running() const { return pending() && !finished_.load(std::memory_order_acquire); }

  // Runs `write` in the writer's thread. REQUIRES: !pending().
  void Start(Write write);

  // Waits for the pending write and returns its result; nullopt when none
  // is pending.
  std::optional<absl::StatusOr<SaveResult>> Wait();

 private:
  std::thread worker_;
  std::atomic<bool> finished_{false};
  absl::StatusOr<SaveResult> result_;  // written by worker_, read after join
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINTING_ASYNC_SAVE_H_
