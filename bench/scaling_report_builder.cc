#include "bench/scaling_report_builder.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "artifacts/run_summary_builder.h"

namespace receipt_parity {
namespace {

double Ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0;
}

double LargestRss(const SystemRun& run) {
  double largest = 0;
  for (double rss : run.peak_rss_mib()) largest = std::max(largest, rss);
  return largest;
}

TargetCheck Check(std::string target, const std::string& model,
                  double measured, const std::string& comparison,
                  double threshold) {
  TargetCheck check;
  check.set_target(std::move(target));
  check.set_model(model);
  check.set_measured(measured);
  check.set_comparison(comparison);
  check.set_threshold(threshold);
  check.set_met(comparison == ">=" ? measured >= threshold : measured <= threshold);
  return check;
}

// The ratios of ours_two_workers_mpi. REQUIRES: the other ratios are filled.
void FillMpiRatios(ModelScaling* m) {
  const SystemRun& mpi = m->ours_two_workers_mpi();
  m->set_ours_mpi_over_ddp_two_workers(
      Ratio(mpi.examples_per_second(), m->ddp_two_workers().examples_per_second()));
  m->set_ours_mpi_scaling(
      Ratio(mpi.examples_per_second(), m->ours_one_worker().examples_per_second()));
  m->set_ours_mpi_over_ceiling(
      Ratio(m->ours_mpi_scaling(), m->two_process_ceiling()));
  m->set_rss_ratio_to_bare_mpi(
      Ratio(LargestRss(mpi), LargestRss(m->bare_libtorch())));
}

// Issue 49's physical floor, where the shared-memory all-reduce and the
// bare pair were measured; ours over MPI against it where MPI ran.
void FillPhysicalFloor(ModelScaling* m) {
  const double pair = m->bare_two_processes().examples_per_second();
  const double shm = m->shm_allreduce_seconds_gradient();
  if (shm <= 0 || pair <= 0) return;
  const double examples = 2.0 * m->batch_per_rank();
  m->set_physical_floor_examples_per_second(examples / (examples / pair + shm));
  if (m->has_ours_two_workers_mpi()) {
    m->set_ours_mpi_over_physical_floor(Ratio(m->ours_two_workers_mpi().examples_per_second(),
                                              m->physical_floor_examples_per_second()));
  }
}

}  // namespace

SystemRun FromRunSummary(const RunSummary& summary) {
  SystemRun run;
  run.set_system("this_project");
  run.set_world_size(summary.world_size());
  run.set_updates(summary.updates());
  run.set_examples_per_second(summary.examples_per_second());
  run.set_sync_seconds_per_update(summary.sync_seconds_per_update());
  run.set_sync_share(summary.sync_share());
  run.set_check_seconds_per_update(summary.check_seconds_per_update());
  run.set_check_share(summary.check_share());
  std::vector<double> slowest;
  for (const RankTiming& timing : summary.timing()) {
    for (int i = 0; i < timing.update_seconds_size(); ++i) {
      if (static_cast<int>(slowest.size()) <= i) slowest.push_back(0);
      slowest[i] = std::max(slowest[i], timing.update_seconds(i));
    }
    run.add_peak_rss_mib(timing.peak_rss_mib());
  }
  run.set_median_update_seconds(Median(slowest));
  if (!summary.timing().empty() && summary.updates() > 0) {
    run.set_bytes_reduced_per_update(summary.timing(0).bytes_reduced() / summary.updates());
  }
  return run;
}

SystemRun FromDdp(const DdpBaselineResult& result) {
  SystemRun run;
  run.set_system("pytorch_ddp");
  run.set_world_size(result.world_size());
  run.set_updates(result.updates());
  run.set_examples_per_second(result.examples_per_second());
  run.set_median_update_seconds(result.median_update_seconds());
  run.set_sync_seconds_per_update(result.sync_seconds_per_update());
  run.set_sync_share(result.sync_share());
  *run.mutable_peak_rss_mib() = result.peak_rss_mib();
  return run;
}

