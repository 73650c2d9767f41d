#include "trainer/run_finish.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "io/json_file.h"
#include "absl/strings/str_join.h"
#include "logging/glog.h"
#include "model/buffer_comparison.h"
#include "model/layer_audit.h"
#include "model/sync_batch_norm.h"
#include "collectives/collective_error.h"
#include "runtime/heap_trim.h"
#include "runtime/process_group.h"
#include "samplers/audit.h"
#include "artifacts/first_step_record.h"
#include "artifacts/parity_trajectory.h"
#include "artifacts/replay_inputs.h"
#include "parity/verdict_power.h"
#include "replay/update_replay.h"
#include "config/layer_policy.h"
#include "verdicts/bf16_tolerance.h"
#include "trainer/progress_log.h"
#include "artifacts/run_artifacts.h"
#include "artifacts/run_folder.h"
#include "verdicts/run_parity.h"
#include "artifacts/run_summary_builder.h"
#include "artifacts/tensorboard_curves.h"
#include "trainer/validation_pass.h"
#include "artifacts/run_folder_state.pb.h"

namespace receipt_parity {
namespace {

// This rank's final report; on rank 0 every rank's, in rank order (through
// the store), on the others an empty vector.
absl::StatusOr<std::vector<RankReport>> FinishReports(Run& run,
                                                      RankReportBuilder& builder) {
  const TrainingRunOptions& options = *run.options;
  std::string hash;
  try {
    hash = ParameterHash(run.model());
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "final parameter hash: LibTorch");
  }
  const RankReport mine =
      builder.Finish(run.plugins().reducer->stats(), PeakRssMib(), hash);
  if (options.process_group == nullptr) return std::vector<RankReport>{mine};
  return GatherOnRankZero(*options.process_group->store, "report", options.rank,
                          options.world_size, mine);
}

// Every rank's buffers against rank 0's (rank 0's result; the others get
// an empty comparison).
absl::StatusOr<BufferComparison> CompareBuffersAcrossRanks(Run& run) {
  const TrainingRunOptions& options = *run.options;
  absl::StatusOr<RankBuffers> mine = DigestBuffers(run.model(), options.rank);
  if (!mine.ok()) return mine.status();
  std::vector<RankBuffers> ranks = {*mine};
  if (options.process_group != nullptr) {
    absl::StatusOr<std::vector<RankBuffers>> gathered = GatherOnRankZero(
        *options.process_group->store, "buffers", options.rank, options.world_size, *mine);
    if (!gathered.ok()) return gathered.status();
    ranks = *std::move(gathered);
  }
  if (!run.writer()) return BufferComparison();
  return CompareBuffers(ranks);
}

// After the run's `completed_updates` updates.
absl::StatusOr<ValidationReport> Validate(Run& run, int64_t completed_updates) {
  const TrainingRunOptions& options = *run.options;
  ValidationInputs val;
  val.examples = run.data.validation.get();
  val.receipt_ids = &run.data.validation_ids;
  val.policy = run.plugins().sampler.get();
  val.seed = run.config->seeds().sampler();
  val.dedup = run.plugins().dedup.get();
  val.dedup_name = run.config->metric_dedup().name();
  val.rank = options.rank;
  val.bf16 = run.config->precision() == "bf16";
  val.world_size = options.world_size;
  val.group = options.process_group ? options.process_group->group.get() : nullptr;
  val.completed_updates = completed_updates;
  val.phase_kill = options.fault.phase;
  return RunValidation(run.model(), val);
}

}  // namespace

absl::StatusOr<ParityReport> FirstUpdateParity(const Run& run, const FirstStep& first_step,
                                               bool ranks_agree) {
  // A synchronized batch norm cut across ranks or micro-batches computes its
  // gradient by other passes than the reference's one backward.
  const bool synchronized_cut =
      !SyncBatchNorms(run.model()).empty() &&
      (run.options->world_size > 1 || run.config->accumulation_steps() > 1);
  const std::string derived_for = run.config->precision() == "bf16" ? "bf16"
                                  : synchronized_cut                 ? "synchronized batch norm"
                                                                     : "fp32";
  DeriveTolerance derive = [&run, derived_for](const FirstStep& reference, double floor_rtol,
                                               double floor_atol) {
    Bf16UpdateInputs in;
    in.derived_for = derived_for;
    in.floor_rtol = floor_rtol;
    in.floor_atol = floor_atol;
    in.loaded = run.options->loaded;
    in.reference = &reference;
    in.examples = run.data.train.get();
    in.labels = &run.data.train_labels;
    in.class_counts = &run.inputs.data.train_class_counts;
    in.weighting = run.inputs.plugins.weighting.get();
    in.schedule = run.inputs.plugins.schedule.get();
    return DeriveBf16Tolerance(in);
  };
  return CheckRunParity(first_step, run.options->reference_dir, *run.config, ranks_agree,
                        derive);
}

