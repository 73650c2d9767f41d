#include "drill/random_kill_drill.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/generation_layout.h"
#include "cli/command_line.h"
#include "drill/generation_audit.h"
#include "drill/trial_plan.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "artifacts/resume_record.pb.h"
#include "artifacts/run_folder_state.pb.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// The uninterrupted run, as the trials are judged against it.
struct Baseline {
  int64_t total_updates = 0;
  std::string final_hash;
  // Each of its phases' median duration in it (microseconds).
  std::map<KillPhase, int64_t> phase_us;
};

// The folders and logs of trial `number`: DIR/trial-NN/.
struct TrialFolder {
  std::string folder;
  std::string run_dir;  // folder/interrupted, the run's folder (restart too)

  std::string Log(const std::string& run) const { return folder + "/" + run + "_run.log"; }
};

TrialFolder TrialFolderOf(const std::string& out, int number) {
  TrialFolder t;
  t.folder = absl::StrFormat("%s/trial-%02d", out, number);
  t.run_dir = t.folder + "/interrupted";
  return t;
}

// "gen-000004", or "no generation" for 0.
std::string Generation(int64_t generation) {
  return generation > 0 ? GenerationFolderName(generation) : "no generation";
}

int64_t MedianMicros(std::vector<double> seconds) {
  if (seconds.empty()) return 0;
  std::sort(seconds.begin(), seconds.end());
  return static_cast<int64_t>(seconds[seconds.size() / 2] * 1e6);
}

// forward_backward: an update's time outside the reducer; allreduce: the
// reducer's; save: a save's; validation_gather (not timed by the run): a
// whole update's, as the stand-in of a forward over a batch and a gather.
// With checkpoint.async, save is the copy (blocked_seconds) and
// save_background the write (save_seconds).
std::map<KillPhase, int64_t> PhaseDurations(const RunSummary& summary) {
  std::vector<double> compute, sync, whole;
  for (const RankTiming& timing : summary.timing()) {
    for (int i = 0; i < timing.update_seconds_size(); ++i) {
      const double in_sync = i < timing.sync_seconds_size() ? timing.sync_seconds(i) : 0;
      whole.push_back(timing.update_seconds(i));
      sync.push_back(in_sync);
      compute.push_back(timing.update_seconds(i) - in_sync);
    }
  }
  return {{KillPhase::kForwardBackward, MedianMicros(compute)},
          {KillPhase::kAllReduce, MedianMicros(sync)},
          {KillPhase::kValidationGather, MedianMicros(whole)},
          {KillPhase::kSave, MedianMicros({summary.checkpoint().blocked_seconds_median()})},
          {KillPhase::kSaveBackground,
           MedianMicros({summary.checkpoint().save_seconds_median()})}};
}

std::string DescribeDurations(const std::map<KillPhase, int64_t>& us) {
  return absl::StrJoin(us, ", ", [](std::string* out, const auto& phase_and_us) {
    absl::StrAppend(out, KillPhaseName(phase_and_us.first), " ", phase_and_us.second, " us");
  });
}

// 0. The uninterrupted run: what the trials are drawn from and judged by.
absl::StatusOr<Baseline> RunBaseline(const RandomDrillOptions& o, Trace& trace) {
  const std::string dir = o.setup.out + "/uninterrupted";
  const std::string log = o.setup.out + "/uninterrupted_run.log";
  trace.Line("[uninterrupted] run in " + dir);
  if (absl::Status s =
          RequireSuccess(o.setup.program.Run({"--out=" + dir}, log), "uninterrupted run", log);
      !s.ok()) {
    return s;
  }
  RunSummary summary;
  if (absl::Status s =
          ReadArtifact(o.setup.program.Artifact(dir, "run_summary.json"), &summary);
      !s.ok()) {
    return s;
  }
  Baseline baseline;
  baseline.total_updates = summary.first_update() + summary.updates();
  baseline.final_hash = summary.final_parameter_hash();
  for (KillPhase phase : PhasesOfRun(o.setup.world_size, o.setup.async_save)) {
    baseline.phase_us[phase] = PhaseDurations(summary).at(phase);
  }
  trace.Line(absl::StrCat("  ", baseline.total_updates, " updates, final parameters ",
                          baseline.final_hash, "; median phase durations: ",
                          DescribeDurations(baseline.phase_us)));
  return baseline;
}