SystemRun FromBare(const BareStepResult& result) {
  SystemRun run;
  run.set_system("bare_libtorch");
  run.set_world_size(1);
  run.set_updates(result.warmup_updates() + result.updates());
  run.set_examples_per_second(result.examples_per_second());
  run.set_median_update_seconds(result.median_update_seconds());
  run.add_peak_rss_mib(result.peak_rss_mib());
  return run;
}

SystemRun FromBarePair(const BareStepResult& first, const BareStepResult& second) {
  SystemRun run;
  run.set_system("bare_libtorch");
  run.set_world_size(2);
  run.set_updates(std::max(first.warmup_updates() + first.updates(),
                           second.warmup_updates() + second.updates()));
  const double slower =
      std::max(first.median_update_seconds(), second.median_update_seconds());
  run.set_median_update_seconds(slower);
  run.set_examples_per_second(Ratio(first.batch() + second.batch(), slower));
  run.add_peak_rss_mib(first.peak_rss_mib());
  run.add_peak_rss_mib(second.peak_rss_mib());
  return run;
}

void KeepBestRound(const SystemRun& round, SystemRun* best) {
  const bool first = best->round_examples_per_second().empty();
  auto rounds = best->round_examples_per_second();
  if (first || round.examples_per_second() > best->examples_per_second()) {
    *best = round;
    *best->mutable_round_examples_per_second() = std::move(rounds);
  }
  best->add_round_examples_per_second(round.examples_per_second());
}

void KeepFastestAllreduce(const DdpBaselineResult& round, ModelScaling* m) {
  auto fastest = [](double kept, double seen) {
    return kept > 0 && (seen <= 0 || kept < seen) ? kept : seen;
  };
  m->set_allreduce_seconds_gradient(
      fastest(m->allreduce_seconds_gradient(), round.allreduce_seconds_gradient()));
  m->set_allreduce_seconds_1kib(
      fastest(m->allreduce_seconds_1kib(), round.allreduce_seconds_1kib()));
}

namespace {

// Synchronized over per-rank batch norm at the same micro-batches: the
// examples/s and the largest per-rank peak RSS.
void FillBatchNormRatios(ModelScaling* m) {
  const struct {
    const SystemRun& sync;
    const SystemRun& per_rank;
    void (ModelScaling::*set_examples_per_second)(double);
    void (ModelScaling::*set_peak_rss)(double);
  } pairs[] = {
      {m->ours_two_workers_sync_batch_norm(), m->ours_two_workers_per_rank_batch_norm(),
       &ModelScaling::set_sync_batch_norm_examples_per_second_ratio,
       &ModelScaling::set_sync_batch_norm_peak_rss_ratio},
      {m->ours_two_workers_sync_batch_norm_accumulation_2(),
       m->ours_two_workers_per_rank_batch_norm_accumulation_2(),
       &ModelScaling::set_sync_batch_norm_accumulation_2_examples_per_second_ratio,
       &ModelScaling::set_sync_batch_norm_accumulation_2_peak_rss_ratio},
      {m->ours_two_workers_sync_batch_norm_accumulation_4(),
       m->ours_two_workers_per_rank_batch_norm_accumulation_4(),
       &ModelScaling::set_sync_batch_norm_accumulation_4_examples_per_second_ratio,
       &ModelScaling::set_sync_batch_norm_accumulation_4_peak_rss_ratio}};
  for (const auto& pair : pairs) {
    (m->*pair.set_examples_per_second)(
        Ratio(pair.sync.examples_per_second(), pair.per_rank.examples_per_second()));
    (m->*pair.set_peak_rss)(Ratio(LargestRss(pair.sync), LargestRss(pair.per_rank)));
  }
}

}  // namespace

