// bazel run //drill:fault_drill -- --config=CONFIG --out=DIR
//     [--kill_point=mid_shard] [--kill_rank=1] [--kill_generation=2]
// bazel run //drill:fault_drill -- --config=CONFIG --out=DIR
//     --kill_at=random [--trials=4] [--sigterm_trials=0] [--seed=S]
//     [--max_kill_delay_us=D]
//
// --kill_at=fixed (the default): three real runs of //trainer:train (found
// in this binary's runfiles), each its own processes:
//   1. DIR/interrupted: a rank SIGKILLs itself at --kill_point of
//      generation --kill_generation's save; the launcher reports the death;
//   2. the restart in the same folder: it must resume from the newest
//      advertised generation, ignoring and cleaning up the partial one;
//   3. DIR/uninterrupted: the same config without a failure, recording the
//      update the restart resumed at.
// --kill_at=random: --trials trials, each a rank SIGKILLed at a random
// moment inside a random phase, then --sigterm_trials preemptions (a rank
// sent SIGTERM at such a moment: the run must save at an update boundary,
// exit 4 and resume there; drill/random_kill_drill.h).
// Writes DIR/failure_trace.log (what was killed where, what was on disk,
// which generation was chosen and why) and DIR/recovery.json
// (RecoveryReport in drill/drill_report.proto).
//
// Exit codes: 0 recovery verified (nothing lost, the first resumed update
// and the final parameters bitwise equal to the uninterrupted run; for
// every trial); 3 it was not; 2 bad input; 1 a run failed unexpectedly.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/recovery.h"
#include "cli/command_line.h"
#include "cli/runfiles_locator.h"
#include "drill/drill_runs.h"
#include "drill/random_kill_drill.h"
#include "logging/glog.h"
#include "io/atomic_file.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "artifacts/resume_record.pb.h"
#include "drill/drill_report.pb.h"

ABSL_FLAG(std::string, config, "", "Training config with checkpoint.every_updates > 0.");
ABSL_FLAG(std::string, out, "", "Output folder.");
ABSL_FLAG(std::string, kill_at, "fixed",
          "fixed: one kill at --kill_point of --kill_generation's save; random: "
          "--trials kills at random moments inside random phases.");
ABSL_FLAG(std::string, kill_point, "mid_shard",
          "before_shard, mid_shard, after_shard_before_rename, before_manifest, mid_manifest.");
ABSL_FLAG(int32_t, kill_rank, 1, "The rank that dies (rank 0 for a one-worker config).");
ABSL_FLAG(int32_t, kill_generation, 2, "The generation whose save is interrupted.");
ABSL_FLAG(int32_t, trials, 4,
          "--kill_at=random: the trials; with as many as the run has phases, every "
          "phase is hit.");
ABSL_FLAG(int32_t, sigterm_trials, 0,
          "--kill_at=random: preemption trials after --trials: SIGTERM at a random moment "
          "inside forward_backward, allreduce or save; the run must stop at an update "
          "boundary, save there and exit 4, and the restart resume there losing nothing.");
ABSL_FLAG(uint64_t, seed, 0,
          "--kill_at=random: the seed of the trials' draws; 0 draws one from the clock "
          "(printed and written to recovery.json).");
ABSL_FLAG(int64_t, max_kill_delay_us, 0,
          "--kill_at=random: the kill's delay is drawn from [0, this] in every phase; 0: "
          "from [0, the phase's median duration in the uninterrupted run].");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// What the fixed-point drill runs, from its flags and the config; checked.
struct DrillPlan {
  DrillSetup setup;
  int kill_rank = 1;
  std::string kill_point;
  int kill_generation = 2;
  // <out>/interrupted and <out>/uninterrupted, the two run folders.
  std::string interrupted;
  std::string uninterrupted;

  const TrainProgram& program() const { return setup.program; }
  std::string Log(const std::string& run) const { return setup.out + "/" + run + "_run.log"; }
};

