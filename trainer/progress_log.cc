#include "trainer/progress_log.h"

#include <algorithm>
#include <sstream>

#include "logging/glog.h"

namespace receipt_parity {

ProgressLog::ProgressLog(const ProgressPlan& plan)
    : plan_(plan), start_(std::chrono::steady_clock::now()) {}

bool ProgressLog::Due(int64_t completed_updates) const {
  return plan_.writer && plan_.log_every_updates > 0 &&
         completed_updates % plan_.log_every_updates == 0;
}

void ProgressLog::AfterUpdate(int64_t completed_updates,
                              int64_t updates_per_epoch, int epoch,
                              double loss_share, int64_t run_updates) const {
  if (!Due(completed_updates)) return;
  const double elapsed = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start_)
                             .count();
  LOG(INFO) << Line(completed_updates, updates_per_epoch, epoch, loss_share,
                    run_updates, elapsed);
}

std::string ProgressLog::Line(int64_t completed_updates,
                              int64_t updates_per_epoch, int epoch,
                              double loss_share, int64_t run_updates,
                              double elapsed_seconds) const {
  const int64_t planned = plan_.max_updates > 0
                              ? plan_.max_updates
                              : updates_per_epoch * plan_.epochs;
  std::ostringstream line;
  line << "update " << completed_updates << "/" << planned << " (epoch "
       << epoch << ") rank-0 loss share " << loss_share << ", "
       << run_updates / elapsed_seconds << " updates/s, ETA "
       << std::max<double>(0, (planned - completed_updates) * elapsed_seconds /
                                  run_updates)
       << " s";
  return line.str();
}

void LogRunFinished(int64_t run_updates, int world_size,
                    const RunSummary& summary,
                    const ValidationReport& validation,
                    const std::string& artifact_dir) {
  LOG(INFO) << "trained " << run_updates << " updates on " << world_size
            << " worker(s): final loss " << summary.final_loss()
            << ", validation accuracy " << validation.accuracy() << " ("
            << validation.unique_ids_counted() << " receipts counted once, "
            << validation.duplicates_dropped() << " duplicates dropped); "
            << "artifacts in " << artifact_dir;
}

}  // namespace receipt_parity