void FillRatios(ModelScaling* m) {
  m->set_ours_scaling(Ratio(m->ours_two_workers().examples_per_second(),
                            m->ours_one_worker().examples_per_second()));
  m->set_ddp_scaling(Ratio(m->ddp_two_workers().examples_per_second(),
                           m->ddp_one_worker().examples_per_second()));
  m->set_ours_over_ddp_two_workers(
      Ratio(m->ours_two_workers().examples_per_second(),
            m->ddp_two_workers().examples_per_second()));
  m->set_harness_over_bare_update_time(
      Ratio(m->ours_one_worker().median_update_seconds(),
            m->bare_libtorch().median_update_seconds()));
  m->set_rss_ratio_to_ddp(Ratio(LargestRss(m->ours_two_workers()),
                                LargestRss(m->ddp_two_workers())));
  m->set_two_process_ceiling(Ratio(m->bare_two_processes().examples_per_second(),
                                   m->bare_libtorch().examples_per_second()));
  m->set_overlap_gain(
      Ratio(m->ours_two_workers_buckets_overlap().examples_per_second(),
            m->ours_two_workers_buckets_no_overlap().examples_per_second()));
  m->set_ours_over_ceiling(Ratio(m->ours_scaling(), m->two_process_ceiling()));
  m->set_rss_ratio_to_bare(Ratio(LargestRss(m->ours_two_workers()),
                                 LargestRss(m->bare_libtorch())));
  const SystemRun& one_step = m->ours_two_workers();
  m->set_accumulation_2_examples_per_second_ratio(
      Ratio(m->ours_two_workers_accumulation_2().examples_per_second(),
            one_step.examples_per_second()));
  m->set_accumulation_4_examples_per_second_ratio(
      Ratio(m->ours_two_workers_accumulation_4().examples_per_second(),
            one_step.examples_per_second()));
  m->set_accumulation_2_peak_rss_ratio(
      Ratio(LargestRss(m->ours_two_workers_accumulation_2()), LargestRss(one_step)));
  m->set_accumulation_4_peak_rss_ratio(
      Ratio(LargestRss(m->ours_two_workers_accumulation_4()), LargestRss(one_step)));
  m->set_torchscript_examples_per_second_ratio(
      Ratio(m->ours_two_workers_torchscript().examples_per_second(),
            one_step.examples_per_second()));
  m->set_python_module_examples_per_second_ratio(
      Ratio(m->ours_two_workers_python_module().examples_per_second(),
            one_step.examples_per_second()));
  m->set_torchscript_peak_rss_ratio(
      Ratio(LargestRss(m->ours_two_workers_torchscript()), LargestRss(one_step)));
  m->set_python_module_peak_rss_ratio(
      Ratio(LargestRss(m->ours_two_workers_python_module()), LargestRss(one_step)));
  const SystemRun& ordered = m->ours_two_workers_ordered_sum();
  m->set_ordered_sum_examples_per_second_ratio(
      Ratio(ordered.examples_per_second(), one_step.examples_per_second()));
  m->set_ordered_sum_bytes_per_update_ratio(
      Ratio(ordered.bytes_reduced_per_update(), one_step.bytes_reduced_per_update()));
  m->set_ordered_sum_peak_rss_ratio(Ratio(LargestRss(ordered), LargestRss(one_step)));
  m->set_ordered_sum_whole_shares_examples_per_second_ratio(
      Ratio(m->ours_two_workers_ordered_sum_whole_shares().examples_per_second(),
            one_step.examples_per_second()));
  m->set_ordered_sum_3w_examples_per_second_ratio(
      Ratio(m->ours_three_workers_ordered_sum().examples_per_second(),
            m->ours_three_workers().examples_per_second()));
  m->set_ordered_sum_3w_bytes_per_update_ratio(
      Ratio(m->ours_three_workers_ordered_sum().bytes_reduced_per_update(),
            m->ours_three_workers().bytes_reduced_per_update()));
  m->set_ordered_sum_4w_examples_per_second_ratio(
      Ratio(m->ours_four_workers_ordered_sum().examples_per_second(),
            m->ours_four_workers().examples_per_second()));
  m->set_ordered_sum_4w_bytes_per_update_ratio(
      Ratio(m->ours_four_workers_ordered_sum().bytes_reduced_per_update(),
            m->ours_four_workers().bytes_reduced_per_update()));
  m->set_every_update_examples_per_second_ratio(
      Ratio(one_step.examples_per_second(),
            m->ours_two_workers_checks_off().examples_per_second()));
  if (m->has_ours_two_workers_mpi_checks_off()) {
    m->set_every_update_mpi_examples_per_second_ratio(
        Ratio(m->ours_two_workers_mpi().examples_per_second(),
              m->ours_two_workers_mpi_checks_off().examples_per_second()));
  }
  if (m->has_ours_two_workers_mpi()) FillMpiRatios(m);
  FillPhysicalFloor(m);
  if (m->has_ours_two_workers_sync_batch_norm()) FillBatchNormRatios(m);
  m->set_replay_over_update_compute(
      Ratio(m->ours_two_workers().replay_seconds_per_checked_update(),
            2 * m->ours_one_worker().median_update_seconds()));
}