// Errors: MakeDrillSetup's; InvalidArgument (exit 2) for inconsistent kill
// flags.
absl::StatusOr<DrillPlan> MakeDrillPlan(DrillSetup setup) {
  DrillPlan plan;
  plan.kill_rank = absl::GetFlag(FLAGS_kill_rank);
  plan.kill_generation = absl::GetFlag(FLAGS_kill_generation);
  plan.kill_point = absl::GetFlag(FLAGS_kill_point);
  if (absl::StatusOr<FaultPlan> fault =
          MakeFaultPlan(plan.kill_rank, plan.kill_point, plan.kill_generation);
      !fault.ok()) {
    return absl::InvalidArgumentError(fault.status().message());
  }
  if (plan.kill_rank >= setup.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kill_rank=", plan.kill_rank, ": the config has ", setup.world_size, " rank(s)"));
  }
  plan.interrupted = setup.out + "/interrupted";
  plan.uninterrupted = setup.out + "/uninterrupted";
  plan.setup = std::move(setup);
  return plan;
}

// The killed run ended without a kill: it never reached the save, or it
// failed first (exit 2: bad input, as the train binary reports it).
absl::Status KillNotReached(const DrillPlan& plan, const ProcessExit& killed) {
  if (killed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run finished without reaching generation ", plan.kill_generation,
        "'s save: lower --kill_generation or raise the run's updates"));
  }
  return FailedBeforeInjection(killed, plan.Log("interrupted"));
}

// 1. The interrupted run: how the rank died, what it left on disk, what a
// reader of the folder finds advertised before anything restarts.
absl::Status RunInterrupted(const DrillPlan& plan, Trace& trace, RecoveryReport& report) {
  trace.Line(absl::StrCat("[1/3] interrupted run in ", plan.interrupted, ": rank ",
                          plan.kill_rank, " will SIGKILL itself at ", plan.kill_point,
                          " of generation ", plan.kill_generation));
  absl::StatusOr<ProcessExit> killed = plan.program().Run(
      {"--out=" + plan.interrupted, absl::StrCat("--kill_rank=", plan.kill_rank),
       "--kill_point=" + plan.kill_point,
       absl::StrCat("--kill_generation=", plan.kill_generation)},
      plan.Log("interrupted"));
  if (!killed.ok()) return killed.status();
  const std::string fault_line = FaultInjectionLine(plan.Log("interrupted"));
  if (killed->ok() || fault_line.empty()) return KillNotReached(plan, *killed);
  report.set_killed_how(KilledHow(plan.Log("interrupted"), *killed));
  trace.Line("  " + fault_line);
  trace.Line("  launcher: " + report.killed_how());
  trace.Line("  on disk after the kill:");
  const std::string root = plan.interrupted + plan.program().artifacts_of + "/checkpoints";
  for (const std::string& line : DescribeDisk(root)) {
    report.add_on_disk_after_kill(line);
    trace.Line("    " + line);
  }
  absl::StatusOr<RecoveryDecision> advertised = FindRestorable(root);  // reads only
  if (!advertised.ok()) return advertised.status();
  report.set_advertised_generation(static_cast<int32_t>(advertised->generation));
  report.set_advertised_update(static_cast<int32_t>(advertised->manifest.update()));
  return absl::OkStatus();
}

// 2. The restart in the same folder: the generation it chose and why.
// Returns the update it resumed at.
absl::StatusOr<int> RunRestart(const DrillPlan& plan, Trace& trace,
                               RecoveryReport& report) {
  trace.Line(absl::StrCat("[2/3] restart in ", plan.interrupted));
  if (absl::Status s = RequireSuccess(
          plan.program().Run({"--out=" + plan.interrupted}, plan.Log("restart")), "restart",
          plan.Log("restart"));
      !s.ok()) {
    return s;
  }
  ResumeRecord resume;
  if (absl::Status s =
          ReadArtifact(plan.program().Artifact(plan.interrupted, "resume.json"), &resume);
      !s.ok()) {
    return s;
  }
  report.set_resumed_from(resume.generation());
  report.set_resumed_update(resume.update());
  report.set_lost_updates(report.advertised_update() - resume.update());
  report.set_updates_redone(plan.kill_generation * plan.setup.every_updates -
                            resume.update());
  for (const std::string& s : resume.skipped()) report.add_skipped(s);
  for (const std::string& s : resume.cleaned_up()) report.add_cleaned_up(s);
  trace.Line(absl::StrCat("  chose ", GenerationFolderName(resume.generation()),
                          " (update ", resume.update(), ", epoch ", resume.epoch(),
                          " update ", resume.epoch_cursor(),
                          "): the newest generation with a MANIFEST whose shards verify"));
  for (const std::string& s : resume.verified_shards()) trace.Line("    verified " + s);
  for (const std::string& s : resume.skipped()) trace.Line("    passed over " + s);
  for (const std::string& s : resume.cleaned_up()) trace.Line("    removed " + s);
  return resume.update();
}