namespace {

// parity.json's content: the first update against the reference, and
// whether every rank ended with rank 0's parameters.
absl::StatusOr<ParityReport> CheckParity(const Run& run,
                                         const std::vector<RankReport>& reports,
                                         const FirstStep& first_step) {
  bool ranks_agree = true;
  for (const RankReport& r : reports) {
    ranks_agree &= r.final_parameter_hash() == reports[0].final_parameter_hash();
  }
  absl::StatusOr<ParityReport> report = FirstUpdateParity(run, first_step, ranks_agree);
  if (!report.ok()) return report;
  // Every update reduces the same tensors: per update is the total / N.
  const RankTiming& timing = reports[0].timing();
  const int updates = reports[0].update_loss_size();
  if (updates > 0) {
    report->set_reducer_collectives(timing.collectives() / updates);
    report->set_reducer_bytes(static_cast<int64_t>(timing.bytes_reduced()) / updates);
    report->set_reducer_stats_scope(absl::StrCat(
        "rank 0's reducer per update: its totals over this attempt's ", updates,
        " updates (", timing.collectives(), " collectives, ",
        static_cast<int64_t>(timing.bytes_reduced()), " bytes) divided by ", updates));
  }
  report->add_not_measured("rank_weight_sums");
  const std::vector<std::string> why = ExplainParity(run.inputs.audit, &*report);
  if (!why.empty()) {
    LOG(ERROR) << "parity FAILED, and the layer audit says why: " << absl::StrJoin(why, "; ");
  }
  // Each rank's clip factor at the first update, when this attempt ran it.
  std::vector<double> rank_clip_factors;
  if (run.fresh()) {
    for (const RankReport& r : reports) {
      if (r.update_clip_factor_size() > 0) rank_clip_factors.push_back(r.update_clip_factor(0));
    }
  }
  const std::vector<std::string> recipe = ExplainRecipe(*run.config, first_step, rank_clip_factors,
                                                        &*report);
  if (!recipe.empty()) {
    LOG(ERROR) << "parity FAILED, and the recipe says why: " << absl::StrJoin(recipe, "; ");
  }
  return report;
}

// The run's sampler audit of `epochs` epochs: whole, or above
// audit_slots_file_above slots streamed, its slots to
// sampler_audit.slots in the run folder (written before the JSON that
// names it). A whole audit removes the side file an earlier attempt's
// large audit left, so the folder holds none that its JSON does not name.
absl::StatusOr<SamplerAudit> AuditTheRun(Run& run, int epochs) {
  const TrainingConfig& config = *run.config;
  const std::vector<std::string>& ids = run.data.train_ids;
  const int64_t slots = static_cast<int64_t>(ids.size()) * epochs;
  const std::string side_file = run.options->artifact_dir + "/sampler_audit.slots";
  if (slots <= run.options->audit_slots_file_above) {
    std::error_code ec;
    std::filesystem::remove(side_file, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot remove the earlier audit's ", side_file, ": ", ec.message()));
    }
    return AuditSampler(*run.plugins().sampler, config.sampler().name(), ids,
                        run.options->world_size, config.seeds().sampler(), epochs,
                        run.local_batch, config.accumulation_steps());
  }
  return StreamSamplerAuditToFile(
      *run.plugins().sampler, config.sampler().name(), static_cast<int64_t>(ids.size()),
      run.options->world_size, config.seeds().sampler(), epochs, run.local_batch,
      config.accumulation_steps(), side_file, &ids);
}

// The checked updates this attempt judges: its own, from where it started,
// and below that the points earlier attempts recorded (an attempt of
// another length recorded other updates).
std::vector<int64_t> JudgedCheckUpdates(const Run& run) {
  const int64_t start = run.cursor.total_updates;
  std::set<int64_t> judged;
  for (int64_t u : run.inputs.check_updates) {
    if (u >= start) judged.insert(u);
  }
  for (int64_t u : RecordedTrajectoryUpdates(run.options->artifact_dir)) {
    if (u < start) judged.insert(u);
  }
  judged.insert(0);
  return {judged.begin(), judged.end()};
}

// Why the whole run cannot be judged against one reference, or empty: an
// attempt that changed the recipe (--allow_recipe_change) trained another
// recipe than the reference.
// `state` is the run folder's run_state.json, as read.
std::string WhyNotJudged(const Run& run, const ParityReport& first_update,
                         const absl::StatusOr<RunFolderState>& state) {
  if (!run.options->whole_run_references) {
    return "this run was asked for no whole-run verdict (train --whole_run_parity=false)";
  }
  const auto kind = [](const std::string& device) { return device.substr(0, device.find(':')); };
  if (kind(first_update.device()) != kind(first_update.reference_device())) {
    return absl::StrCat("the run (", first_update.device(), ") and its reference (",
                        first_update.reference_device(),
                        ") compute on different kinds of device, whose rounding differs by "
                        "more than a reduction order; the first update is judged with the "
                        "cross-device tolerance");
  }
  if (!state.ok()) return std::string(state.status().message());
  std::set<int> world_sizes;
  for (const AttemptRecord& attempt : state->attempts()) world_sizes.insert(attempt.world_size());
  const std::string& dependence = run.options->loaded->plugins.world_size_dependence;
  if (world_sizes.size() > 1 && !dependence.empty()) {
    return absl::StrCat(
        "the run's attempts trained on ", absl::StrJoin(world_sizes, " and "),
        " workers (checkpoint.allow_world_size_change), and ", dependence,
        ", so from the change on it trained other examples than the "
        "reference (world_size_change.json says which); the first update is judged");
  }
  for (const AttemptRecord& attempt : state->attempts()) {
    if (attempt.recipe_changes_size() > 0) {
      return absl::StrCat("attempt ", attempt.attempt(),
                          " changed the recipe (--allow_recipe_change), so the run trained "
                          "more than one recipe and its reference one; the first update, "
                          "taken with the first recipe, is judged");
    }
  }
  return "";
}

// The config fingerprints of every attempt of the run (`state`, its
// run_state.json; an attempt recorded before they were kept gives none) and
// this one's.
std::vector<std::string> AttemptFingerprints(const Run& run, const RunFolderState& state) {
  std::vector<std::string> fingerprints = {run.options->loaded->fingerprint};
  for (const AttemptRecord& attempt : state.attempts()) {
    if (!attempt.config_fingerprint().empty()) fingerprints.push_back(attempt.config_fingerprint());
  }
  return fingerprints;
}

// The fingerprints of the attempts that trained this attempt's recipe:
// those since the last recipe change (--allow_recipe_change), this one's
// included. REQUIRES: `state` read.
std::vector<std::string> RecipeFingerprints(const Run& run, const RunFolderState& state) {
  std::vector<std::string> fingerprints = {run.options->loaded->fingerprint};
  for (const AttemptRecord& attempt : state.attempts()) {
    if (attempt.recipe_changes_size() > 0) fingerprints = {run.options->loaded->fingerprint};
    if (!attempt.config_fingerprint().empty()) fingerprints.push_back(attempt.config_fingerprint());
  }
  return fingerprints;
}

// The config fingerprints the run's trajectory points may carry: this
// attempt's, and, when the run's updates ignore the world size, those of
// its attempts on other numbers of workers. REQUIRES: `state` read.
std::vector<std::string> RunFingerprints(const Run& run, const RunFolderState& state) {
  if (!run.options->loaded->plugins.world_size_dependence.empty()) {
    return {run.options->loaded->fingerprint};
  }
  return AttemptFingerprints(run, state);
}

// The whole run against its references, made at this point when needed.
absl::StatusOr<WholeRunParity> JudgeWholeRun(const Run& run, const ParityReport& first_update) {
  const std::vector<int64_t> checks = JudgedCheckUpdates(run);
  if (run.stopped_by == kStoppedByParity) {
    const bool by_check = run.verifier != nullptr && run.verifier->record().has_first_failure();
    return NotJudged(
        checks, by_check
                    ? absl::StrCat("update ", run.verifier->record().first_failure().update(),
                                   " failed its every-update check and parity.stop_on_failure "
                                   "stopped the run after it")
                    : "the first update failed parity and parity.stop_on_failure stopped the "
                      "run there");
  }
  const absl::StatusOr<RunFolderState> state = ReadRunFolderState(run.options->artifact_dir);
  const std::string why_not = WhyNotJudged(run, first_update, state);
  if (!why_not.empty()) return NotJudged(checks, why_not);
  WholeRunRequest request;
  request.check_updates = checks;
  request.run_length = run.inputs.run_length;
  absl::StatusOr<WholeRunReferences> references = run.options->whole_run_references(request);
  if (!references.ok()) return references.status();
  return CheckWholeRunParity(run.options->artifact_dir, RunFingerprints(run, *state),
                             *references, checks, run.config->parity(), first_update.derived());
}

// The every-update checks' record of the run, or why there is none.
EveryUpdateVerdict EveryUpdateRecord(const Run& run) {
  if (run.verifier != nullptr) return run.verifier->record();
  EveryUpdateVerdict off;
  off.set_not_verified("parity { every_update: false }");
  return off;
}

// A checked update whose kept state could not be used: it fails, saying why.
UpdateReplay Unreadable(int64_t update, const absl::Status& why) {
  UpdateReplay out;
  out.set_update(static_cast<int32_t>(update));
  out.set_mode("unreadable");
  out.add_failures(absl::StrCat("replay of update ", update, ": ", why.message()));
  return out;
}

// The fingerprints a checked update's kept state may carry: `recipe`,
// those of the attempts that trained this recipe, which this config's
// plugins recompute; `any`, every attempt's.
struct ReplayFingerprints {
  std::vector<std::string> recipe;
  std::vector<std::string> any;
};

// The replay of checked update `update` from what the run kept of it.
UpdateReplay ReplayChecked(const Run& run, const ReplayFingerprints& stamps, int64_t update) {
  const std::string& dir = run.options->artifact_dir;
  const std::vector<std::string>& fingerprints = stamps.recipe;
  UpdateReplay out;
  out.set_update(static_cast<int32_t>(update));
  const int64_t examples = static_cast<int64_t>(run.data.train->size());
  absl::StatusOr<ReplayInputs> inputs = ReadReplayInputs(dir, update, examples, fingerprints);
  if (absl::IsFailedPrecondition(inputs.status()) &&
      ReadReplayInputs(dir, update, examples, stamps.any).ok()) {
    out.set_mode("not_replayed");
    out.set_not_replayed(
        "an attempt under an earlier recipe (--allow_recipe_change) trained it: this "
        "config's optimizer and schedule would not recompute it");
    return out;
  }
  if (absl::IsNotFound(inputs.status())) {
    out.set_mode("not_replayed");
    out.set_not_replayed(
        "its state was not kept (an attempt with parity { replay: false } or on one worker "
        "trained it, or the run stopped before it)");
    return out;
  }
  absl::StatusOr<TrajectoryPoint> after =
      inputs.ok() ? ReadTrajectoryPoint(dir, update, fingerprints)
                  : absl::StatusOr<TrajectoryPoint>(inputs.status());
  if (!after.ok()) return Unreadable(update, after.status());
  inputs->state.parameters_after = std::move(after->checked.parameters);
  ReplayTools tools;
  tools.make_model = [&run] { return run.options->loaded->model.Build(); };
  tools.optimizer = run.options->loaded->optimizer.plugin.get();
  tools.examples = run.data.train.get();
  tools.generator_seed = run.config->seeds().model_init() + 0x9E3779B97F4A7C15ULL;
  tools.timeout = absl::Seconds(run.config->run().collective_timeout_seconds());
  tools.make_schedule = [&run] { return run.options->loaded->plugins.schedule.Create(); };
  absl::StatusOr<UpdateReplay> replay = ReplayUpdate(inputs->update, inputs->state, tools);
  if (!replay.ok()) return Unreadable(update, replay.status());
  return *std::move(replay);
}

// The checked updates replayed (parity.replay), or why none was.
ReplayVerdict ReplayCheckedUpdates(const Run& run, const ReplayFingerprints& fingerprints) {
  if (!run.config->parity().replay()) {
    ReplayVerdict off = ReplayVerdictOf({});
    off.set_not_replayed("parity { replay: false }");
    return off;
  }
  std::vector<UpdateReplay> updates;
  for (int64_t update : JudgedCheckUpdates(run)) {
    updates.push_back(ReplayChecked(run, fingerprints, update));
    const UpdateReplay& last = updates.back();
    LOG(INFO) << "replay of update " << update << ": " << last.mode()
              << (last.mode() == "not_replayed" ? absl::StrCat(" (", last.not_replayed(), ")")
                                                : absl::StrCat(last.pass() ? ", passed" : ", FAILED",
                                                               " in ", last.seconds(), " s"));
  }
  return ReplayVerdictOf(std::move(updates));
}

// The parity of the run's first update with the reference's: this
// attempt's, or, on a resume, the one its first attempt recorded (none when
// that attempt left no first_step.json). The first attempt's record is read
// here and freed on return, before the sampler audit is built.
absl::StatusOr<std::optional<ParityReport>> CheckFirstStepParity(
    const Run& run, const std::vector<RankReport>& reports, const FirstStep& recorded) {
  absl::StatusOr<ParityReport> parity;
  if (run.fresh()) {
    parity = CheckParity(run, reports, recorded);
    if (!parity.ok()) return parity.status();
    parity->set_first_step_attempt(run.options->attempt);
  } else {
    FirstStep earlier;
    const std::string path = run.options->artifact_dir + "/first_step.json";
    ArtifactStamp earlier_stamp;
    if (absl::Status s = ReadArtifact(path, &earlier, &earlier_stamp); !s.ok()) {
      LOG(WARNING) << "parity not checked: this attempt resumed and " << s.message();
      return std::optional<ParityReport>();
    }
    parity = CheckParity(run, reports, earlier);
    if (!parity.ok()) return parity.status();
    parity->set_first_step_attempt(earlier_stamp.attempt());
  }
  absl::StatusOr<WholeRunParity> whole_run = JudgeWholeRun(run, *parity);
  if (!whole_run.ok()) return whole_run.status();
  AddWholeRunVerdict(*std::move(whole_run), &*parity);
  AddEveryUpdateVerdict(EveryUpdateRecord(run), &*parity);
  // A checked update's kept state, whose record holds its own world size
  // and shares, is replayed whichever attempt trained it.
  const absl::StatusOr<RunFolderState> state = ReadRunFolderState(run.options->artifact_dir);
  ReplayFingerprints stamps;
  stamps.recipe = stamps.any = {run.options->loaded->fingerprint};
  if (state.ok()) {
    stamps.recipe = RecipeFingerprints(run, *state);
    stamps.any = AttemptFingerprints(run, *state);
  }
  AddReplayVerdict(ReplayCheckedUpdates(run, stamps), &*parity);
  for (VerdictPower& power : VerdictPowers(*parity)) *parity->add_power() = std::move(power);
  return std::optional<ParityReport>(*std::move(parity));
}

// finished.json: the run reached its stopping point (written last).
absl::Status RecordFinish(const Run& run, int64_t total_updates) {
  const TrainingConfig& config = *run.config;
  FinishRecord finish;
  finish.set_updates(static_cast<int32_t>(total_updates));
  const int64_t max_updates = config.run().max_updates();
  finish.set_stopped_by(!run.stopped_by.empty() ? run.stopped_by
                        : max_updates > 0 && total_updates >= max_updates ? "max_updates"
                                                                          : "epochs");
  finish.set_max_updates(static_cast<int32_t>(max_updates));
  finish.set_epochs(config.epochs());
  return WriteFinishRecord(run.options->artifact_dir, run.stamp(), finish);
}

// Rank 0: the attempt's curves as DIR/tensorboard/'s next event file
// (artifacts/tensorboard_curves.h).
absl::Status WriteTensorBoardCurves(const Run& run, const RunSummary& summary,
                                    const ValidationReport* validation) {
  const absl::Time now = absl::Now();
  return WriteEventFile(
      run.options->artifact_dir + "/" + kTensorBoardFolder,
      EventFileName(absl::ToUnixSeconds(now), run.stamp().attempt()),
      TrainingCurvesFile(summary, validation, absl::ToDoubleSeconds(now - absl::UnixEpoch())));
}

// The attempt's summary from the gathered reports, placed at the run's
// global updates (its first and the run's total after it): what the
// finished and the preempted attempt both start from.
RunSummary AttemptSummary(const Run& run, const RankReportBuilder& builder,
                          const std::vector<RankReport>& reports) {
  RunSummary summary = BuildRunSummary(builder.totals(), reports);
  summary.set_first_update(static_cast<int32_t>(run.cursor.total_updates));
  summary.set_total_updates(static_cast<int32_t>(run.cursor.total_updates + builder.updates()));
  return summary;
}

// Rank 0: the summary, parity, the sampler audit and every artifact, the
// curves, then the finish record.
absl::StatusOr<TrainingOutcome> WriteArtifacts(
    Run& run, const RankReportBuilder& builder,
    const std::vector<RankReport>& reports, ValidationReport validation,
    const FirstStep& first_step, const CheckpointCost& cost,
    const BufferComparison& buffers) {
  const TrainingConfig& config = *run.config;
  TrainingOutcome outcome;
  outcome.updates = builder.updates();
  const int64_t total_updates = run.cursor.total_updates + builder.updates();
  validation.set_update(static_cast<int32_t>(total_updates));
  run.manifest.set_updates(static_cast<int32_t>(builder.updates()));
  for (int64_t accepted : builder.totals().accepted_per_update) {
    run.manifest.add_accepted_examples_per_update(static_cast<int32_t>(accepted));
  }
  RunSummary summary = AttemptSummary(run, builder, reports);
  summary.set_final_parameter_hash(reports[0].final_parameter_hash());
  summary.set_resumed_from_generation(run.resume.generation());
  summary.set_purpose(run.options->purpose);
  summary.set_loss_meaning(
      "the whole update's weighted loss, sum_i w_i * loss_i over every rank's "
      "slots (the ranks' shares added)");
  run.manifest.set_purpose(run.options->purpose);
  validation.set_purpose(run.options->purpose);
  *summary.mutable_checkpoint() = cost;
  *summary.mutable_buffers() = buffers;
  if (run.options->membership.changes() > 0) *summary.mutable_membership() = run.options->membership;
  RunArtifactMessages artifacts;
  ParityReport parity;
  absl::StatusOr<std::optional<ParityReport>> checked = std::optional<ParityReport>();
  if (!run.options->reference_dir.empty()) {
    checked = CheckFirstStepParity(run, reports, first_step);
  }
  if (!checked.ok()) return checked.status();
  if (checked->has_value()) {
    parity = **std::move(checked);
    outcome.parity_checked = true;
    outcome.parity_pass = parity.pass();
    outcome.parity_verdict = ParityVerdictLine(parity);
    summary.set_parity(parity.pass() ? "pass" : "fail");
    artifacts.parity = &parity;
  }
  // What reading the reference freed (some 20 MB) goes back to the system
  // before the sampler audit is built, so the two do not add up.
  ReturnFreeHeapPages();
  // The epochs the run trained (a run stopped by run.max_updates audits
  // the epochs it reached, not every epoch of the config).
  const std::vector<int64_t>& epoch_of_update = builder.totals().epoch_of_update;
  const int trained_epochs = std::min<int>(
      config.epochs(),
      1 + (epoch_of_update.empty() ? run.cursor.epoch
                                   : static_cast<int>(epoch_of_update.back())));
  absl::StatusOr<SamplerAudit> audit = AuditTheRun(run, trained_epochs);
  if (!audit.ok()) return audit.status();
  artifacts.manifest = &run.manifest;
  artifacts.summary = &summary;
  artifacts.validation = &validation;
  artifacts.audit = &*audit;
  if (ResumeWorthRecording(run.resume)) artifacts.resume = &run.resume;
  artifacts.stamp = run.stamp();
  const std::string& dir = run.options->artifact_dir;
  if (absl::Status s = WriteRunArtifacts(dir, artifacts); !s.ok()) return s;
  if (absl::Status s = WriteTensorBoardCurves(run, summary, &validation); !s.ok()) return s;
  if (absl::Status s = RecordFinish(run, total_updates); !s.ok()) return s;
  LogRunFinished(builder.updates(), run.options->world_size, summary, validation, dir);
  return outcome;
}

}  // namespace