// 1. The trials, from the seed; their choices printed and kept.
absl::StatusOr<TrialPlan> DrawTrials(const RandomDrillOptions& o, const Baseline& baseline,
                                     Trace& trace, RecoveryReport& report) {
  TrialPlanInputs in;
  in.seed = o.seed;
  in.trials = o.trials;
  in.sigterm_trials = o.sigterm_trials;
  in.world_size = o.setup.world_size;
  in.every_updates = o.setup.every_updates;
  in.total_updates = baseline.total_updates;
  in.async_save = o.setup.async_save;
  for (KillPhase phase : PhasesOfRun(o.setup.world_size, o.setup.async_save)) {
    in.delay_window_us[phase] = o.max_delay_us > 0 ? o.max_delay_us : baseline.phase_us.at(phase);
  }
  absl::StatusOr<TrialPlan> plan = PlanTrials(in);
  if (!plan.ok()) return plan.status();
  RandomDrillPlan& kept = *report.mutable_random_plan();
  kept.set_seed(o.seed);
  kept.set_every_updates(o.setup.every_updates);
  kept.set_total_updates(static_cast<int32_t>(baseline.total_updates));
  std::vector<std::string> names;
  for (KillPhase phase : plan->phases) {
    names.emplace_back(KillPhaseName(phase));
    kept.add_phases(names.back());
    (*kept.mutable_delay_window_us())[names.back()] =
        static_cast<int32_t>(in.delay_window_us.at(phase));
  }
  kept.set_sigterm_trials(o.sigterm_trials);
  std::vector<std::string> sigterm_names;
  for (KillPhase phase : plan->sigterm_phases) {
    sigterm_names.emplace_back(KillPhaseName(phase));
    kept.add_sigterm_phases(sigterm_names.back());
  }
  trace.Line(absl::StrCat(
      o.trials, " trials, seed ", o.seed, " (--seed=", o.seed,
      " draws them again); phases in the order ", absl::StrJoin(names, ", "),
      o.sigterm_trials > 0
          ? absl::StrCat("; then ", o.sigterm_trials, " SIGTERM trials in the order ",
                         absl::StrJoin(sigterm_names, ", "))
          : "",
      "; delays from [0, ", DescribeDurations(in.delay_window_us), "]"));
  for (const PlannedTrial& t : plan->trials) {
    trace.Line(absl::StrCat("  trial ", t.number, ": ", t.Describe()));
  }
  return plan;
}

// The interrupted run of a trial. True when it died by its injection;
// false with the failure in `row` otherwise. Errors: the run refused its
// input (InvalidArgument), or could not be started.
absl::StatusOr<bool> RunKilled(const TrainProgram& program, const PlannedTrial& planned,
                               const TrialFolder& t, Trace& trace, DrillTrial& row) {
  std::vector<std::string> args = planned.TrainFlags();
  args.insert(args.begin(), "--out=" + t.run_dir);
  absl::StatusOr<ProcessExit> killed = program.Run(args, t.Log("interrupted"));
  if (!killed.ok()) return killed.status();
  row.set_fault_line(FaultInjectionLine(t.Log("interrupted")));
  if (killed->ok() || row.fault_line().empty()) {
    if (!killed->ok() && killed->exit_code() == kExitBadInput) {
      return FailedBeforeInjection(*killed, t.Log("interrupted"));
    }
    row.add_failures(absl::StrCat("the run ", killed->Describe(),
                                  " without its fault injection; see ", t.Log("interrupted")));
    return false;
  }
  row.set_killed_how(KilledHow(t.Log("interrupted"), *killed));
  row.set_killed_at_phase_end(row.fault_line().find(" at the end of ") != std::string::npos);
  trace.Line("  " + row.fault_line());
  trace.Line("  launcher: " + row.killed_how());
  const std::string planned_kill =
      absl::StrCat("rank ", planned.rank, " kills itself (SIGKILL) ");
  const std::string planned_place =
      absl::StrCat(KillPhaseName(planned.phase), " of update ", planned.update);
  if (row.fault_line().find(planned_kill) == std::string::npos ||
      row.fault_line().find(planned_place) == std::string::npos) {
    row.add_failures("the kill was not the planned one: " + row.fault_line());
  }
  return true;
}

