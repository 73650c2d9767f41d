#include "study/trade_report_builder.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace {

double Mean(const google::protobuf::RepeatedField<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / values.size();
}

// The per-update time of lockstep ranks is the slowest rank's; the mean of
// that over the timed updates.
double MeanOfSlowest(const RunSummary& summary,
                     const google::protobuf::RepeatedField<double>& (
                         RankTiming::*series)() const) {
  size_t updates = 0;
  for (const RankTiming& t : summary.timing()) {
    updates = std::max<size_t>(updates, (t.*series)().size());
  }
  if (updates == 0) return 0;
  double sum = 0;
  for (size_t i = 0; i < updates; ++i) {
    double slowest = 0;
    for (const RankTiming& t : summary.timing()) {
      if (static_cast<int>(i) < (t.*series)().size()) {
        slowest = std::max(slowest, (t.*series)()[i]);
      }
    }
    sum += slowest;
  }
  return sum / updates;
}

absl::StatusOr<RunFigures> SummariseRun(const RunArtifacts& run) {
  const RunSummary& summary = run.summary;
  if (summary.updates() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(run.source, "/run_summary.json: updates is ",
                     summary.updates(), "; the run trained nothing"));
  }
  if (summary.timing_size() != summary.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        run.source, "/run_summary.json: timing has ", summary.timing_size(),
        " entries for world_size ", summary.world_size(),
        "; expected one per rank"));
  }
  RunFigures figures;
  figures.set_source(run.source);
  figures.set_world_size(summary.world_size());
  figures.set_config_fingerprint(run.stamp.config_fingerprint());
  figures.set_updates(summary.updates());
  figures.set_epochs_completed(summary.epochs_completed());
  figures.set_warmup_updates(summary.warmup_updates());
  figures.set_examples_per_second(summary.examples_per_second());
  figures.set_update_seconds(
      MeanOfSlowest(summary, &RankTiming::update_seconds));
  figures.set_sync_seconds_per_update(summary.sync_seconds_per_update());
  figures.set_sync_share(summary.sync_share());
  *figures.mutable_lateness() = summary.lateness();
  figures.set_straggler_rank(summary.straggler_rank());
  for (const RankTiming& t : summary.timing()) {
    RankFigures* rank = figures.add_ranks();
    rank->set_rank(t.rank());
    rank->set_peak_rss_mib(t.peak_rss_mib());
    rank->set_update_seconds(Mean(t.update_seconds()));
    rank->set_sync_seconds(Mean(t.sync_seconds()));
    rank->set_collectives(t.collectives());
    rank->set_bytes_reduced(t.bytes_reduced());
  }
  for (const EpochRecord& epoch : summary.epochs()) {
    figures.set_duplicate_slots(figures.duplicate_slots() +
                                epoch.duplicate_slots());
    figures.set_masked_slots(figures.masked_slots() + epoch.masked_slots());
  }
  figures.set_final_loss(summary.final_loss());
  figures.set_final_parameter_hash(summary.final_parameter_hash());
  *figures.mutable_loss_curve() = summary.loss_curve();

  const ValidationReport& v = run.validation;
  ValidationFigures* validation = figures.mutable_validation();
  validation->set_dedup(v.dedup());
  validation->set_predictions_gathered(v.predictions_gathered());
  validation->set_unique_ids_counted(v.unique_ids_counted());
  validation->set_duplicates_dropped(v.duplicates_dropped());
  validation->set_accuracy(v.accuracy());
  validation->set_macro_f1(v.macro_f1());
  *validation->mutable_per_class() = v.per_class();
  return figures;
}