// The resumed run's record of update `compared` against the uninterrupted
// run's, and both runs' final parameters.
absl::Status CompareRuns(const DrillPlan& plan, int compared, RecoveryReport& report) {
  const std::string record = absl::StrCat("update-", compared, ".json");
  absl::StatusOr<UpdateComparison> update =
      CompareUpdateRecords(plan.program().Artifact(plan.interrupted, record),
                           plan.program().Artifact(plan.uninterrupted, record));
  if (!update.ok()) return update.status();
  report.set_max_abs_gradient_diff(update->max_abs_gradient_diff);
  report.set_max_abs_parameter_diff(update->max_abs_parameter_diff);
  report.set_bitwise_equal(update->bitwise_equal);
  absl::StatusOr<std::string> resumed = FinalParameterHash(plan.program(), plan.interrupted);
  if (!resumed.ok()) return resumed.status();
  absl::StatusOr<std::string> reference =
      FinalParameterHash(plan.program(), plan.uninterrupted);
  if (!reference.ok()) return reference.status();
  report.set_final_parameters_equal(*resumed == *reference);
  return absl::OkStatus();
}

// 3. The uninterrupted run, recording the update the restart resumed at,
// and the comparison.
absl::Status RunUninterrupted(const DrillPlan& plan, int compared, Trace& trace,
                              RecoveryReport& report) {
  report.set_compared_update(compared);
  trace.Line(absl::StrCat("[3/3] uninterrupted run in ", plan.uninterrupted,
                          ", recording update ", compared));
  if (absl::Status s = RequireSuccess(
          plan.program().Run(
              {"--out=" + plan.uninterrupted, absl::StrCat("--record_update=", compared)},
              plan.Log("uninterrupted")),
          "uninterrupted run", plan.Log("uninterrupted"));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CompareRuns(plan, compared, report); !s.ok()) return s;
  trace.Line(absl::StrCat("  first resumed update ", compared, ": max abs diff gradients ",
                          report.max_abs_gradient_diff(), ", parameters ",
                          report.max_abs_parameter_diff(), ", bitwise equal: ",
                          report.bitwise_equal() ? "yes" : "no"));
  trace.Line(absl::StrCat("  final parameters equal to the uninterrupted run: ",
                          report.final_parameters_equal() ? "yes" : "no"));
  return absl::OkStatus();
}

// The failures and the verdict.
void Judge(Trace& trace, RecoveryReport& report) {
  if (report.resumed_from() == 0) report.add_failures("the restart started from scratch");
  if (report.lost_updates() != 0) {
    report.add_failures(absl::StrCat(report.lost_updates(), " saved updates were lost"));
  }
  if (!report.bitwise_equal()) report.add_failures("the first resumed update differs");
  if (!report.final_parameters_equal()) report.add_failures("the final parameters differ");
  report.set_pass(report.failures_size() == 0);
  trace.Line(absl::StrCat("verdict: ", report.pass() ? "RECOVERED" : "NOT RECOVERED",
                          " (lost_updates ", report.lost_updates(), ", resumed_from gen-",
                          report.resumed_from(), ", updates redone ",
                          report.updates_redone(), ")"));
}