// The update the preempted run's ranks stopped after, from its
// run_state.json; the failure in `row` when it recorded no preemption.
absl::Status ReadStop(const TrainProgram& program, const TrialFolder& t, DrillTrial& row) {
  RunFolderState state;
  if (absl::Status s = ReadJsonFile(program.Artifact(t.run_dir, "run_state.json"), &state);
      !s.ok()) {
    return s;
  }
  const AttemptRecord* last = state.attempts().empty() ? nullptr : &*state.attempts().rbegin();
  if (last == nullptr || last->ended() != "preempted") {
    row.add_failures(absl::StrCat("run_state.json does not record a preemption (its last ",
                                  "attempt ended \"", last == nullptr ? "" : last->ended(), "\")"));
    return absl::OkStatus();
  }
  row.set_stopped_at_update(last->ended_at_update());
  row.set_saved_at_stop(last->saved_at_end());
  return absl::OkStatus();
}

// A preemption trial's interrupted run: it must receive its SIGTERM (its
// "fault injection:" line), stop after an update at or past the one in
// flight, record the stop in run_state.json with a generation saved there,
// and exit 4. True when it stopped (the restart is then checked); false
// with the failure in `row` otherwise. Errors as RunKilled's.
absl::StatusOr<bool> RunPreempted(const TrainProgram& program, const PlannedTrial& planned,
                                  const TrialFolder& t, Trace& trace, DrillTrial& row) {
  std::vector<std::string> args = planned.TrainFlags();
  args.insert(args.begin(), "--out=" + t.run_dir);
  absl::StatusOr<ProcessExit> stopped = program.Run(args, t.Log("interrupted"));
  if (!stopped.ok()) return stopped.status();
  row.set_fault_line(FaultInjectionLine(t.Log("interrupted")));
  if (row.fault_line().empty() && stopped->exit_code() == kExitBadInput) {
    return FailedBeforeInjection(*stopped, t.Log("interrupted"));
  }
  if (row.fault_line().empty() || stopped->exit_code() != kExitPreempted) {
    row.add_failures(absl::StrCat("the run ", stopped->Describe(),
                                  row.fault_line().empty() ? " without its SIGTERM"
                                                           : " after its SIGTERM, not with 4",
                                  "; see ", t.Log("interrupted")));
    return false;
  }
  row.set_killed_how(LogMessage(LastLineWith(t.Log("interrupted"), "preempted after update")));
  row.set_killed_at_phase_end(row.fault_line().find(" at the end of ") != std::string::npos);
  trace.Line("  " + row.fault_line());
  trace.Line("  " + row.killed_how());
  if (row.fault_line().find(absl::StrCat("rank ", planned.rank, " sends itself SIGTERM")) ==
      std::string::npos) {
    row.add_failures("the signal was not the planned one: " + row.fault_line());
  }
  if (absl::Status s = ReadStop(program, t, row); !s.ok()) return s;
  // A signal inside update K's forward_backward or allreduce lets update K
  // finish; one inside the save after update K stops there at the soonest.
  const int64_t soonest = planned.update + (planned.phase == KillPhase::kSave ? 0 : 1);
  if (row.stopped_at_update() < soonest) {
    row.add_failures(absl::StrCat("the ranks stopped after update ", row.stopped_at_update(),
                                  ", before the update in flight (", soonest, ") was done"));
  }
  if (!row.saved_at_stop()) row.add_failures("no generation was saved at the stop");
  return true;
}

// What the kill left: the folders, and every advertised generation
// checked as a restart restores it.
absl::Status InspectDisk(const TrainProgram& program, const TrialFolder& t, Trace& trace,
                         DrillTrial& row) {
  const std::string root = t.run_dir + program.artifacts_of + "/checkpoints";
  trace.Line("  on disk after the kill:");
  for (const std::string& line : DescribeDisk(root)) {
    row.add_on_disk_after_kill(line);
    trace.Line("    " + line);
  }
  absl::StatusOr<std::vector<AdvertisedGeneration>> advertised =
      CheckAdvertisedGenerations(root);
  if (!advertised.ok()) return advertised.status();
  trace.Line("  advertised, checked as a restart restores them:");
  for (const AdvertisedGeneration& g : *advertised) {
    row.add_advertised_checked(g.line);
    trace.Line("    " + g.line);
    if (!g.restores) row.add_failures("advertised but does not restore: " + g.line);
  }
  if (!advertised->empty()) {
    row.set_advertised_generation(static_cast<int32_t>(advertised->back().generation));
    row.set_advertised_update(static_cast<int32_t>(advertised->back().update));
  }
  return absl::OkStatus();
}

