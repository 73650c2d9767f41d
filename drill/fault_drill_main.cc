// bazel run //trainer:fault_drill -- --config=CONFIG --out=DIR
//     [--kill_point=mid_shard] [--kill_rank=1] [--kill_generation=2]
//
// Three real runs of //trainer:train (found in this binary's runfiles),
// each its own processes:
//   1. DIR/interrupted: a rank SIGKILLs itself at --kill_point of
//      generation --kill_generation's save; the launcher reports the death;
//   2. the restart in the same folder: it must resume from the newest
//      advertised generation, ignoring and cleaning up the partial one;
//   3. DIR/uninterrupted: the same config without a failure, recording the
//      update the restart resumed at.
// Writes DIR/failure_trace.log (what was killed where, what was on disk,
// which generation was chosen and why) and DIR/recovery.json
// (RecoveryReport in trainer/artifacts.proto).
//
// Exit codes: 0 recovery verified (nothing lost, the first resumed update
// and the final parameters bitwise equal to the uninterrupted run); 3 it
// was not; 2 bad input; 1 a run failed unexpectedly.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/recovery.h"
#include "cli/command_line.h"
#include "cli/runfiles_locator.h"
#include "logging/glog.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "parity/tensor_comparison.h"
#include "runtime/subprocess.h"
#include "trainer/artifacts.pb.h"
#include "trainer/config_loader.h"
#include "trainer/first_step_record.h"

ABSL_FLAG(std::string, config, "", "Training config with checkpoint.every_updates > 0.");
ABSL_FLAG(std::string, out, "", "Output folder.");
ABSL_FLAG(std::string, kill_point, "mid_shard",
          "before_shard, mid_shard, after_shard_before_rename, before_manifest, mid_manifest.");
ABSL_FLAG(int32_t, kill_rank, 1, "The rank that dies (rank 0 for a one-worker config).");
ABSL_FLAG(int32_t, kill_generation, 2, "The generation whose save is interrupted.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// Lines printed as they come and kept for failure_trace.log.
class Trace {
 public:
  void Line(const std::string& text) {
    std::cout << text << std::endl;
    absl::StrAppend(&text_, text, "\n");
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// What the drill runs, from its flags and the config; checked.
struct DrillPlan {
  std::string train;  // the train program
  std::string config_path;
  std::string out;
  int world_size = 1;
  int every_updates = 0;
  int kill_rank = 1;
  std::string kill_point;
  int kill_generation = 2;
  // <out>/interrupted and <out>/uninterrupted, the two run folders.
  std::string interrupted;
  std::string uninterrupted;
  // Where a run folder's artifacts and checkpoints are: "/reference" for
  // one worker.
  std::string artifacts_of;

  std::string ConfigFlag() const { return "--config=" + config_path; }
  std::string Log(const std::string& run) const { return out + "/" + run + "_run.log"; }
  std::string Artifact(const std::string& run_dir, const std::string& name) const {
    return run_dir + artifacts_of + "/" + name;
  }
};

// Errors: InvalidArgument (exit 2) for missing or inconsistent flags and a
// config without checkpoints; the config's own load errors; NotFound when
// `train` is missing.
absl::StatusOr<DrillPlan> MakeDrillPlan(const std::string& train) {
  DrillPlan plan;
  plan.train = train;
  plan.config_path = absl::GetFlag(FLAGS_config);
  plan.out = absl::GetFlag(FLAGS_out);
  if (plan.config_path.empty() || plan.out.empty()) {
    return absl::InvalidArgumentError("--config and --out are required");
  }
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(plan.config_path);
  if (!loaded.ok()) return loaded.status();
  const TrainingConfig& config = loaded->config;
  if (config.checkpoint().every_updates() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        loaded->locator->Where("checkpoint.every_updates"),
        ": checkpoint.every_updates must be > 0 for a fault drill"));
  }
  plan.world_size = config.world_size();
  plan.every_updates = config.checkpoint().every_updates();
  plan.kill_rank = absl::GetFlag(FLAGS_kill_rank);
  plan.kill_generation = absl::GetFlag(FLAGS_kill_generation);
  plan.kill_point = absl::GetFlag(FLAGS_kill_point);
  if (absl::StatusOr<FaultPlan> fault =
          MakeFaultPlan(plan.kill_rank, plan.kill_point, plan.kill_generation);
      !fault.ok()) {
    return absl::InvalidArgumentError(fault.status().message());
  }
  if (plan.kill_rank >= plan.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kill_rank=", plan.kill_rank, ": the config has ", plan.world_size, " rank(s)"));
  }
  if (!fs::exists(train)) {
    return absl::NotFoundError(absl::StrCat("the train binary is not at ", train));
  }
  plan.interrupted = plan.out + "/interrupted";
  plan.uninterrupted = plan.out + "/uninterrupted";
  plan.artifacts_of = plan.world_size == 1 ? "/reference" : "";
  return plan;
}

// Runs the train binary with `args`, its output in `log` (started afresh).
absl::StatusOr<ProcessExit> RunTrain(const DrillPlan& plan,
                                     const std::vector<std::string>& args,
                                     const std::string& log) {
  std::error_code ignored;
  fs::remove(log, ignored);
  std::vector<std::string> argv = {plan.train, plan.ConfigFlag()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess({std::move(argv), log});
}

// Internal "the <what> <how it ended>; see <log>" unless the run exited 0.
absl::Status RequireSuccess(const absl::StatusOr<ProcessExit>& exit,
                            const std::string& what, const std::string& log) {
  if (!exit.ok()) return exit.status();
  if (exit->ok()) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("the ", what, " ", exit->Describe(), "; see ", log));
}

std::string LastLineWith(const std::string& log, const std::string& needle) {
  std::ifstream in(log);
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) found = line;
  }
  return found;
}

