#include "artifacts/run_summary_builder.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "artifacts/straggler_summary.h"

namespace receipt_parity {
double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid]
                                : (values[mid - 1] + values[mid]) / 2;
}

void FinishCheckpointCost(CheckpointCost* cost) {
  cost->set_save_seconds_median(
      Median({cost->save_seconds().begin(), cost->save_seconds().end()}));
  cost->set_sequential_write_seconds_median(Median(
      {cost->sequential_write_seconds().begin(), cost->sequential_write_seconds().end()}));
  if (cost->sequential_write_seconds_median() > 0) {
    cost->set_save_vs_sequential_ratio(cost->save_seconds_median() /
                                       cost->sequential_write_seconds_median());
  }
  cost->set_blocked_seconds_median(
      Median({cost->blocked_seconds().begin(), cost->blocked_seconds().end()}));
  if (cost->save_seconds_median() > 0) {
    cost->set_blocked_vs_save_ratio(cost->blocked_seconds_median() / cost->save_seconds_median());
  }
  SavePhases* median = cost->mutable_save_phases_median();
  median->Clear();
  if (cost->save_phases().empty()) return;
  const google::protobuf::Descriptor* descriptor = SavePhases::descriptor();
  const google::protobuf::Reflection* reflection = SavePhases::GetReflection();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const google::protobuf::FieldDescriptor* phase = descriptor->field(f);
    std::vector<double> seconds;
    for (const SavePhases& save : cost->save_phases()) {
      seconds.push_back(reflection->GetDouble(save, phase));
    }
    reflection->SetDouble(median, phase, Median(std::move(seconds)));
  }
}

