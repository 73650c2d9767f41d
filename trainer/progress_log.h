// What rank 0 logs while a run trains, and the line that ends it.
//
// Every log_every_updates completed updates (counted over the whole run):
//   "update T/P (epoch E) rank-0 loss share L, R updates/s, ETA S s"
// with P the planned total (run.max_updates when set, else updates per
// epoch x epochs), R this attempt's updates over its wall time so far.
// Other ranks log nothing.
//
// Thread safety: not thread-safe.
#ifndef RECEIPT_PARITY_TRAINER_PROGRESS_LOG_H_
#define RECEIPT_PARITY_TRAINER_PROGRESS_LOG_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "metrics/validation_report.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

struct ProgressPlan {
  bool writer = false;
  // <= 0: never logs progress.
  int64_t log_every_updates = 0;
  // run.max_updates; 0 for none.
  int64_t max_updates = 0;
  int epochs = 0;
};

class ProgressLog {
 public:
  // The attempt's clock starts here.
  explicit ProgressLog(const ProgressPlan& plan);

  // Whether the update that completes `completed_updates` is logged.
  bool Due(int64_t completed_updates) const;

  // Call after every completed update; logs when Due. `run_updates`: the
  // updates this attempt ran, this one included.
  void AfterUpdate(int64_t completed_updates, int64_t updates_per_epoch,
                   int epoch, double loss_share, int64_t run_updates) const;

  // The progress line for the given figures (what AfterUpdate logs).
  // REQUIRES: run_updates > 0, elapsed_seconds > 0.
  std::string Line(int64_t completed_updates, int64_t updates_per_epoch,
                   int epoch, double loss_share, int64_t run_updates,
                   double elapsed_seconds) const;

 private:
  ProgressPlan plan_;
  std::chrono::steady_clock::time_point start_;
};

// Logs the line that ends a run on rank 0: updates, workers, final loss,
// validation accuracy and counts, where the artifacts are.
void LogRunFinished(int64_t run_updates, int world_size,
                    const RunSummary& summary,
                    const ValidationReport& validation,
                    const std::string& artifact_dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_PROGRESS_LOG_H_