RoundSpread SpreadOf(const std::vector<double>& values) {
  RoundSpread spread;
  if (values.empty()) return spread;
  spread.set_median(Median(values));
  spread.set_min(*std::min_element(values.begin(), values.end()));
  spread.set_max(*std::max_element(values.begin(), values.end()));
  for (double v : values) spread.add_rounds(v);
  return spread;
}

namespace {

// A ratio of ModelScaling and its spread.
struct RatioField {
  double (ModelScaling::*get)() const;
  void (ModelScaling::*set)(double);
  RoundSpread* (ModelScaling::*spread)();
  // Issue 13's ratios of ours_two_workers_mpi: only when it ran.
  bool mpi_only = false;
};

const std::vector<RatioField>& RatioFields() {
  static const auto* fields = new std::vector<RatioField>{
      {&ModelScaling::ours_scaling, &ModelScaling::set_ours_scaling,
       &ModelScaling::mutable_ours_scaling_spread},
      {&ModelScaling::ddp_scaling, &ModelScaling::set_ddp_scaling,
       &ModelScaling::mutable_ddp_scaling_spread},
      {&ModelScaling::ours_over_ddp_two_workers,
       &ModelScaling::set_ours_over_ddp_two_workers,
       &ModelScaling::mutable_ours_over_ddp_two_workers_spread},
      {&ModelScaling::harness_over_bare_update_time,
       &ModelScaling::set_harness_over_bare_update_time,
       &ModelScaling::mutable_harness_over_bare_update_time_spread},
      {&ModelScaling::rss_ratio_to_ddp, &ModelScaling::set_rss_ratio_to_ddp,
       &ModelScaling::mutable_rss_ratio_to_ddp_spread},
      {&ModelScaling::two_process_ceiling, &ModelScaling::set_two_process_ceiling,
       &ModelScaling::mutable_two_process_ceiling_spread},
      {&ModelScaling::overlap_gain, &ModelScaling::set_overlap_gain,
       &ModelScaling::mutable_overlap_gain_spread},
      {&ModelScaling::ours_mpi_over_ddp_two_workers,
       &ModelScaling::set_ours_mpi_over_ddp_two_workers,
       &ModelScaling::mutable_ours_mpi_over_ddp_two_workers_spread},
      {&ModelScaling::ours_over_ceiling, &ModelScaling::set_ours_over_ceiling,
       &ModelScaling::mutable_ours_over_ceiling_spread},
      {&ModelScaling::rss_ratio_to_bare, &ModelScaling::set_rss_ratio_to_bare,
       &ModelScaling::mutable_rss_ratio_to_bare_spread},
      {&ModelScaling::accumulation_2_examples_per_second_ratio,
       &ModelScaling::set_accumulation_2_examples_per_second_ratio,
       &ModelScaling::mutable_accumulation_2_examples_per_second_ratio_spread},
      {&ModelScaling::accumulation_4_examples_per_second_ratio,
       &ModelScaling::set_accumulation_4_examples_per_second_ratio,
       &ModelScaling::mutable_accumulation_4_examples_per_second_ratio_spread},
      {&ModelScaling::accumulation_2_peak_rss_ratio,
       &ModelScaling::set_accumulation_2_peak_rss_ratio,
       &ModelScaling::mutable_accumulation_2_peak_rss_ratio_spread},
      {&ModelScaling::accumulation_4_peak_rss_ratio,
       &ModelScaling::set_accumulation_4_peak_rss_ratio,
       &ModelScaling::mutable_accumulation_4_peak_rss_ratio_spread},
      {&ModelScaling::torchscript_examples_per_second_ratio,
       &ModelScaling::set_torchscript_examples_per_second_ratio,
       &ModelScaling::mutable_torchscript_examples_per_second_ratio_spread},
      {&ModelScaling::python_module_examples_per_second_ratio,
       &ModelScaling::set_python_module_examples_per_second_ratio,
       &ModelScaling::mutable_python_module_examples_per_second_ratio_spread},
      {&ModelScaling::torchscript_peak_rss_ratio,
       &ModelScaling::set_torchscript_peak_rss_ratio,
       &ModelScaling::mutable_torchscript_peak_rss_ratio_spread},
      {&ModelScaling::python_module_peak_rss_ratio,
       &ModelScaling::set_python_module_peak_rss_ratio,
       &ModelScaling::mutable_python_module_peak_rss_ratio_spread},
      {&ModelScaling::ordered_sum_examples_per_second_ratio,
       &ModelScaling::set_ordered_sum_examples_per_second_ratio,
       &ModelScaling::mutable_ordered_sum_examples_per_second_ratio_spread},
      {&ModelScaling::ordered_sum_bytes_per_update_ratio,
       &ModelScaling::set_ordered_sum_bytes_per_update_ratio,
       &ModelScaling::mutable_ordered_sum_bytes_per_update_ratio_spread},
      {&ModelScaling::ordered_sum_peak_rss_ratio,
       &ModelScaling::set_ordered_sum_peak_rss_ratio,
       &ModelScaling::mutable_ordered_sum_peak_rss_ratio_spread},
      {&ModelScaling::every_update_examples_per_second_ratio,
       &ModelScaling::set_every_update_examples_per_second_ratio,
       &ModelScaling::mutable_every_update_examples_per_second_ratio_spread},
      {&ModelScaling::replay_over_update_compute,
       &ModelScaling::set_replay_over_update_compute,
       &ModelScaling::mutable_replay_over_update_compute_spread},
      {&ModelScaling::every_update_mpi_examples_per_second_ratio,
       &ModelScaling::set_every_update_mpi_examples_per_second_ratio,
       &ModelScaling::mutable_every_update_mpi_examples_per_second_ratio_spread, true},
      {&ModelScaling::ours_mpi_scaling, &ModelScaling::set_ours_mpi_scaling,
       &ModelScaling::mutable_ours_mpi_scaling_spread, true},
      {&ModelScaling::ours_mpi_over_ceiling, &ModelScaling::set_ours_mpi_over_ceiling,
       &ModelScaling::mutable_ours_mpi_over_ceiling_spread, true},
      {&ModelScaling::ours_mpi_over_physical_floor,
       &ModelScaling::set_ours_mpi_over_physical_floor,
       &ModelScaling::mutable_ours_mpi_over_physical_floor_spread, true},
      {&ModelScaling::rss_ratio_to_bare_mpi, &ModelScaling::set_rss_ratio_to_bare_mpi,
       &ModelScaling::mutable_rss_ratio_to_bare_mpi_spread, true},
  };
  return *fields;
}

// Issue 49's: the ordered mode over the sum at three and four workers, and
// with one chunk a rank.
const std::vector<RatioField>& WiderOrderedSumRatioFields() {
  static const auto* fields = new std::vector<RatioField>{
      {&ModelScaling::ordered_sum_whole_shares_examples_per_second_ratio,
       &ModelScaling::set_ordered_sum_whole_shares_examples_per_second_ratio,
       &ModelScaling::mutable_ordered_sum_whole_shares_examples_per_second_ratio_spread},
      {&ModelScaling::ordered_sum_3w_examples_per_second_ratio,
       &ModelScaling::set_ordered_sum_3w_examples_per_second_ratio,
       &ModelScaling::mutable_ordered_sum_3w_examples_per_second_ratio_spread},
      {&ModelScaling::ordered_sum_3w_bytes_per_update_ratio,
       &ModelScaling::set_ordered_sum_3w_bytes_per_update_ratio,
       &ModelScaling::mutable_ordered_sum_3w_bytes_per_update_ratio_spread},
      {&ModelScaling::ordered_sum_4w_examples_per_second_ratio,
       &ModelScaling::set_ordered_sum_4w_examples_per_second_ratio,
       &ModelScaling::mutable_ordered_sum_4w_examples_per_second_ratio_spread},
      {&ModelScaling::ordered_sum_4w_bytes_per_update_ratio,
       &ModelScaling::set_ordered_sum_4w_bytes_per_update_ratio,
       &ModelScaling::mutable_ordered_sum_4w_bytes_per_update_ratio_spread},
  };
  return *fields;
}

// Issue 49's: synchronized over per-rank batch norm.
const std::vector<RatioField>& BatchNormRatioFields() {
  static const auto* fields = new std::vector<RatioField>{
      {&ModelScaling::sync_batch_norm_examples_per_second_ratio,
       &ModelScaling::set_sync_batch_norm_examples_per_second_ratio,
       &ModelScaling::mutable_sync_batch_norm_examples_per_second_ratio_spread},
      {&ModelScaling::sync_batch_norm_accumulation_2_examples_per_second_ratio,
       &ModelScaling::set_sync_batch_norm_accumulation_2_examples_per_second_ratio,
       &ModelScaling::mutable_sync_batch_norm_accumulation_2_examples_per_second_ratio_spread},
      {&ModelScaling::sync_batch_norm_accumulation_4_examples_per_second_ratio,
       &ModelScaling::set_sync_batch_norm_accumulation_4_examples_per_second_ratio,
       &ModelScaling::mutable_sync_batch_norm_accumulation_4_examples_per_second_ratio_spread},
      {&ModelScaling::sync_batch_norm_peak_rss_ratio,
       &ModelScaling::set_sync_batch_norm_peak_rss_ratio,
       &ModelScaling::mutable_sync_batch_norm_peak_rss_ratio_spread},
      {&ModelScaling::sync_batch_norm_accumulation_2_peak_rss_ratio,
       &ModelScaling::set_sync_batch_norm_accumulation_2_peak_rss_ratio,
       &ModelScaling::mutable_sync_batch_norm_accumulation_2_peak_rss_ratio_spread},
      {&ModelScaling::sync_batch_norm_accumulation_4_peak_rss_ratio,
       &ModelScaling::set_sync_batch_norm_accumulation_4_peak_rss_ratio,
       &ModelScaling::mutable_sync_batch_norm_accumulation_4_peak_rss_ratio_spread},
  };
  return *fields;
}

}  // namespace

