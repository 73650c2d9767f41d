// run_summary.json from every rank's RankReport (rank 0 assembles it).
#ifndef RECEIPT_PARITY_ARTIFACTS_RUN_SUMMARY_BUILDER_H_
#define RECEIPT_PARITY_ARTIFACTS_RUN_SUMMARY_BUILDER_H_

#include <vector>

#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

struct RunTotals {
  int world_size = 1;
  int64_t training_views = 0;
  // Global accepted examples of every update run, in order.
  std::vector<int64_t> accepted_per_update;
  // The epoch of every update run, in order.
  std::vector<int64_t> epoch_of_update;
  // Epochs whose last update this run trained (a run stopped by
  // run.max_updates inside an epoch has not finished it).
  int64_t epochs_finished = 0;
  int warmup_updates = 2;
  // Updates per throughput window (median over windows).
  int window_updates = 5;
};

// The middle value (the mean of the two middle ones for an even count); 0
// for none.
double Median(std::vector<double> values);

// Fills the medians (save_phases_median: each phase's own median;
// blocked_seconds_median), the save / sequential-write ratio and the
// blocked / save ratio from the per-save figures already in `cost`.
void FinishCheckpointCost(CheckpointCost* cost);

// REQUIRES: reports holds one report per rank, in rank order, each with one
// update_loss per update run.
RunSummary BuildRunSummary(const RunTotals& totals,
                           const std::vector<RankReport>& reports);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_RUN_SUMMARY_BUILDER_H_
