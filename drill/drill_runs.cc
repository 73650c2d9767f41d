#include "drill/drill_runs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command_line.h"
#include "artifacts/artifact_stamp.h"
#include "io/json_file.h"
#include "parity/tensor_comparison.h"
#include "artifacts/run_summary.pb.h"
#include "config/checkpoint_plan.h"
#include "config/config_loader.h"
#include "config/config_overrides.h"
#include "artifacts/first_step_record.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

void Trace::Line(const std::string& text) {
  std::cout << text << std::endl;
  absl::StrAppend(&text_, text, "\n");
}

std::string TrainProgram::Artifact(const std::string& run_dir,
                                   const std::string& name) const {
  return run_dir + artifacts_of + "/" + name;
}

absl::StatusOr<ProcessExit> TrainProgram::Run(const std::vector<std::string>& args,
                                              const std::string& log) const {
  std::error_code ignored;
  fs::remove(log, ignored);
  // The drill compares its runs with each other: no whole-run reference.
  std::vector<std::string> argv = {train, "--config=" + config_path,
                                   "--whole_run_parity=false"};
  for (const std::string& set : config_sets) argv.push_back("--set=" + set);
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess({std::move(argv), log});
}

absl::StatusOr<DrillSetup> MakeDrillSetup(const std::string& train,
                                          const std::string& config_path,
                                          const std::vector<std::string>& sets,
                                          const std::string& out) {
  if (config_path.empty() || out.empty()) {
    return absl::InvalidArgumentError("--config and --out are required");
  }
  absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(sets);
  if (!overrides.ok()) return overrides.status();
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(config_path, *overrides);
  if (!loaded.ok()) return loaded.status();
  const TrainingConfig& config = loaded->config;
  // The drill's runs save as the plan of the config says (the run's own
  // folder is a drill run's, so its path does not matter here).
  const std::optional<CheckpointPlan> plan = PlanCheckpoints(config, out);
  if (!plan.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        loaded->locator->Where("checkpoint.every_updates"),
        ": checkpoint.every_updates must be > 0 for a fault drill"));
  }
  if (!fs::exists(train)) {
    return absl::NotFoundError(absl::StrCat("the train binary is not at ", train));
  }
  DrillSetup setup;
  setup.program.train = train;
  setup.program.config_path = config_path;
  setup.program.config_sets = sets;
  setup.program.artifacts_of = config.world_size() == 1 ? "/reference" : "";
  setup.out = out;
  setup.world_size = config.world_size();
  setup.every_updates = plan->every_updates;
  setup.async_save = plan->async;
  return setup;
}

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

std::string LogMessage(const std::string& line) {
  const size_t at = line.find("] ");
  return at == std::string::npos ? line : line.substr(at + 2);
}

std::string FaultInjectionLine(const std::string& log) {
  const std::string line = LastLineWith(log, "fault injection:");
  return line.empty() ? "" : LogMessage(line);
}

std::string KilledHow(const std::string& log, const ProcessExit& exit) {
  std::string how = LastLineWith(log, "was killed by signal");
  // Under mpirun: "mpirun noticed that process rank 1 with PID ... exited
  // on signal 9 (Killed)."
  if (how.empty()) how = LastLineWith(log, "exited on signal");
  if (how.empty()) how = "the train process " + exit.Describe();
  if (size_t at = how.find("rank "); at != std::string::npos) how = how.substr(at);
  return how;
}

absl::Status FailedBeforeInjection(const ProcessExit& exit, const std::string& log) {
  const bool bad_input = exit.exit_code() == kExitBadInput;
  const std::string message = absl::StrCat(
      "the interrupted run ", bad_input ? "refused its input: it " : "", exit.Describe(),
      " before the fault injection; last lines of ", log, ":\n", LastLines(log, 15));
  return bad_input ? absl::InvalidArgumentError(message) : absl::InternalError(message);
}

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

absl::StatusOr<UpdateComparison> CompareUpdateRecords(const std::string& resumed,
                                                      const std::string& uninterrupted) {
  FirstStep a, b;
  if (absl::Status s = ReadArtifact(resumed, &a); !s.ok()) return s;
  if (absl::Status s = ReadArtifact(uninterrupted, &b); !s.ok()) return s;
  absl::StatusOr<TensorListComparison> grads = Compare(a, b, true);
  if (!grads.ok()) return grads.status();
  absl::StatusOr<TensorListComparison> params = Compare(a, b, false);
  if (!params.ok()) return params.status();
  UpdateComparison comparison;
  comparison.max_abs_gradient_diff = grads->max_abs_diff;
  comparison.max_abs_parameter_diff = params->max_abs_diff;
  comparison.bitwise_equal = grads->bitwise_equal && params->bitwise_equal;
  return comparison;
}

absl::StatusOr<std::string> FinalParameterHash(const TrainProgram& program,
                                               const std::string& run_dir) {
  RunSummary summary;
  if (absl::Status s = ReadArtifact(program.Artifact(run_dir, "run_summary.json"), &summary);
      !s.ok()) {
    return s;
  }
  return summary.final_parameter_hash();
}

}  // namespace receipt_parity