namespace {

// Per epoch: the sum and count of its updates' losses.
using EpochLosses = std::map<int64_t, std::pair<double, int64_t>>;

// The loss curve: the ranks' shares add up to each update's loss.
EpochLosses AddLossCurve(const RunTotals& totals,
                         const std::vector<RankReport>& reports,
                         RunSummary* summary) {
  const int64_t updates = static_cast<int64_t>(totals.accepted_per_update.size());
  int64_t seen = 0;
  EpochLosses epoch_loss;
  for (int64_t u = 0; u < updates; ++u) {
    double loss = 0;
    double accepted_loss = 0;
    bool every_rank_sent_it = true;
    for (const RankReport& report : reports) {
      loss += report.update_loss(u);
      every_rank_sent_it = every_rank_sent_it && u < report.update_accepted_loss_sum_size();
      if (every_rank_sent_it) accepted_loss += report.update_accepted_loss_sum(u);
    }
    seen += totals.accepted_per_update[u];
    LossPoint* point = summary->add_loss_curve();
    point->set_update(static_cast<int32_t>(u));
    point->set_examples_seen(static_cast<int32_t>(seen));
    point->set_loss(loss);
    if (every_rank_sent_it && totals.accepted_per_update[u] > 0) {
      point->set_mean_loss(accepted_loss / static_cast<double>(totals.accepted_per_update[u]));
    }
    point->set_learning_rate(reports[0].update_learning_rate(u));
    point->set_gradient_norm(reports[0].update_gradient_norm(u));
    point->set_clip_factor(reports[0].update_clip_factor(u));
    if (u < reports[0].update_verified_size()) point->set_verified(reports[0].update_verified(u) != 0);
    for (const RankReport& report : reports) {
      point->add_rank_clip_factors(report.update_clip_factor(u));
    }
    auto& [sum, count] = epoch_loss[totals.epoch_of_update[u]];
    sum += loss;
    ++count;
  }
  if (updates > 0) summary->set_final_loss(summary->loss_curve(updates - 1).loss());
  return epoch_loss;
}

// Per rank and epoch, then per epoch; every rank's timing.
void AddEpochs(const RunTotals& totals, const std::vector<RankReport>& reports,
               const EpochLosses& epoch_loss, RunSummary* summary) {
  std::map<int64_t, EpochRecord> epochs;
  for (const RankReport& report : reports) {
    for (const EpochRankRecord& rec : report.per_rank()) {
      *summary->add_per_rank() = rec;
      EpochRecord& e = epochs[rec.epoch()];
      e.set_epoch(rec.epoch());
      e.set_accepted_examples(e.accepted_examples() + rec.accepted_examples());
      e.set_masked_slots(e.masked_slots() + rec.masked_slots());
      e.set_duplicate_slots(e.duplicate_slots() + rec.duplicate_slots());
    }
    *summary->add_timing() = report.timing();
  }
  for (auto& [epoch, record] : epochs) {
    record.set_training_views(static_cast<int32_t>(totals.training_views));
    record.set_every_view_once(record.accepted_examples() ==
                                   totals.training_views &&
                               record.duplicate_slots() == 0);
    auto it = epoch_loss.find(epoch);
    const auto [sum, count] =
        it != epoch_loss.end() ? it->second : std::pair<double, int64_t>{0, 0};
    record.set_mean_loss(count > 0 ? sum / count : 0);
    *summary->add_epochs() = record;
  }
  summary->set_epochs_completed(static_cast<int32_t>(totals.epochs_finished));
}

// Throughput: every rank steps in lockstep; the slowest rank's update time
// is the update's time. Examples/s is the median over windows.
void AddThroughput(const RunTotals& totals, const std::vector<RankReport>& reports,
                   RunSummary* summary) {
  const int64_t updates = static_cast<int64_t>(totals.accepted_per_update.size());
  const int warmup = totals.warmup_updates;
  std::vector<double> update_seconds;
  std::vector<double> sync_seconds;
  std::vector<double> check_seconds;
  std::vector<int64_t> examples;
  for (int64_t u = warmup; u < updates; ++u) {
    double slowest = 0;
    double sync = 0;
    double check = 0;
    for (const RankReport& report : reports) {
      const RankTiming& t = report.timing();
      const int64_t i = u - warmup;
      if (i < t.update_seconds_size()) {
        slowest = std::max(slowest, t.update_seconds(i));
        sync = std::max(sync, t.sync_seconds(i));
      }
      if (i < t.check_seconds_size()) check = std::max(check, t.check_seconds(i));
    }
    update_seconds.push_back(slowest);
    sync_seconds.push_back(sync);
    check_seconds.push_back(check);
    examples.push_back(totals.accepted_per_update[u]);
  }
  std::vector<double> window_rates;
  const size_t window = std::max(1, totals.window_updates);
  for (size_t start = 0; start + window <= update_seconds.size();
       start += window) {
    double seconds = 0;
    int64_t count = 0;
    for (size_t i = start; i < start + window; ++i) {
      seconds += update_seconds[i];
      count += examples[i];
    }
    if (seconds > 0) window_rates.push_back(count / seconds);
  }
  summary->set_examples_per_second(Median(window_rates));
  const double total_update =
      std::accumulate(update_seconds.begin(), update_seconds.end(), 0.0);
  const double total_sync =
      std::accumulate(sync_seconds.begin(), sync_seconds.end(), 0.0);
  const double total_check =
      std::accumulate(check_seconds.begin(), check_seconds.end(), 0.0);
  if (!update_seconds.empty()) {
    summary->set_sync_seconds_per_update(total_sync / update_seconds.size());
    summary->set_sync_share(total_update > 0 ? total_sync / total_update : 0);
    summary->set_check_seconds_per_update(total_check / update_seconds.size());
    summary->set_check_share(total_update > 0 ? total_check / total_update : 0);
  }
}

}  // namespace

RunSummary BuildRunSummary(const RunTotals& totals,
                           const std::vector<RankReport>& reports) {
  RunSummary summary;
  summary.set_world_size(totals.world_size);
  summary.set_updates(static_cast<int32_t>(totals.accepted_per_update.size()));
  summary.set_warmup_updates(totals.warmup_updates);
  const EpochLosses epoch_loss = AddLossCurve(totals, reports, &summary);
  AddEpochs(totals, reports, epoch_loss, &summary);
  AddThroughput(totals, reports, &summary);
  double slowest_loop = 0;
  for (const RankReport& report : reports) {
    slowest_loop = std::max(slowest_loop, report.timing().loop_seconds());
  }
  if (slowest_loop > 0) {
    const size_t warmup = std::min(totals.accepted_per_update.size(),
                                   static_cast<size_t>(std::max(0, totals.warmup_updates)));
    const int64_t accepted = std::accumulate(totals.accepted_per_update.begin() + warmup,
                                             totals.accepted_per_update.end(), int64_t{0});
    summary.set_examples_per_second_with_saves(static_cast<double>(accepted) / slowest_loop);
  }
  const std::vector<RankLateness> lateness = SummarizeLateness(reports);
  for (const RankLateness& rank : lateness) *summary.add_lateness() = rank;
  summary.set_straggler_rank(StragglerRank(lateness));
  if (!lateness.empty()) summary.set_lateness_method(kLatenessMethod);
  summary.set_parity("not_checked");
  return summary;
}

}  // namespace receipt_parity