// "whole run (drift_budget): 5 of 5 checked updates pass, numerics judged 8
// of 30 tensor-updates, the other 22 diverged and left to the replay", or
// empty without a whole-run verdict.
std::string WholeRunPhrase(const WholeRunParity& whole) {
  if (whole.mode().empty()) return "";
  if (whole.mode() == "not_judged") {
    return absl::StrCat("whole run not judged: ", whole.not_judged());
  }
  int passing = 0, judged = 0, all = 0;
  for (const UpdateParity& u : whole.updates()) {
    passing += u.pass() ? 1 : 0;
    judged += u.judged_tensors();
    all += u.tensors_size();
  }
  const std::string head = absl::StrCat("whole run (", whole.mode(), "): ", passing, " of ",
                                        whole.check_updates_size(), " checked updates ",
                                        whole.mode() == "bitwise" ? "bitwise equal" : "pass");
  if (whole.mode() == "bitwise") return head;
  return absl::StrCat(head, ", numerics judged ", judged, " of ", all, " tensor-updates",
                      judged == all ? ""
                                    : absl::StrCat(", the other ", all - judged,
                                                   " diverged and left to the replay"));
}

// "every update (70 of 70) verified (accounting, reduction)", "every
// update: 69 of 70 verified, update 69 failed the accounting check on rank
// 0", or empty without the checks.
std::string EveryUpdatePhrase(const EveryUpdateVerdict& every) {
  if (every.updates() == 0) return "";
  if (every.pass()) {
    return absl::StrCat("every update (", every.verified(), " of ", every.updates(),
                        ") verified (", absl::StrJoin(every.checks(), ", "), ")");
  }
  std::string first;
  if (every.has_first_failure()) {
    const EveryUpdateFailure& f = every.first_failure();
    first = absl::StrCat(", update ", f.update(), " failed the ", f.check(), " check",
                         f.rank() >= 0 ? absl::StrCat(" on rank ", f.rank()) : "");
  }
  return absl::StrCat("every update: ", every.verified(), " of ", every.updates(), " verified",
                      first);
}

ParityFigures SummariseParity(const Sourced<ParityReport>& parity) {
  const ParityReport& p = parity.message;
  ParityFigures figures;
  figures.set_source(parity.source);
  figures.set_verdict(p.pass() ? kPass : kFail);
  figures.set_simulated(p.simulated());
  *figures.mutable_split() = p.split();
  figures.set_weighting(p.weighting());
  figures.set_reducer(p.reducer());
  figures.set_rtol(p.rtol());
  figures.set_atol(p.atol());
  figures.set_max_abs_diff(p.max_abs_diff());
  figures.set_max_rel_diff(p.max_rel_diff());
  figures.set_bitwise_equal(p.bitwise_equal());
  figures.set_ranks_agree(p.ranks_agree());
  *figures.mutable_failures() = p.failures();
  figures.set_whole_run(WholeRunPhrase(p.whole_run()));
  figures.set_every_update(EveryUpdatePhrase(p.every_update()));
  return figures;
}

SamplerFigures SummariseAudit(const Sourced<SamplerAudit>& audit) {
  const SamplerAudit& a = audit.message;
  SamplerFigures figures;
  figures.set_source(audit.source);
  figures.set_policy(a.policy());
  figures.set_num_ids(a.num_ids());
  figures.set_world_size(a.world_size());
  figures.set_epochs(a.epochs_size());
  if (!a.epochs().empty()) figures.set_slots_per_epoch(a.epochs(0).num_slots());
  bool agree = true;
  std::set<std::string> seen;
  for (const EpochAudit& epoch : a.epochs()) {
    for (const DuplicatedId& dup : epoch.duplicated_ids()) {
      figures.set_duplicate_slots(figures.duplicate_slots() + dup.count() - 1);
      if (seen.insert(dup.receipt_id()).second) {
        figures.add_duplicated_ids(dup.receipt_id());
      }
    }
    figures.set_masked_slots(figures.masked_slots() +
                             epoch.masked_slots_size());
    figures.set_dropped_examples(figures.dropped_examples() +
                                 epoch.dropped_indices_size());
    agree = agree && epoch.ranks_agree();
  }
  figures.set_ranks_agree(agree);
  return figures;
}

RecoveryFigures SummariseRecovery(
    const std::optional<Sourced<RecoveryReport>>& recovery) {
  RecoveryFigures figures;
  if (!recovery.has_value()) {
    figures.set_status(kNotMeasured);
    figures.set_verdict(kNotMeasured);
    figures.set_note("the fault drill wrote no recovery.json");
    return figures;
  }
  figures.set_status(kMeasured);
  figures.set_source(recovery->source);
  figures.set_verdict(recovery->message.pass() ? kPass : kFail);
  *figures.mutable_report() = recovery->message;
  return figures;
}