// The restart's choice against what was advertised and what was done:
// after a SIGKILL at most every_updates updates are redone (2 x
// every_updates with checkpoint.async: the save in flight is lost too);
// after a preemption none (the stop saved), and the newest generation is
// the stop's.
void CheckResume(const RandomDrillOptions& o, const PlannedTrial& planned, DrillTrial& row) {
  const int64_t done_before_restart = planned.preempt ? row.stopped_at_update() : planned.update;
  const int64_t most_redone =
      planned.preempt ? 0 : (o.setup.async_save ? 2 : 1) * o.setup.every_updates;
  if (row.resumed_from() == 0) row.add_failures("the restart started from scratch");
  if (row.resumed_from() != row.advertised_generation()) {
    row.add_failures(absl::StrCat("the restart resumed from ", Generation(row.resumed_from()),
                                  ", not from the newest advertised ",
                                  Generation(row.advertised_generation())));
  }
  row.set_lost_updates(row.advertised_update() - row.resumed_update());
  row.set_updates_redone(static_cast<int32_t>(done_before_restart - row.resumed_update()));
  if (row.lost_updates() != 0) {
    row.add_failures(absl::StrCat(row.lost_updates(), " saved updates were lost"));
  }
  if (row.updates_redone() < 0 || row.updates_redone() > most_redone) {
    row.add_failures(absl::StrCat(row.updates_redone(), " updates redone: not within [0, ",
                                  planned.preempt ? "0 after a preemption's save"
                                  : o.setup.async_save
                                      ? absl::StrCat("2 x every_updates ", most_redone,
                                                     ", a background save")
                                      : absl::StrCat("every_updates ", most_redone),
                                  "]"));
  }
  if (planned.preempt && row.advertised_update() != row.stopped_at_update()) {
    row.add_failures(absl::StrCat("the newest advertised generation holds update ",
                                  row.advertised_update(), ", not the stop's ",
                                  row.stopped_at_update()));
  }
}

// The restart in the trial's folder, its choice and its final parameters.
// False with the failure in `row` when the restart did not finish.
absl::StatusOr<bool> RunRestart(const RandomDrillOptions& o, const Baseline& baseline,
                                const PlannedTrial& planned, const TrialFolder& t,
                                Trace& trace, DrillTrial& row) {
  const TrainProgram& program = o.setup.program;
  absl::StatusOr<ProcessExit> restart = program.Run({"--out=" + t.run_dir}, t.Log("restart"));
  if (absl::Status s = RequireSuccess(restart, "restart", t.Log("restart")); !s.ok()) {
    if (!restart.ok()) return restart.status();
    row.add_failures(std::string(s.message()));
    trace.Line("  " + std::string(s.message()));
    return false;
  }
  ResumeRecord resume;  // none: the restart started from scratch
  const std::string resume_path = program.Artifact(t.run_dir, "resume.json");
  if (fs::exists(resume_path)) {
    if (absl::Status s = ReadArtifact(resume_path, &resume); !s.ok()) return s;
  }
  row.set_resumed_from(resume.generation());
  row.set_resumed_update(resume.update());
  CheckResume(o, planned, row);
  absl::StatusOr<std::string> hash = FinalParameterHash(program, t.run_dir);
  if (!hash.ok()) return hash.status();
  row.set_final_parameters_equal(*hash == baseline.final_hash);
  if (!row.final_parameters_equal()) {
    row.add_failures("the final parameters differ from the uninterrupted run's");
  }
  // With no update left to run, the restored parameters are the final ones.
  const bool ran_updates = row.resumed_update() < baseline.total_updates;
  row.set_compared_update(ran_updates ? row.resumed_update() : -1);
  if (!ran_updates) row.set_bitwise_equal(row.final_parameters_equal());
  trace.Line(absl::StrCat("  restart: resumed from ", Generation(row.resumed_from()), " (update ",
                          row.resumed_update(), "): ", row.updates_redone(),
                          " update(s) redone, ", row.lost_updates(),
                          " saved update(s) lost; final parameters equal to the "
                          "uninterrupted run: ",
                          row.final_parameters_equal() ? "yes" : "no"));
  return true;
}