// The message of a glog line, after its "I1201 12:00:00.000 123 file.cc:1] ".
std::string LogMessage(const std::string& line) {
  const size_t at = line.find("] ");
  return at == std::string::npos ? line : line.substr(at + 2);
}

// "gen-000002 [no MANIFEST]: shard-rank-00000.pt (9190 bytes), ..." per folder.
std::vector<std::string> DescribeDisk(const std::string& root) {
  std::vector<std::string> lines;
  std::error_code ec;
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(root, ec)) folders.push_back(e.path());
  std::sort(folders.begin(), folders.end());
  for (const fs::path& folder : folders) {
    std::vector<std::string> files;
    for (const auto& f : fs::directory_iterator(folder, ec)) {
      files.push_back(absl::StrCat(f.path().filename().string(), " (",
                                   f.file_size(ec), " bytes)"));
    }
    std::sort(files.begin(), files.end());
    const bool advertised = fs::exists(folder / "MANIFEST");
    lines.push_back(absl::StrCat(folder.filename().string(),
                                 advertised ? " [advertised]: " : " [no MANIFEST]: ",
                                 absl::StrJoin(files, ", ")));
  }
  return lines;
}

// The killed run ended without a kill: it never reached the save, or it
// failed first (exit 2: bad input, as the train binary reports it).
absl::Status KillNotReached(const DrillPlan& plan, const ProcessExit& killed) {
  if (killed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run finished without reaching generation ", plan.kill_generation,
        "'s save: lower --kill_generation or raise the run's updates"));
  }
  const bool bad_input = killed.exit_code() == kExitBadInput;
  const std::string message = absl::StrCat(
      "the interrupted run ", bad_input ? "refused its input: it " : "", killed.Describe(),
      " before the fault injection; last lines of ", plan.Log("interrupted"), ":\n",
      LastLines(plan.Log("interrupted"), 15));
  return bad_input ? absl::InvalidArgumentError(message) : absl::InternalError(message);
}