CheckpointFigures SummariseCheckpointCost(
    const std::optional<Sourced<CheckpointCost>>& cost) {
  CheckpointFigures figures;
  if (!cost.has_value() || cost->message.generations_saved() <= 0) {
    figures.set_status(kNotMeasured);
    figures.set_note(cost.has_value()
                         ? absl::StrCat(cost->source, ": no generation saved")
                         : "no run recorded checkpoint cost");
    return figures;
  }
  figures.set_status(kMeasured);
  figures.set_source(cost->source);
  *figures.mutable_cost() = cost->message;
  return figures;
}

// SummariseRun of a further multi-worker run (`what`: "over MPI"), refused
// naming its file when it is not one.
absl::StatusOr<RunFigures> SummariseMultiWorkerRun(const RunArtifacts& run,
                                                   const std::string& what) {
  if (run.summary.world_size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        run.source, "/run_summary.json: world_size is ", run.summary.world_size(),
        "; the run ", what, " needs at least 2"));
  }
  return SummariseRun(run);
}

absl::StatusOr<MpiFigures> SummariseMpi(
    const std::optional<MpiRunArtifacts>& mpi, const RunFigures& gloo) {
  MpiFigures figures;
  if (!mpi.has_value()) {
    figures.set_status(kNotMeasured);
    figures.set_note(kMpirunNotInstalled);
    return figures;
  }
  absl::StatusOr<RunFigures> run = SummariseMultiWorkerRun(mpi->run, "over MPI");
  if (!run.ok()) return run.status();
  figures.set_status(kMeasured);
  figures.set_source(mpi->run.source);
  *figures.mutable_run() = *std::move(run);
  if (gloo.examples_per_second() > 0) {
    figures.set_over_gloo_examples_per_second(
        figures.run().examples_per_second() / gloo.examples_per_second());
  }
  figures.set_final_parameters_equal_to_gloo(
      !gloo.final_parameter_hash().empty() &&
      figures.run().final_parameter_hash() == gloo.final_parameter_hash());
  *figures.mutable_parity() = SummariseParity(mpi->parity);
  figures.set_parity_verdict(figures.parity().verdict());
  return figures;
}

double LargestPeakRss(const RunFigures& run) {
  double largest = 0;
  for (const RankFigures& rank : run.ranks()) {
    largest = std::max(largest, rank.peak_rss_mib());
  }
  return largest;
}

absl::StatusOr<PrecisionFigures> SummariseBf16(
    const std::optional<PrecisionRunArtifacts>& bf16, const RunFigures& fp32) {
  PrecisionFigures figures;
  if (!bf16.has_value()) {
    figures.set_status(kNotMeasured);
    figures.set_note(kNoBf16Run);
    return figures;
  }
  if (!bf16->parity.message.has_derived()) {
    return absl::InvalidArgumentError(
        absl::StrCat(bf16->parity.source,
                     ": no derived tolerance; the bf16 run's parity must be "
                     "of precision bf16"));
  }
  absl::StatusOr<RunFigures> run = SummariseMultiWorkerRun(bf16->run, "in bf16");
  if (!run.ok()) return run.status();
  figures.set_status(kMeasured);
  figures.set_source(bf16->run.source);
  *figures.mutable_run() = *std::move(run);
  if (fp32.examples_per_second() > 0) {
    figures.set_over_fp32_examples_per_second(
        figures.run().examples_per_second() / fp32.examples_per_second());
  }
  figures.set_peak_rss_mib(LargestPeakRss(figures.run()));
  figures.set_fp32_peak_rss_mib(LargestPeakRss(fp32));
  figures.set_macro_f1_minus_fp32(figures.run().validation().macro_f1() -
                                  fp32.validation().macro_f1());
  *figures.mutable_parity() = SummariseParity(bf16->parity);
  figures.set_parity_verdict(figures.parity().verdict());
  *figures.mutable_derived() = bf16->parity.message.derived();
  return figures;
}