void FillRoundRatios(const std::vector<ModelScaling>& rounds, ModelScaling* m) {
  const bool mpi_measured = rounds.front().has_ours_two_workers_mpi();
  std::vector<RatioField> fields = RatioFields();
  if (rounds.front().has_ours_two_workers_sync_batch_norm()) {
    fields.insert(fields.end(), BatchNormRatioFields().begin(), BatchNormRatioFields().end());
  }
  if (rounds.front().has_ours_three_workers_ordered_sum()) {
    fields.insert(fields.end(), WiderOrderedSumRatioFields().begin(),
                  WiderOrderedSumRatioFields().end());
  }
  for (const RatioField& field : fields) {
    if (field.mpi_only && !mpi_measured) continue;
    std::vector<double> values;
    for (const ModelScaling& round : rounds) values.push_back((round.*field.get)());
    *(m->*field.spread)() = SpreadOf(values);
    (m->*field.set)(Median(values));
  }
}

std::vector<TargetCheck> CheckTargets(const std::vector<ModelScaling>& models) {
  std::vector<TargetCheck> checks;
  for (const ModelScaling& m : models) {
    if (m.name() == "compute_bound") {
      checks.push_back(Check("two workers / one worker examples/s", m.name(),
                             m.ours_scaling(), ">=", kComputeBoundScalingTarget));
      checks.push_back(Check("share of a two-worker update in gradient sync",
                             m.name(), m.ours_two_workers().sync_share(), "<=",
                             kComputeBoundSyncShareTarget));
    }
    if (m.name() == "communication_bound") {
      checks.push_back(Check("our two workers / PyTorch DDP two workers examples/s",
                             m.name(), m.ours_over_ddp_two_workers(), ">=",
                             kOursOverDdpTarget));
    }
    checks.push_back(Check("harness per-update time / bare LibTorch step",
                           m.name(), m.harness_over_bare_update_time(), "<=",
                           kHarnessOverBareTarget));
    checks.push_back(Check("peak RSS per rank / PyTorch DDP's (two workers)",
                           m.name(), m.rss_ratio_to_ddp(), "<=", kRssRatioTarget));
  }
  for (TargetCheck& check : checks) check.set_issue(7);
  return checks;
}