// 1. The interrupted run: how the rank died, what it left on disk, what a
// reader of the folder finds advertised before anything restarts.
absl::Status RunInterrupted(const DrillPlan& plan, Trace& trace, RecoveryReport& report) {
  trace.Line(absl::StrCat("[1/3] interrupted run in ", plan.interrupted, ": rank ",
                          plan.kill_rank, " will SIGKILL itself at ", plan.kill_point,
                          " of generation ", plan.kill_generation));
  absl::StatusOr<ProcessExit> killed = RunTrain(
      plan,
      {"--out=" + plan.interrupted, absl::StrCat("--kill_rank=", plan.kill_rank),
       "--kill_point=" + plan.kill_point,
       absl::StrCat("--kill_generation=", plan.kill_generation)},
      plan.Log("interrupted"));
  if (!killed.ok()) return killed.status();
  const std::string fault_line = LastLineWith(plan.Log("interrupted"), "fault injection:");
  if (killed->ok() || fault_line.empty()) return KillNotReached(plan, *killed);
  std::string how = LastLineWith(plan.Log("interrupted"), "was killed by signal");
  if (how.empty()) how = "the train process " + killed->Describe();
  if (size_t at = how.find("rank "); at != std::string::npos) how = how.substr(at);
  report.set_killed_how(how);
  trace.Line("  " + LogMessage(fault_line));
  trace.Line("  launcher: " + report.killed_how());
  trace.Line("  on disk after the kill:");
  const std::string root = plan.interrupted + plan.artifacts_of + "/checkpoints";
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
  if (absl::Status s = RequireSuccess(RunTrain(plan, {"--out=" + plan.interrupted},
                                               plan.Log("restart")),
                                      "restart", plan.Log("restart"));
      !s.ok()) {
    return s;
  }
  ResumeRecord resume;
  if (absl::Status s = ReadJsonFile(plan.Artifact(plan.interrupted, "resume.json"), &resume);
      !s.ok()) {
    return s;
  }
  report.set_resumed_from(resume.generation());
  report.set_resumed_update(resume.update());
  report.set_lost_updates(report.advertised_update() - resume.update());
  report.set_updates_redone(plan.kill_generation * plan.every_updates - resume.update());
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

absl::StatusOr<TensorListComparison> Compare(const FirstStep& a, const FirstStep& b,
                                             bool gradients) {
  const std::vector<std::string> names(a.parameter_order().begin(),
                                       a.parameter_order().end());
  absl::StatusOr<NamedTensors> x =
      LoadNamedTensors(gradients ? a.gradients() : a.parameters_after(), names);
  if (!x.ok()) return x.status();
  absl::StatusOr<NamedTensors> y =
      LoadNamedTensors(gradients ? b.gradients() : b.parameters_after(), names);
  if (!y.ok()) return y.status();
  return CompareTensors(*x, *y, 0, 0);
}

// The resumed run's record of update `compared` against the uninterrupted
// run's, and both runs' final parameters.
absl::Status CompareRuns(const DrillPlan& plan, int compared, RecoveryReport& report) {
  const std::string record = absl::StrCat("update-", compared, ".json");
  FirstStep resumed_update, reference_update;
  if (absl::Status s = ReadJsonFile(plan.Artifact(plan.interrupted, record), &resumed_update);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadJsonFile(plan.Artifact(plan.uninterrupted, record), &reference_update);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<TensorListComparison> grads = Compare(resumed_update, reference_update, true);
  absl::StatusOr<TensorListComparison> params = Compare(resumed_update, reference_update, false);
  if (!grads.ok()) return grads.status();
  if (!params.ok()) return params.status();
  report.set_max_abs_gradient_diff(grads->max_abs_diff);
  report.set_max_abs_parameter_diff(params->max_abs_diff);
  report.set_bitwise_equal(grads->bitwise_equal && params->bitwise_equal);
  RunSummary a, b;
  if (absl::Status s = ReadJsonFile(plan.Artifact(plan.interrupted, "run_summary.json"), &a);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadJsonFile(plan.Artifact(plan.uninterrupted, "run_summary.json"), &b);
      !s.ok()) {
    return s;
  }
  report.set_final_parameters_equal(a.final_parameter_hash() == b.final_parameter_hash());
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
          RunTrain(plan,
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
absl::Status RunDrill(const DrillPlan& plan, Trace& trace, RecoveryReport& report) {
  fs::remove_all(plan.interrupted);
  fs::remove_all(plan.uninterrupted);
  fs::create_directories(plan.out);
  report.set_config(plan.config_path);
  report.set_world_size(plan.world_size);
  report.set_killed_rank(plan.kill_rank);
  report.set_kill_point(plan.kill_point);
  report.set_kill_generation(plan.kill_generation);
  trace.Line(absl::StrCat("fault drill: ", plan.config_path, ", ", plan.world_size,
                          " worker(s), a generation every ", plan.every_updates,
                          " updates"));
  if (absl::Status s = RunInterrupted(plan, trace, report); !s.ok()) return s;
  absl::StatusOr<int> resumed_update = RunRestart(plan, trace, report);
  if (!resumed_update.ok()) return resumed_update.status();
  if (absl::Status s = RunUninterrupted(plan, *resumed_update, trace, report); !s.ok()) {
    return s;
  }
  Judge(trace, report);
  return absl::OkStatus();
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

int Main(const char* argv0) {
  // The train binary is a sibling in this binary's runfiles (its `data`).
  absl::StatusOr<RunfilesLocator> runfiles = RunfilesLocator::Create(argv0);
  if (!runfiles.ok()) return ReportFailure(runfiles.status());
  const std::string train = runfiles->Locate("trainer/train");
  ChangeToCallersDirectory();
  absl::StatusOr<DrillPlan> plan = MakeDrillPlan(train);
  if (!plan.ok()) return ReportFailure(plan.status());
  Trace trace;
  RecoveryReport report;
  if (absl::Status s = RunDrill(*plan, trace, report); !s.ok()) return ReportFailure(s);
  if (absl::Status s = WriteArtifacts(plan->out, trace, report); !s.ok()) {
    return ReportFailure(s);
  }
  return report.pass() ? 0 : kExitCheckFailed;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Kill a rank mid-save, restart, compare: --config=CONFIG --out=DIR");
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main(argv[0]);
}