// One trial in DIR/trial-NN: the kill, the disk, the restart.
absl::StatusOr<DrillTrial> RunTrial(const RandomDrillOptions& o, const Baseline& baseline,
                                    const PlannedTrial& planned, Trace& trace) {
  const TrialFolder t = TrialFolderOf(o.setup.out, planned.number);
  fs::remove_all(t.folder);
  fs::create_directories(t.folder);
  DrillTrial row;
  row.set_trial(planned.number);
  row.set_rank(planned.rank);
  row.set_phase(std::string(KillPhaseName(planned.phase)));
  row.set_update(static_cast<int32_t>(planned.update));
  row.set_delay_us(static_cast<int32_t>(planned.delay_us));
  row.set_signal(planned.preempt ? "SIGTERM" : "SIGKILL");
  row.set_compared_update(-1);
  trace.Line(absl::StrCat("[trial ", planned.number, "/", o.trials + o.sigterm_trials, "] ", planned.Describe(),
                          ": interrupted run in ", t.run_dir));
  absl::StatusOr<bool> died = planned.preempt
                                  ? RunPreempted(o.setup.program, planned, t, trace, row)
                                  : RunKilled(o.setup.program, planned, t, trace, row);
  if (!died.ok()) return died.status();
  if (!*died) return row;
  if (absl::Status s = InspectDisk(o.setup.program, t, trace, row); !s.ok()) return s;
  absl::StatusOr<bool> restarted = RunRestart(o, baseline, planned, t, trace, row);
  if (!restarted.ok()) return restarted.status();
  return row;
}

