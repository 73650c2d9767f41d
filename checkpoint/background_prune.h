// Pruning old checkpoint generations off the update loop: rank 0 starts
// PruneGenerations (checkpoint/save_generation.h) in a thread once a new
// generation is advertised, and waits for it before the next save and at
// the end of the run, so at most one prune is in flight and none runs
// while a generation folder is being made.
//
// Pruning is crash-safe on its own (each deleted generation's MANIFEST is
// unlinked and its folder fsynced before the rest goes), so a process that
// dies mid-prune leaves only folders without MANIFEST, which recovery
// passes over. Until a prune finishes, keep_last + 1 generations may be on
// disk.
//
// Thread safety: one caller thread (rank 0's training thread).
#ifndef RECEIPT_PARITY_CHECKPOINT_BACKGROUND_PRUNE_H_
#define RECEIPT_PARITY_CHECKPOINT_BACKGROUND_PRUNE_H_

#include <cstdint>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace receipt_parity {

class BackgroundPruner {
 public:
  // REQUIRES: keep_last >= 1.
  BackgroundPruner(std::string root, int keep_last);
  // Waits for the prune in flight (its error is dropped: call Wait()).
  ~BackgroundPruner();
  BackgroundPruner(const BackgroundPruner&) = delete;
  BackgroundPruner& operator=(const BackgroundPruner&) = delete;

  // Waits for the previous prune, then prunes up to `newest` in a thread.
  // Errors: the previous prune's, and then nothing is started.
  absl::Status Start(int64_t newest);

  // Waits for the prune in flight, if any. Errors: the first error of a
  // prune not yet reported (each is reported once).
  absl::Status Wait();

 private:
  std::string root_;
  int keep_last_;
  std::thread worker_;
  absl::Status result_;  // written by worker_, read after join
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_BACKGROUND_PRUNE_H_