std::vector<TargetCheck> CheckIssue13Targets(const std::vector<ModelScaling>& models) {
  std::vector<TargetCheck> checks;
  for (const ModelScaling& m : models) {
    const bool mpi = m.has_ours_two_workers_mpi();
    if (m.name() == "communication_bound") {
      if (mpi) {
        checks.push_back(Check(
            "our two workers over MPI / PyTorch DDP two workers examples/s",
            m.name(), m.ours_mpi_over_ddp_two_workers(), ">=", kOursMpiOverDdpTarget));
      }
      checks.push_back(Check("our two workers / PyTorch DDP two workers examples/s",
                             m.name(), m.ours_over_ddp_two_workers(), ">=",
                             kOursGlooOverDdpTarget));
    }
    if (m.name() == "compute_bound") {
      checks.push_back(Check("two workers / one worker over the two-process ceiling",
                             m.name(), m.ours_over_ceiling(), ">=",
                             kScalingOverCeilingTarget));
      if (mpi) {
        checks.push_back(Check(
            "two workers over MPI / one worker over the two-process ceiling",
            m.name(), m.ours_mpi_over_ceiling(), ">=", kScalingOverCeilingTarget));
      }
    }
    checks.push_back(Check("harness per-update time / bare LibTorch step", m.name(),
                           m.harness_over_bare_update_time(), "<=",
                           kHarnessOverBareTightTarget));
    checks.push_back(Check("peak RSS per rank / bare LibTorch step's (two workers)",
                           m.name(), m.rss_ratio_to_bare(), "<=", kRssRatioToBareTarget));
    if (mpi) {
      checks.push_back(Check(
          "peak RSS per rank / bare LibTorch step's (two workers over MPI)", m.name(),
          m.rss_ratio_to_bare_mpi(), "<=", kRssRatioToBareTarget));
    }
  }
  for (TargetCheck& check : checks) check.set_issue(13);
  return checks;
}

