#include "trainer/rank_report_builder.h"

#include "runtime/heap_trim.h"
#include "artifacts/epoch_accounting.h"

namespace receipt_parity {

RankReportBuilder::RankReportBuilder(int rank, int world_size,
                                     int64_t training_views)
    : rank_(rank) {
  report_.set_rank(rank);
  totals_.world_size = world_size;
  totals_.training_views = training_views;
  totals_.warmup_updates = kWarmupUpdates;
}

void RankReportBuilder::AddUpdate(const UpdateResult& result, int epoch,
                                  double update_seconds) {
  report_.add_update_loss(result.weighted_loss);
  report_.add_update_accepted_loss_sum(result.accepted_loss_sum);
  report_.add_update_learning_rate(result.learning_rate);
  report_.add_update_gradient_norm(result.gradient_norm);
  report_.add_update_clip_factor(result.clip_factor);
  if (updates() >= kWarmupUpdates) {
    if (!timed_begin_.has_value()) {
      timed_begin_ = std::chrono::steady_clock::now() -
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(update_seconds));
    }
    RankTiming* timing = report_.mutable_timing();
    timing->add_update_seconds(update_seconds);
    timing->add_sync_seconds(result.sync_seconds);
    timing->add_update_examples(static_cast<int32_t>(result.local_slots));
  }
  totals_.accepted_per_update.push_back(result.global_accepted);
  totals_.epoch_of_update.push_back(epoch);
}

void RankReportBuilder::AddVerdict(const UpdateVerdict& verdict) {
  report_.add_update_verified(verdict.verified ? 1 : 0);
  if (verdicts_ >= kWarmupUpdates) report_.mutable_timing()->add_check_seconds(verdict.seconds);
  ++verdicts_;
}

void RankReportBuilder::FinishLoop() {
  if (!timed_begin_.has_value()) return;
  report_.mutable_timing()->set_loop_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - *timed_begin_).count());
}

void RankReportBuilder::AddEpoch(const EpochPlan& plan, int64_t first_update,
                                 int64_t end_update) {
  if (end_update == plan.num_updates()) ++totals_.epochs_finished;
  for (const EpochRankRecord& record :
       AccountEpoch(plan, first_update, end_update)) {
    if (record.rank() == rank_) *report_.add_per_rank() = record;
  }
}

RankReport RankReportBuilder::Finish(const ReduceStats& reducer_stats,
                                     double peak_rss_mib,
                                     const std::string& final_parameter_hash) {
  RankTiming* timing = report_.mutable_timing();
  timing->set_rank(rank_);
  timing->set_peak_rss_mib(peak_rss_mib);
  timing->set_collectives(static_cast<int32_t>(reducer_stats.collectives));
  timing->set_bytes_reduced(static_cast<double>(reducer_stats.bytes));
  report_.set_final_parameter_hash(final_parameter_hash);
  return report_;
}

double PeakRssMib() {
  const int64_t kib = ProcessStatusKib("VmHWM");
  return kib < 0 ? 0 : kib / 1024.0;
}

}  // namespace receipt_parity