// The three runs and the verdict; the report is complete when this returns OK.
absl::Status RunFixedDrill(const DrillPlan& plan, Trace& trace, RecoveryReport& report) {
  fs::remove_all(plan.interrupted);
  fs::remove_all(plan.uninterrupted);
  fs::create_directories(plan.setup.out);
  report.set_config(plan.program().config_path);
  report.set_world_size(plan.setup.world_size);
  report.set_killed_rank(plan.kill_rank);
  report.set_kill_point(plan.kill_point);
  report.set_kill_generation(plan.kill_generation);
  trace.Line(absl::StrCat("fault drill: ", plan.program().config_path, ", ",
                          plan.setup.world_size, " worker(s), a generation every ",
                          plan.setup.every_updates, " updates"));
  if (absl::Status s = RunInterrupted(plan, trace, report); !s.ok()) return s;
  absl::StatusOr<int> resumed_update = RunRestart(plan, trace, report);
  if (!resumed_update.ok()) return resumed_update.status();
  if (absl::Status s = RunUninterrupted(plan, *resumed_update, trace, report); !s.ok()) {
    return s;
  }
  Judge(trace, report);
  return absl::OkStatus();
}

// --kill_at=random's options; InvalidArgument for a bad --kill_at.
absl::StatusOr<RandomDrillOptions> RandomOptions(DrillSetup setup) {
  RandomDrillOptions options;
  options.setup = std::move(setup);
  options.trials = absl::GetFlag(FLAGS_trials);
  options.sigterm_trials = absl::GetFlag(FLAGS_sigterm_trials);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (options.seed == 0) {
    options.seed = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
  }
  options.max_delay_us = absl::GetFlag(FLAGS_max_kill_delay_us);
  if (options.max_delay_us < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_kill_delay_us=", options.max_delay_us, ": must be >= 0"));
  }
  return options;
}

// The drill --kill_at names, run; the report is complete when this returns OK.
absl::Status RunDrill(const std::string& train, const std::vector<std::string>& sets,
                      Trace& trace, RecoveryReport& report) {
  const std::string kill_at = absl::GetFlag(FLAGS_kill_at);
  if (kill_at != "fixed" && kill_at != "random") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kill_at=", kill_at, ": must be fixed or random"));
  }
  absl::StatusOr<DrillSetup> setup =
      MakeDrillSetup(train, absl::GetFlag(FLAGS_config), sets, absl::GetFlag(FLAGS_out));
  if (!setup.ok()) return setup.status();
  if (kill_at == "random") {
    absl::StatusOr<RandomDrillOptions> options = RandomOptions(*std::move(setup));
    if (!options.ok()) return options.status();
    return RunRandomDrill(*options, trace, report);
  }
  absl::StatusOr<DrillPlan> plan = MakeDrillPlan(*std::move(setup));
  if (!plan.ok()) return plan.status();
  return RunFixedDrill(*plan, trace, report);
}

absl::Status WriteArtifacts(const std::string& out, const Trace& trace,
                            const RecoveryReport& report) {
  if (absl::Status s = WriteFileAtomically(out + "/failure_trace.log", trace.text()); !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteJsonFile(out + "/recovery.json", report); !s.ok()) return s;
  std::cout << "wrote " << out << "/failure_trace.log and " << out << "/recovery.json"
            << std::endl;
  return absl::OkStatus();
}

int Main(const char* argv0, const std::vector<std::string>& sets) {
  // The train binary is a sibling in this binary's runfiles (its `data`).
  absl::StatusOr<RunfilesLocator> runfiles = RunfilesLocator::Create(argv0);
  if (!runfiles.ok()) return ReportFailure(runfiles.status());
  const std::string train = runfiles->Locate("trainer/train");
  ChangeToCallersDirectory();
  Trace trace;
  RecoveryReport report;
  if (absl::Status s = RunDrill(train, sets, trace, report); !s.ok()) {
    return ReportFailure(s);
  }
  if (absl::Status s = WriteArtifacts(absl::GetFlag(FLAGS_out), trace, report); !s.ok()) {
    return ReportFailure(s);
  }
  return report.pass() ? 0 : kExitCheckFailed;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Kill a rank mid-save (or, with --kill_at=random, inside random phases), restart, "
      "compare: --config=CONFIG --out=DIR [--set FIELD_PATH=VALUE ...] (overrides, "
      "passed to every run)");
  // --set is repeatable and its values may hold commas: taken out before
  // absl parses the rest (cli/command_line.h).
  absl::StatusOr<std::vector<std::string>> sets =
      receipt_parity::ParseCommandLineTaking("set", argc, argv);
  if (!sets.ok()) return receipt_parity::ReportFailure(sets.status());
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main(argv[0], *sets);
}