// One phrase per recipe or layer `config` uses beyond a plain run
// (AllRecipesFigures.recipes).
std::vector<std::string> RecipePhrases(const TrainingConfig& config) {
  std::vector<std::string> phrases;
  if (config.accumulation_steps() > 1) {
    phrases.push_back(absl::StrCat("accumulation_steps ", config.accumulation_steps()));
  }
  if (config.has_lr_schedule() && config.lr_schedule().name() != "constant") {
    phrases.push_back(absl::StrCat("lr_schedule ", config.lr_schedule().name()));
  }
  if (config.has_clip_grad_norm()) {
    phrases.push_back(absl::StrCat(
        "clip_grad_norm ", config.clip_grad_norm().max_norm(), " (",
        config.clip_grad_norm().scope().empty() ? "global" : config.clip_grad_norm().scope(),
        ")"));
  }
  if (config.precision() == "bf16") phrases.push_back("precision bf16");
  if (config.model().dropout() > 0) {
    phrases.push_back(absl::StrCat("keyed dropout ", config.model().dropout()));
  }
  if (!config.model().batch_norm().empty()) {
    phrases.push_back(absl::StrCat("batch_norm ", config.model().batch_norm()));
  }
  if (config.local_batch_sizes_size() > 0) {
    phrases.push_back(
        absl::StrCat("local_batch_sizes ", absl::StrJoin(config.local_batch_sizes(), "+")));
  }
  if (!config.sampler().name().empty()) {
    phrases.push_back(absl::StrCat("sampler ", config.sampler().name()));
  }
  return phrases;
}

absl::StatusOr<AllRecipesFigures> SummariseAllRecipes(
    const std::optional<AllRecipesRunArtifacts>& all, const RunFigures& fp32) {
  AllRecipesFigures figures;
  if (!all.has_value()) {
    figures.set_status(kNotMeasured);
    figures.set_note(kNoAllRecipesRun);
    return figures;
  }
  if (all->run.parity.message.whole_run().mode().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        all->run.parity.source,
        ": no whole-run verdict; the run with every recipe is judged over its whole run"));
  }
  absl::StatusOr<RunFigures> run =
      SummariseMultiWorkerRun(all->run.run, "with every recipe");
  if (!run.ok()) return run.status();
  figures.set_status(kMeasured);
  figures.set_source(all->run.run.source);
  *figures.mutable_run() = *std::move(run);
  for (const std::string& phrase : RecipePhrases(all->config)) figures.add_recipes(phrase);
  if (fp32.examples_per_second() > 0) {
    figures.set_over_fp32_examples_per_second(figures.run().examples_per_second() /
                                              fp32.examples_per_second());
  }
  figures.set_peak_rss_mib(LargestPeakRss(figures.run()));
  figures.set_macro_f1_minus_fp32(figures.run().validation().macro_f1() -
                                  fp32.validation().macro_f1());
  *figures.mutable_parity() = SummariseParity(all->run.parity);
  figures.set_parity_verdict(figures.parity().verdict());
  *figures.mutable_whole_run() = all->run.parity.message.whole_run();
  return figures;
}

// `curve` at the run's update index: a resumed attempt's curve counts from
// its first update.
google::protobuf::RepeatedPtrField<LossPoint> AtRunUpdates(const RunSummary& summary) {
  google::protobuf::RepeatedPtrField<LossPoint> curve = summary.loss_curve();
  for (LossPoint& p : curve) p.set_update(summary.first_update() + p.update());
  return curve;
}

// The largest |loss difference| over the updates both curves hold (at the
// run's update index); -1 when they share none.
double SharedLossMaxAbsDiff(const google::protobuf::RepeatedPtrField<LossPoint>& a,
                            const google::protobuf::RepeatedPtrField<LossPoint>& b) {
  std::map<int32_t, double> by_update;
  for (const LossPoint& p : a) by_update[p.update()] = p.loss();
  double largest = -1;
  for (const LossPoint& q : b) {
    auto it = by_update.find(q.update());
    if (it != by_update.end()) largest = std::max(largest, std::abs(it->second - q.loss()));
  }
  return largest;
}