// 2. The uninterrupted run again, recording the updates the restarts
// resumed at, and each trial's first resumed update against it.
absl::Status CompareFirstResumedUpdates(const RandomDrillOptions& o, const Baseline& baseline,
                                        Trace& trace, RecoveryReport& report) {
  std::set<int64_t> updates;
  for (const DrillTrial& row : report.trials()) {
    if (row.compared_update() >= 0) updates.insert(row.compared_update());
  }
  if (updates.empty()) return absl::OkStatus();
  const TrainProgram& program = o.setup.program;
  const std::string dir = o.setup.out + "/recorded";
  const std::string log = o.setup.out + "/recorded_run.log";
  trace.Line(absl::StrCat("[recorded] the uninterrupted run again in ", dir, ", recording updates ",
                          absl::StrJoin(updates, ",")));
  if (absl::Status s = RequireSuccess(
          program.Run({"--out=" + dir, "--record_update=" + absl::StrJoin(updates, ",")}, log),
          "recorded uninterrupted run", log);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> hash = FinalParameterHash(program, dir);
  if (!hash.ok()) return hash.status();
  if (*hash != baseline.final_hash) {
    report.add_failures(absl::StrCat("the uninterrupted run is not reproducible: it ended with ",
                                     baseline.final_hash, " and then with ", *hash));
  }
  for (DrillTrial& row : *report.mutable_trials()) {
    if (row.compared_update() < 0) continue;
    const std::string record = absl::StrCat("update-", row.compared_update(), ".json");
    absl::StatusOr<UpdateComparison> compared = CompareUpdateRecords(
        program.Artifact(TrialFolderOf(o.setup.out, row.trial()).run_dir, record),
        program.Artifact(dir, record));
    if (!compared.ok()) return compared.status();
    row.set_max_abs_gradient_diff(compared->max_abs_gradient_diff);
    row.set_max_abs_parameter_diff(compared->max_abs_parameter_diff);
    row.set_bitwise_equal(compared->bitwise_equal);
    if (!row.bitwise_equal()) row.add_failures("the first resumed update differs");
    trace.Line(absl::StrCat("  trial ", row.trial(), ": first resumed update ",
                            row.compared_update(), ": max abs diff gradients ",
                            row.max_abs_gradient_diff(), ", parameters ",
                            row.max_abs_parameter_diff(),
                            ", bitwise equal: ", row.bitwise_equal() ? "yes" : "no"));
  }
  return absl::OkStatus();
}

// The totals and the verdicts, per trial and over all of them.
void Summarize(const RandomDrillOptions& o, Trace& trace, RecoveryReport& report) {
  DrillTotals& totals = *report.mutable_totals();
  for (const std::string& phase : report.random_plan().phases()) {
    (*totals.mutable_per_phase())[phase] = 0;
  }
  bool bitwise = true, final_equal = true;
  for (DrillTrial& row : *report.mutable_trials()) {
    row.set_pass(row.failures_size() == 0);
    totals.set_trials(totals.trials() + 1);
    if (row.pass()) {
      totals.set_passed(totals.passed() + 1);
    } else {
      totals.set_failed(totals.failed() + 1);
    }
    ++(*totals.mutable_per_phase())[row.phase()];
    if (row.signal() == "SIGTERM") totals.set_preempted(totals.preempted() + 1);
    if (row.killed_at_phase_end()) {
      totals.set_killed_at_phase_end(totals.killed_at_phase_end() + 1);
    } else if (!row.fault_line().empty()) {
      totals.set_killed_mid_phase(totals.killed_mid_phase() + 1);
    }
    totals.set_max_updates_redone(std::max(totals.max_updates_redone(), row.updates_redone()));
    report.set_lost_updates(report.lost_updates() + row.lost_updates());
    report.set_updates_redone(report.updates_redone() + row.updates_redone());
    bitwise &= row.bitwise_equal();
    final_equal &= row.final_parameters_equal();
    for (const std::string& f : row.failures()) {
      report.add_failures(absl::StrCat("trial ", row.trial(), ": ", f));
    }
    trace.Line(absl::StrCat("trial ", row.trial(), " (", row.phase(), ", rank ", row.rank(),
                            ", update ", row.update(), "): ",
                            row.pass() ? "RECOVERED"
                                       : "NOT RECOVERED: " + absl::StrJoin(row.failures(), "; ")));
  }
  report.set_bitwise_equal(bitwise);
  report.set_final_parameters_equal(final_equal);
  report.set_pass(report.failures_size() == 0);
  trace.Line(absl::StrCat(
      "verdict: ", report.pass() ? "RECOVERED" : "NOT RECOVERED", " (", totals.passed(), " of ",
      totals.trials(), " trials; ", totals.killed_mid_phase(), " killed mid-phase, ",
      totals.killed_at_phase_end(), " at a phase's end; ", totals.preempted(),
      " preempted by SIGTERM; updates redone at most ",
      totals.max_updates_redone(), " (every_updates ", o.setup.every_updates,
      o.setup.async_save ? ", saved in the background" : "", "); saved updates lost ",
      report.lost_updates(), ")"));
}

// Removes what an earlier random drill left in `out`: its run folders
// and every trial-NN folder.
void ClearEarlierDrill(const std::string& out) {
  fs::remove_all(out + "/uninterrupted");
  fs::remove_all(out + "/recorded");
  std::error_code ec;
  std::vector<fs::path> trials;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    if (entry.path().filename().string().rfind("trial-", 0) == 0) trials.push_back(entry.path());
  }
  for (const fs::path& folder : trials) fs::remove_all(folder, ec);
  fs::create_directories(out);
}

}  // namespace

absl::Status RunRandomDrill(const RandomDrillOptions& o, Trace& trace, RecoveryReport& report) {
  ClearEarlierDrill(o.setup.out);
  report.set_config(o.setup.program.config_path);
  report.set_world_size(o.setup.world_size);
  report.set_kill_point("random");
  report.set_killed_rank(-1);
  trace.Line(absl::StrCat("random fault drill: ", o.setup.program.config_path, ", ",
                          o.setup.world_size, " worker(s), a generation every ",
                          o.setup.every_updates, " updates"));
  absl::StatusOr<Baseline> baseline = RunBaseline(o, trace);
  if (!baseline.ok()) return baseline.status();
  absl::StatusOr<TrialPlan> plan = DrawTrials(o, *baseline, trace, report);
  if (!plan.ok()) return plan.status();
  for (const PlannedTrial& planned : plan->trials) {
    absl::StatusOr<DrillTrial> row = RunTrial(o, *baseline, planned, trace);
    if (!row.ok()) return row.status();
    *report.add_trials() = *std::move(row);
  }
  if (absl::Status s = CompareFirstResumedUpdates(o, *baseline, trace, report); !s.ok()) {
    return s;
  }
  Summarize(o, trace, report);
  return absl::OkStatus();
}

}  // namespace receipt_parity
