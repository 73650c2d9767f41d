// bazel run //trainer:fault_drill -- --config=CONFIG --out=DIR
//     [--kill_point=mid_shard] [--kill_rank=1] [--kill_generation=2]
//
// Three real runs of //trainer:train (sibling binary), each its own
// processes:
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
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/recovery.h"
#include "glog/logging.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "parity/tensor_comparison.h"
#include "trainer/artifacts.pb.h"
#include "trainer/command_line.h"
#include "trainer/config_loader.h"
#include "trainer/first_step_record.h"
#include "trainer/subprocess.h"

ABSL_FLAG(std::string, config, "", "Training config with checkpoint.every_updates > 0.");
ABSL_FLAG(std::string, out, "", "Output folder.");
ABSL_FLAG(std::string, kill_point, "mid_shard",
          "before_shard, mid_shard, after_shard_before_rename, before_manifest, mid_manifest.");
ABSL_FLAG(int32_t, kill_rank, 1, "The rank that dies (rank 0 for a one-worker config).");
ABSL_FLAG(int32_t, kill_generation, 2, "The generation whose save is interrupted.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

int Fail(const absl::Status& status) { return ReportFailure(status); }

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

// Runs the train binary with `args`, its output in `log` (started afresh).
absl::StatusOr<ProcessExit> RunTrain(const std::string& train,
                                     const std::vector<std::string>& args,
                                     const std::string& log) {
  std::error_code ignored;
  fs::remove(log, ignored);
  std::vector<std::string> argv = {train};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess({std::move(argv), log});
}

std::string LastLineWith(const std::string& log, const std::string& needle) {
  std::ifstream in(log);
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) found = line;
  }
  return found;
}

// "gen-000002: MANIFEST, shard-rank-00000.pt (9190 bytes), ..." per folder.
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

// The interrupted run must have died of the injected fault. A run that
// refused its input (exit 2: a data file, a plugin library) is bad input of
// the drill too, reported with the run's own message.
absl::Status CheckKilled(const ProcessExit& killed, const std::string& log,
                         int kill_generation) {
  if (killed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run finished without reaching generation ", kill_generation,
        "'s save: lower --kill_generation or raise the run's updates"));
  }
  if (killed.exit_code() == kExitBadInput) {
    const std::string line = LastLineWith(log, "error: ");
    const size_t at = line.find("error: ");
    return absl::InvalidArgumentError(absl::StrCat(
        "the interrupted run refused its input: ",
        at == std::string::npos ? killed.Describe() : line.substr(at + 7), " (see ",
        log, ")"));
  }
  if (LastLineWith(log, "fault injection:").empty()) {
    return absl::InternalError(absl::StrCat(
        "the interrupted run ", killed.Describe(),
        " before the injected fault; see ", log));
  }
  return absl::OkStatus();
}