std::vector<TargetCheck> CheckIssue46Targets(const std::vector<ModelScaling>& models) {
  std::vector<TargetCheck> checks;
  for (const ModelScaling& m : models) {
    checks.push_back(Check("the every-update checks' share of a two-worker update", m.name(),
                           m.ours_two_workers().check_share(), "<=", kEveryUpdateShareTarget));
    checks.push_back(Check("two workers with the every-update checks / without, examples/s",
                           m.name(), m.every_update_examples_per_second_ratio(), ">=",
                           1 - kEveryUpdateShareTarget));
    if (m.has_ours_two_workers_mpi()) {
      checks.push_back(Check("the every-update checks' share of a two-worker update over MPI",
                             m.name(), m.ours_two_workers_mpi().check_share(), "<=",
                             kEveryUpdateShareTarget));
    }
    if (m.has_ours_two_workers_mpi_checks_off()) {
      checks.push_back(Check("two workers over MPI with the every-update checks / without, "
                             "examples/s",
                             m.name(), m.every_update_mpi_examples_per_second_ratio(), ">=",
                             1 - kEveryUpdateShareTarget));
    }
  }
  for (TargetCheck& check : checks) check.set_issue(46);
  return checks;
}

std::vector<TargetCheck> CheckIssue49Targets(const std::vector<ModelScaling>& models) {
  std::vector<TargetCheck> checks;
  for (const ModelScaling& m : models) {
    if (!m.has_ours_two_workers_sync_batch_norm()) continue;
    const std::pair<const char*, double> rows[] = {
        {"synchronized / per-rank batch norm examples/s, 1 micro-batch",
         m.sync_batch_norm_examples_per_second_ratio()},
        {"synchronized / per-rank batch norm examples/s, 2 micro-batches",
         m.sync_batch_norm_accumulation_2_examples_per_second_ratio()},
        {"synchronized / per-rank batch norm examples/s, 4 micro-batches",
         m.sync_batch_norm_accumulation_4_examples_per_second_ratio()}};
    for (const auto& [target, measured] : rows) {
      checks.push_back(Check(target, m.name(), measured, ">=", kSyncBatchNormTarget));
    }
  }
  for (const ModelScaling& m : models) {
    const std::tuple<const char*, bool, double, double> ordered[] = {
        {"2w", m.has_ours_two_workers_ordered_sum(), m.ordered_sum_examples_per_second_ratio(),
         m.ordered_sum_bytes_per_update_ratio()},
        {"3w", m.has_ours_three_workers_ordered_sum(),
         m.ordered_sum_3w_examples_per_second_ratio(), m.ordered_sum_3w_bytes_per_update_ratio()},
        {"4w", m.has_ours_four_workers_ordered_sum(),
         m.ordered_sum_4w_examples_per_second_ratio(), m.ordered_sum_4w_bytes_per_update_ratio()}};
    for (const auto& [world, measured, examples, bytes] : ordered) {
      if (!measured) continue;
      checks.push_back(Check(absl::StrCat(world, ", ordered_sum / allreduce_sum examples/s"),
                             m.name(), examples, ">=", kOrderedSumSpeedTarget));
      checks.push_back(Check(absl::StrCat(world, ", ordered_sum / allreduce_sum bytes per update"),
                             m.name(), bytes, "<=", kOrderedSumBytesTarget));
    }
  }
  for (const ModelScaling& m : models) {
    if (m.name() != "communication_bound" || m.ours_mpi_over_physical_floor() <= 0) continue;
    checks.push_back(Check(
        "two workers over MPI / the physical floor (two bare steps + one shared-memory "
        "all-reduce)",
        m.name(), m.ours_mpi_over_physical_floor(), ">=", kOursMpiOverPhysicalFloorTarget));
  }
  for (const ModelScaling& m : models) {
    checks.push_back(Check("replay of a checked update / the update's compute (two workers)",
                           m.name(), m.replay_over_update_compute(), "<=",
                           kReplayOverUpdateTarget));
  }
  for (TargetCheck& check : checks) check.set_issue(49);
  return checks;
}

}  // namespace receipt_parity