absl::StatusOr<WorldSizeContinuation> SummariseContinuation(
    const ContinuationArtifacts& run, const RunSummary* uninterrupted) {
  if (!run.resume.world_size_changed()) {
    return absl::InvalidArgumentError(absl::StrCat(
        run.source, "/resume.json: world_size_changed is false; the continuation was to "
                    "resume on another number of workers"));
  }
  WorldSizeContinuation figures;
  figures.set_source(run.source);
  figures.set_policy(run.change.policy());
  figures.set_old_world_size(run.change.old_world_size());
  figures.set_new_world_size(run.change.new_world_size());
  figures.set_resumed_at_update(run.resume.update());
  figures.set_world_size_change_rule(run.resume.world_size_change_rule());
  figures.set_changed_updates(run.change.changed_updates());
  figures.set_remaining_updates(run.change.remaining_updates());
  figures.set_skipped_ids(run.change.skipped_ids_size());
  figures.set_repeated_ids(run.change.repeated_ids_size());
  figures.set_old_duplicate_slots(run.change.old_duplicate_slots());
  figures.set_new_duplicate_slots(run.change.new_duplicate_slots());
  figures.set_summary(run.change.summary());
  *figures.mutable_loss_curve() = AtRunUpdates(run.summary);
  figures.set_final_loss(run.summary.final_loss());
  figures.set_final_parameter_hash(run.summary.final_parameter_hash());
  figures.set_loss_max_abs_diff(-1);
  if (uninterrupted != nullptr) {
    figures.set_final_parameters_equal(run.summary.final_parameter_hash() ==
                                       uninterrupted->final_parameter_hash());
    figures.set_loss_max_abs_diff(
        SharedLossMaxAbsDiff(AtRunUpdates(*uninterrupted), figures.loss_curve()));
  }
  return figures;
}

absl::StatusOr<WorldSizeChangeFigures> SummariseWorldSizeChange(
    const std::optional<WorldSizeChangeArtifacts>& runs, const std::string& picture) {
  WorldSizeChangeFigures figures;
  if (!runs.has_value()) {
    figures.set_status(kNotMeasured);
    figures.set_note(kNoWorldSizeChange);
    return figures;
  }
  figures.set_status(kMeasured);
  figures.set_source(runs->source);
  figures.set_world_size(runs->uninterrupted.world_size());
  *figures.mutable_uninterrupted_loss_curve() = AtRunUpdates(runs->uninterrupted);
  figures.set_final_parameter_hash(runs->uninterrupted.final_parameter_hash());
  for (const ContinuationArtifacts& run : runs->continuations) {
    absl::StatusOr<WorldSizeContinuation> continued =
        SummariseContinuation(run, &runs->uninterrupted);
    if (!continued.ok()) return continued.status();
    *figures.add_continuations() = *std::move(continued);
  }
  absl::StatusOr<WorldSizeContinuation> twin =
      SummariseContinuation(runs->duplicate_pad, nullptr);
  if (!twin.ok()) return twin.status();
  *figures.mutable_duplicate_pad() = *std::move(twin);
  figures.set_picture(picture);
  return figures;
}

double LossCurvesMaxAbsDiff(const RunFigures& a, const RunFigures& b) {
  const int common = std::min(a.loss_curve_size(), b.loss_curve_size());
  if (common == 0) return -1;
  double max_diff = 0;
  for (int i = 0; i < common; ++i) {
    const LossPoint& p = a.loss_curve(i);
    const LossPoint& q = b.loss_curve(i);
    if (p.update() != q.update() || p.examples_seen() != q.examples_seen()) {
      return -1;
    }
    max_diff = std::max(max_diff, std::abs(p.loss() - q.loss()));
  }
  return max_diff;
}