absl::StatusOr<TrainingOutcome> FinishRun(Run& run, RankReportBuilder& report,
                                          const FirstStep& first_step,
                                          const CheckpointCost& cost) {
  absl::StatusOr<ValidationReport> validation =
      Validate(run, run.cursor.total_updates + report.updates());
  if (!validation.ok()) return validation.status();
  absl::StatusOr<std::vector<RankReport>> reports = FinishReports(run, report);
  if (!reports.ok()) return reports.status();
  absl::StatusOr<BufferComparison> buffers = CompareBuffersAcrossRanks(run);
  if (!buffers.ok()) return buffers.status();
  if (!run.writer()) {
    TrainingOutcome outcome;
    outcome.updates = report.updates();
    return outcome;
  }
  return WriteArtifacts(run, report, *reports, *validation, first_step, cost, *buffers);
}

absl::Status WritePreemptedCurves(Run& run, RankReportBuilder& report) {
  absl::StatusOr<std::vector<RankReport>> reports = FinishReports(run, report);
  if (!reports.ok()) return reports.status();
  if (!run.writer() || report.updates() == 0) return absl::OkStatus();
  return WriteTensorBoardCurves(run, AttemptSummary(run, report, *reports),
                                /*validation=*/nullptr);
}

}  // namespace receipt_parity