int Main(const std::string& self) {
  ChangeToCallersDirectory();
  const std::string config_path = absl::GetFlag(FLAGS_config);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (config_path.empty() || out.empty()) {
    return Fail(absl::InvalidArgumentError("--config and --out are required"));
  }
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(config_path);
  if (!loaded.ok()) return Fail(loaded.status());
  const TrainingConfig& config = loaded->config;
  if (config.checkpoint().every_updates() <= 0) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        loaded->locator->Where("checkpoint.every_updates"),
        ": checkpoint.every_updates must be > 0 for a fault drill")));
  }
  const int kill_rank = absl::GetFlag(FLAGS_kill_rank);
  const int kill_generation = absl::GetFlag(FLAGS_kill_generation);
  const std::string kill_point = absl::GetFlag(FLAGS_kill_point);
  if (absl::StatusOr<FaultPlan> plan = MakeFaultPlan(kill_rank, kill_point, kill_generation);
      !plan.ok()) {
    return Fail(absl::InvalidArgumentError(plan.status().message()));
  }
  if (kill_rank >= config.world_size()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--kill_rank=", kill_rank, ": the config has ", config.world_size(), " rank(s)")));
  }
  const std::string train = (fs::path(self).parent_path() / "train").string();
  if (!fs::exists(train)) {
    return Fail(absl::NotFoundError(absl::StrCat("the train binary is not at ", train)));
  }
  const std::string interrupted = out + "/interrupted";
  const std::string uninterrupted = out + "/uninterrupted";
  fs::remove_all(interrupted);
  fs::remove_all(uninterrupted);
  fs::create_directories(out);
  const std::string artifacts_of = config.world_size() == 1 ? "/reference" : "";
  const std::string config_flag = "--config=" + config_path;

  Trace trace;
  RecoveryReport report;
  report.set_config(config_path);
  report.set_world_size(config.world_size());
  report.set_killed_rank(kill_rank);
  report.set_kill_point(kill_point);
  report.set_kill_generation(kill_generation);
  trace.Line(absl::StrCat("fault drill: ", config_path, ", ", config.world_size(),
                          " worker(s), a generation every ",
                          config.checkpoint().every_updates(), " updates"));

  // 1. The interrupted run.
  trace.Line(absl::StrCat("[1/3] interrupted run in ", interrupted, ": rank ", kill_rank,
                          " will SIGKILL itself at ", kill_point, " of generation ",
                          kill_generation));
  absl::StatusOr<ProcessExit> killed = RunTrain(
      train, {config_flag, "--out=" + interrupted, absl::StrCat("--kill_rank=", kill_rank),
              "--kill_point=" + kill_point,
              absl::StrCat("--kill_generation=", kill_generation)},
      out + "/interrupted_run.log");
  if (!killed.ok()) return Fail(killed.status());
  if (absl::Status s = CheckKilled(*killed, out + "/interrupted_run.log", kill_generation);
      !s.ok()) {
    return Fail(s);
  }
  const std::string fault_line = LastLineWith(out + "/interrupted_run.log", "fault injection:");
  std::string how = LastLineWith(out + "/interrupted_run.log", "was killed by signal");
  if (how.empty()) how = "the train process " + killed->Describe();
  if (size_t at = how.find("rank "); at != std::string::npos) how = how.substr(at);
  report.set_killed_how(how);
  trace.Line("  " + fault_line.substr(fault_line.find("] ") + 2));
  trace.Line("  launcher: " + report.killed_how());
  trace.Line("  on disk after the kill:");
  const std::string root = interrupted + "/checkpoints";
  for (const std::string& line : DescribeDisk(root)) {
    report.add_on_disk_after_kill(line);
    trace.Line("    " + line);
  }
  absl::StatusOr<RecoveryDecision> advertised = FindRestorable(root);  // reads only
  if (!advertised.ok()) return Fail(advertised.status());
  report.set_advertised_generation(static_cast<int32_t>(advertised->generation));
  report.set_advertised_update(static_cast<int32_t>(advertised->manifest.update()));

  // 2. The restart.
  trace.Line(absl::StrCat("[2/3] restart in ", interrupted));
  absl::StatusOr<ProcessExit> restarted =
      RunTrain(train, {config_flag, "--out=" + interrupted}, out + "/restart_run.log");
  if (!restarted.ok()) return Fail(restarted.status());
  if (!restarted->ok()) {
    return Fail(absl::InternalError(absl::StrCat(
        "the restart ", restarted->Describe(), "; see ", out, "/restart_run.log")));
  }
  ResumeRecord resume;
  if (absl::Status s = ReadJsonFile(interrupted + artifacts_of + "/resume.json", &resume);
      !s.ok()) {
    return Fail(s);
  }
  report.set_resumed_from(resume.generation());
  report.set_resumed_update(resume.update());
  report.set_lost_updates(report.advertised_update() - resume.update());
  report.set_updates_redone(kill_generation * config.checkpoint().every_updates() -
                            resume.update());
  for (const std::string& s : resume.skipped()) report.add_skipped(s);
  for (const std::string& s : resume.cleaned_up()) report.add_cleaned_up(s);
  trace.Line(absl::StrCat("  chose ", GenerationFolderName(resume.generation()), " (update ", resume.update(),
                          ", epoch ", resume.epoch(), " update ", resume.epoch_cursor(),
                          "): the newest generation with a MANIFEST whose shards verify"));
  for (const std::string& s : resume.verified_shards()) trace.Line("    verified " + s);
  for (const std::string& s : resume.skipped()) trace.Line("    passed over " + s);
  for (const std::string& s : resume.cleaned_up()) trace.Line("    removed " + s);

  // 3. The uninterrupted run, recording the same update.
  const int compared = resume.update();
  report.set_compared_update(compared);
  trace.Line(absl::StrCat("[3/3] uninterrupted run in ", uninterrupted,
                          ", recording update ", compared));
  absl::StatusOr<ProcessExit> clean = RunTrain(
      train, {config_flag, "--out=" + uninterrupted, absl::StrCat("--record_update=", compared)},
      out + "/uninterrupted_run.log");
  if (!clean.ok()) return Fail(clean.status());
  if (!clean->ok()) {
    return Fail(absl::InternalError(absl::StrCat(
        "the uninterrupted run ", clean->Describe(), "; see ", out,
        "/uninterrupted_run.log")));
  }
  const std::string record = absl::StrCat("/update-", compared, ".json");
  FirstStep resumed_update, reference_update;
  if (absl::Status s = ReadJsonFile(interrupted + artifacts_of + record, &resumed_update);
      !s.ok()) {
    return Fail(s);
  }
  if (absl::Status s = ReadJsonFile(uninterrupted + artifacts_of + record, &reference_update);
      !s.ok()) {
    return Fail(s);
  }
  absl::StatusOr<TensorListComparison> grads = Compare(resumed_update, reference_update, true);
  absl::StatusOr<TensorListComparison> params = Compare(resumed_update, reference_update, false);
  if (!grads.ok()) return Fail(grads.status());
  if (!params.ok()) return Fail(params.status());
  report.set_max_abs_gradient_diff(grads->max_abs_diff);
  report.set_max_abs_parameter_diff(params->max_abs_diff);
  report.set_bitwise_equal(grads->bitwise_equal && params->bitwise_equal);
  RunSummary a, b;
  if (absl::Status s = ReadJsonFile(interrupted + artifacts_of + "/run_summary.json", &a); !s.ok()) {
    return Fail(s);
  }
  if (absl::Status s = ReadJsonFile(uninterrupted + artifacts_of + "/run_summary.json", &b);
      !s.ok()) {
    return Fail(s);
  }
  report.set_final_parameters_equal(a.final_parameter_hash() == b.final_parameter_hash());
  trace.Line(absl::StrCat("  first resumed update ", compared, ": max abs diff gradients ",
                          report.max_abs_gradient_diff(), ", parameters ",
                          report.max_abs_parameter_diff(), ", bitwise equal: ",
                          report.bitwise_equal() ? "yes" : "no"));
  trace.Line(absl::StrCat("  final parameters equal to the uninterrupted run: ",
                          report.final_parameters_equal() ? "yes" : "no"));

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
  if (absl::Status s = WriteFileAtomically(out + "/failure_trace.log", trace.text()); !s.ok()) {
    return Fail(s);
  }
  if (absl::Status s = WriteJsonFile(out + "/recovery.json", report); !s.ok()) return Fail(s);
  std::cout << "wrote " << out << "/failure_trace.log and " << out << "/recovery.json"
            << std::endl;
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
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  self[n > 0 ? n : 0] = '\0';
  return receipt_parity::Main(self);
}