// Each planted run, caught or not, and the verdicts that caught it.
PlantedMistakesFigures SummarisePlantedMistakes(
    const std::optional<std::vector<PlantedRunArtifacts>>& planted) {
  PlantedMistakesFigures figures;
  if (!planted.has_value()) {
    figures.set_status(kNotMeasured);
    figures.set_note(kNoPlantedMistakes);
    return figures;
  }
  figures.set_status(kMeasured);
  for (const PlantedRunArtifacts& artifacts : *planted) {
    const ParityReport& parity = artifacts.parity.message;
    PlantedMistakeRun* run = figures.add_runs();
    run->set_mistake(artifacts.run.mistake_text);
    run->set_setting(artifacts.run.setting_text);
    run->set_source(std::filesystem::path(artifacts.parity.source).parent_path().string());
    run->set_caught(!parity.pass());
    for (std::string& verdict : VerdictsThatCaught(parity)) run->add_caught_by(std::move(verdict));
    if (parity.failures_size() > 0) run->set_first_failure(parity.failures(0));
    if (run->caught()) figures.set_caught_runs(figures.caught_runs() + 1);
  }
  return figures;
}

}  // namespace

absl::StatusOr<TradeReport> BuildTradeReport(const TradeReportInputs& inputs) {
  if (inputs.one_worker.summary.world_size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        inputs.one_worker.source, "/run_summary.json: world_size is ",
        inputs.one_worker.summary.world_size(), "; the one-worker run needs 1"));
  }
  if (inputs.two_workers.summary.world_size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        inputs.two_workers.source, "/run_summary.json: world_size is ",
        inputs.two_workers.summary.world_size(),
        "; the multi-worker run needs at least 2"));
  }
  TradeReport report;
  report.set_format_version(kTradeReportFormatVersion);
  absl::StatusOr<RunFigures> one = SummariseRun(inputs.one_worker);
  if (!one.ok()) return one.status();
  absl::StatusOr<RunFigures> two = SummariseRun(inputs.two_workers);
  if (!two.ok()) return two.status();
  *report.mutable_one_worker() = *std::move(one);
  *report.mutable_two_workers() = *std::move(two);
  if (report.one_worker().examples_per_second() > 0) {
    report.set_two_over_one_examples_per_second(
        report.two_workers().examples_per_second() /
        report.one_worker().examples_per_second());
  }
  report.set_loss_curves_max_abs_diff(
      LossCurvesMaxAbsDiff(report.one_worker(), report.two_workers()));
  *report.mutable_parity() = SummariseParity(inputs.parity);
  *report.mutable_simulated_parity() = SummariseParity(inputs.simulated_parity);
  for (const Sourced<SamplerAudit>& audit : inputs.sampler_audits) {
    *report.add_sampler_audits() = SummariseAudit(audit);
  }
  *report.mutable_recovery() = SummariseRecovery(inputs.recovery);
  *report.mutable_checkpoint_cost() =
      SummariseCheckpointCost(inputs.checkpoint_cost);
  absl::StatusOr<MpiFigures> mpi =
      SummariseMpi(inputs.two_workers_mpi, report.two_workers());
  if (!mpi.ok()) return mpi.status();
  *report.mutable_two_workers_mpi() = *std::move(mpi);
  absl::StatusOr<PrecisionFigures> bf16 =
      SummariseBf16(inputs.two_workers_bf16, report.two_workers());
  if (!bf16.ok()) return bf16.status();
  *report.mutable_two_workers_bf16() = *std::move(bf16);
  absl::StatusOr<AllRecipesFigures> all =
      SummariseAllRecipes(inputs.two_workers_all_recipes, report.two_workers());
  if (!all.ok()) return all.status();
  *report.mutable_two_workers_all_recipes() = *std::move(all);
  absl::StatusOr<WorldSizeChangeFigures> world_size = SummariseWorldSizeChange(
      inputs.world_size_change, inputs.world_size_change_picture);
  if (!world_size.ok()) return world_size.status();
  *report.mutable_world_size_change() = *std::move(world_size);
  *report.mutable_planted_mistakes() = SummarisePlantedMistakes(inputs.planted_mistakes);
  report.set_picture(inputs.picture);
  return report;
}

}  // namespace receipt_parity
