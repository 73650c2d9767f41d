// This rank's RankReport and the run's RunTotals, one update at a time:
// what rank 0 later turns into run_summary.json
// (artifacts/run_summary_builder.h) and run_manifest.json's per-update
// counts.
//
// Per update: this rank's loss share, and after the first
// kWarmupUpdates updates of the attempt its update time, sync time and
// slot count; the update's global accepted count and epoch; the
// every-update checks' verdict and seconds, as they settle. Per epoch:
// this rank's accounting of the updates run (artifacts/epoch_accounting.h).
// At the end: peak memory, the reducer's totals, the final parameter hash.
//
// Thread safety: not thread-safe.
#ifndef RECEIPT_PARITY_TRAINER_RANK_REPORT_BUILDER_H_
#define RECEIPT_PARITY_TRAINER_RANK_REPORT_BUILDER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "reducers/gradient_reducer.h"
#include "samplers/epoch_plan.h"
#include "artifacts/run_summary.pb.h"
#include "artifacts/run_summary_builder.h"
#include "trainer/update_step.h"

namespace receipt_parity {

class RankReportBuilder {
 public:
  // Updates of an attempt left out of the timings (allocation, first-touch).
  static constexpr int kWarmupUpdates = 2;

  RankReportBuilder(int rank, int world_size, int64_t training_views);

  // After every completed update of `epoch`; `update_seconds` is its wall
  // time.
  void AddUpdate(const UpdateResult& result, int epoch, double update_seconds);

  // The every-update checks' verdict of the next update without one, in
  // update order (they settle after their update, trainer/update_step.h):
  // whether it passed, and after the warm-up its seconds.
  void AddVerdict(const UpdateVerdict& verdict);

  // After an epoch's updates [first_update, end_update) ran (an empty
  // range too: the epoch is then reported with no updates).
  void AddEpoch(const EpochPlan& plan, int64_t first_update,
                int64_t end_update);

  // Updates added so far.
  int64_t updates() const {
    return static_cast<int64_t>(totals_.accepted_per_update.size());
  }

  // Once the loop and its saves are done (a background save's last write
  // included): RankTiming.loop_seconds, from the start of the first timed
  // update (after the warm-up) to now; nothing when no update was timed.
  void FinishLoop();

  // Every update's global accepted count, epoch, etc. (the same on every
  // rank).
  const RunTotals& totals() const { return totals_; }

  // The report with its final figures. Call once, after the last update.
  RankReport Finish(const ReduceStats& reducer_stats, double peak_rss_mib,
                    const std::string& final_parameter_hash);

 private:
  int rank_;
  RankReport report_;
  RunTotals totals_;
  // Verdicts added so far.
  int64_t verdicts_ = 0;
  // When the first timed update began.
  std::optional<std::chrono::steady_clock::time_point> timed_begin_;
};

// This process's peak resident set (VmHWM) in MiB; 0 when unknown. Not
// getrusage's ru_maxrss: Linux carries that over from the launcher across
// fork and exec, so every worker would report at least the launcher's peak.
double PeakRssMib();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RANK_REPORT_BUILDER_H_
