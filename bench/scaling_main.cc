// The scaling benchmark of issue 7, side by side in one run:
//
//   bazel run --config=bench //bench:scaling -- --out=out/scaling
//
// For two models (bench/scaling_plan.h: the default model of
// configs/one_worker.pbtxt, and an MLP of ~250 000 parameters on 32x32
// inputs, batch 32 per rank) it writes the trainer's training receipts as a
// pool the baselines train on (bench/receipt_pool.h), then runs, each as a
// child process found in this binary's runfiles:
//   1. bench/bare_libtorch_step: forward + backward + SGD step alone; its
//      per-update time also sizes the other runs (--seconds_per_run); then
//      two of it at once, which never communicate: the machine's ceiling
//      for two workers;
//   2. trainer/train, one worker and two workers (generated configs with
//      run.max_updates);
//   3. bench/ddp_baseline.py under the project's torch (@libtorch//:python),
//      one and two workers.
// Every child runs with one intra-op thread and OMP/OpenBLAS/MKL threads 1.
// Then it prints the table and writes DIR/scaling.json (ScalingReport,
// bench/scaling_report.proto); the generated configs, each run's log and
// result stay under DIR/configs, DIR/logs and DIR/runs.
//
// This is a benchmark: a missed target is reported, not an error.
// Exit codes: 0 done; 1 a run failed (the message names it and its log);
// 2 bad input (flags, base config).
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/scaling_plan.h"
#include "bench/scaling_report.pb.h"
#include "bench/scaling_report_builder.h"
#include "bench/scaling_runs.h"
#include "bench/scaling_table.h"
#include "cli/command_line.h"
#include "cli/runfiles_locator.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "config/config_loader.h"
#include "config/config_overrides.h"

ABSL_FLAG(std::string, out, "out/scaling",
          "Output folder, relative to the directory `bazel run` was started "
          "from.");
ABSL_FLAG(int32_t, rounds, 3,
          "Rounds of every run, interleaved (a round runs every variant once, "
          "in the same order); each ratio is the median of the rounds' "
          "ratios, with their spread; each run's figures are its round with "
          "the most examples/s. --smoke runs one.");
ABSL_FLAG(double, seconds_per_run, 4,
          "Aim of each run's timed updates, in seconds of bare-LibTorch "
          "update time (two-worker and Python runs take longer).");
ABSL_FLAG(int32_t, max_updates, 4000, "Most updates of one run.");
ABSL_FLAG(std::string, models, "compute_bound,communication_bound",
          "Which models to run (comma-separated).");
ABSL_FLAG(bool, smoke, false,
          "Tiny runs (12 updates) that only check every piece works; the "
          "figures mean nothing.");
ABSL_FLAG(std::string, base_config, "",
          "Config whose data, optimizer, seeds, plugins and model the "
          "benchmark uses; default: configs/one_worker.pbtxt.");
ABSL_FLAG(std::string, python, "",
          "Interpreter with torch for the DDP baseline; default: the Python "
          "of the project's LibTorch (@libtorch//:python), so DDP runs on the "
          "same torch 2.11.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kThreadSettings[] =
    "one intra-op thread per worker (at::set_num_threads(1), "
    "torch.set_num_threads(1)); OMP_NUM_THREADS=OPENBLAS_NUM_THREADS="
    "MKL_NUM_THREADS=1 in every process";

// REQUIRES: ChangeToCallersDirectory ran (--base_config is the user's path).
Programs FindPrograms(const RunfilesLocator& runfiles) {
  Programs p;
  p.train = runfiles.Locate("trainer/train");
  p.bare = runfiles.Locate("bench/bare_libtorch_step");
  p.shm_allreduce = runfiles.Locate("bench/shm_allreduce");
  p.ddp_script = runfiles.Locate("bench/ddp_baseline.py");
  p.base_config = absl::GetFlag(FLAGS_base_config).empty()
                      ? runfiles.Locate("configs/one_worker.pbtxt")
                      : fs::absolute(absl::GetFlag(FLAGS_base_config))
                            .lexically_normal()
                            .string();
  p.python = absl::GetFlag(FLAGS_python).empty()
                 ? runfiles.LocateExternal("libtorch/python")
                 : absl::GetFlag(FLAGS_python);
  return p;
}

absl::StatusOr<std::vector<BenchmarkModel>> ChosenModels(const TrainingConfig& base) {
  std::vector<BenchmarkModel> chosen;
  const std::vector<BenchmarkModel> all = BenchmarkModels(base);
  std::vector<std::string> known;
  for (const BenchmarkModel& m : all) known.push_back(m.name);
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty())) {
    bool found = false;
    for (const BenchmarkModel& m : all) {
      if (m.name == name) {
        chosen.push_back(m);
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--models: unknown model '", name, "'; known: ", absl::StrJoin(known, ", ")));
    }
  }
  if (chosen.empty()) return absl::InvalidArgumentError("--models: none chosen");
  return chosen;
}

// The base config (as written, for the configs made from it) and the
// models to run.
struct Plan {
  TrainingConfig base;
  std::vector<BenchmarkModel> models;
};

// Every check the trainer makes, before any receipt is generated: the base
// config file with the --set overrides, as the trainer loads it (plugin
// libraries, plugins and data settings included), then what the benchmark
// needs of it, then every config the benchmark generates from it.
absl::StatusOr<Plan> LoadPlan(const std::string& base_path,
                              const std::vector<ConfigOverride>& overrides) {
  if (absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(base_path, overrides);
      !loaded.ok()) {
    return loaded.status();
  }
  absl::StatusOr<std::string> text = ReadFileToString(base_path);
  if (!text.ok()) return text.status();
  Plan plan;
  absl::StatusOr<TrainingConfig> base = ParseBaseConfig(*text, base_path);
  if (!base.ok()) return base.status();
  if (absl::Status s = ApplyConfigOverrides(overrides, &*base); !s.ok()) return s;
  plan.base = std::move(*base);
  absl::StatusOr<std::vector<BenchmarkModel>> models = ChosenModels(plan.base);
  if (!models.ok()) return models.status();
  plan.models = std::move(*models);
  for (const BenchmarkModel& model : plan.models) {
    for (int world : {1, 2}) {
      absl::StatusOr<LoadedConfig> generated = ValidateTrainingConfig(
          TrainerConfig(plan.base, model, world, kSmokeUpdates),
          absl::StrCat(base_path, " (as the ", model.name, " run's config on ", world,
                       " worker(s))"));
      if (!generated.ok()) return generated.status();
    }
  }
  return plan;
}

absl::Status CheckFlags() {
  if (absl::GetFlag(FLAGS_out).empty()) {
    return absl::InvalidArgumentError("--out is required");
  }
  if (!(absl::GetFlag(FLAGS_seconds_per_run) > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--seconds_per_run must be > 0, got ", absl::GetFlag(FLAGS_seconds_per_run)));
  }
  if (absl::GetFlag(FLAGS_rounds) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rounds must be >= 1, got ", absl::GetFlag(FLAGS_rounds)));
  }
  const int min_updates = kWarmupUpdates + 20 * kTimingWindow;
  if (absl::GetFlag(FLAGS_max_updates) < min_updates) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_updates must be >= ", min_updates, ", got ",
                     absl::GetFlag(FLAGS_max_updates)));
  }
  return absl::OkStatus();
}

// /proc/loadavg without its newline ("" where there is none).
std::string LoadAverage() {
  absl::StatusOr<std::string> text = ReadFileToString("/proc/loadavg");
  if (!text.ok()) return "";
  return std::string(absl::StripTrailingAsciiWhitespace(*text));
}

std::string Command(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return absl::StrCat("bazel run --config=bench //bench:scaling -- ", absl::StrJoin(args, " "));
}

int Main(int argc, char** argv, const std::vector<std::string>& sets) {
  if (absl::Status s = CheckFlags(); !s.ok()) {
    std::cerr << "error: " << s.message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<RunfilesLocator> runfiles = RunfilesLocator::Create(argv[0]);
  if (!runfiles.ok()) {
    std::cerr << "error: " << runfiles.status().message() << std::endl;
    return kExitBadInput;
  }
  ChangeToCallersDirectory();
  const Programs programs = FindPrograms(*runfiles);
  absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(sets);
  if (!overrides.ok()) {
    std::cerr << "error: " << overrides.status().message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<Plan> plan = LoadPlan(programs.base_config, *overrides);
  if (!plan.ok()) {
    std::cerr << "error: " << plan.status().message() << std::endl;
    return kExitBadInput;
  }
  Settings settings;
  settings.out_dir = fs::absolute(absl::GetFlag(FLAGS_out)).lexically_normal().string();
  settings.smoke = absl::GetFlag(FLAGS_smoke);
  settings.rounds = settings.smoke ? 1 : absl::GetFlag(FLAGS_rounds);
  settings.seconds_per_run = absl::GetFlag(FLAGS_seconds_per_run);
  settings.max_updates = absl::GetFlag(FLAGS_max_updates);
  PrepareEnvironment();

  ScalingReport report;
  report.set_command(Command(argc, argv));
  report.set_cpu_cores(static_cast<int32_t>(std::thread::hardware_concurrency()));
  report.set_thread_settings(kThreadSettings);
  report.set_smoke(settings.smoke);
  report.set_rounds(settings.rounds);
  report.set_load_average_before(LoadAverage());
  std::cout << "scaling benchmark: writing into " << settings.out_dir
            << "/ (logs in " << settings.out_dir << "/logs/)" << std::endl;
  const Clock::time_point start = Clock::now();
  ScalingRunner benchmark(programs, settings, plan->base);
  for (const BenchmarkModel& model : plan->models) {
    absl::StatusOr<ModelScaling> scaling = benchmark.Run(model);
    if (!scaling.ok()) {
      std::cout << std::endl;
      std::cerr << "scaling benchmark FAILED (" << model.name
                << "): " << scaling.status().message() << std::endl;
      return kExitRunFailed;
    }
    *report.add_models() = *std::move(scaling);
  }
  const std::vector<ModelScaling> models(report.models().begin(), report.models().end());
  for (TargetCheck& check : CheckTargets(models)) *report.add_targets() = std::move(check);
  for (TargetCheck& check : CheckIssue13Targets(models)) {
    *report.add_targets() = std::move(check);
  }
  for (TargetCheck& check : CheckIssue46Targets(models)) {
    *report.add_targets() = std::move(check);
  }
  for (TargetCheck& check : CheckIssue49Targets(models)) {
    *report.add_targets() = std::move(check);
  }
  report.set_wall_seconds(std::chrono::duration<double>(Clock::now() - start).count());
  report.set_load_average_after(LoadAverage());
  const std::string json_path = (fs::path(settings.out_dir) / "scaling.json").string();
  if (absl::Status s = WriteJsonFile(json_path, report); !s.ok()) {
    std::cerr << "error: " << s.message() << std::endl;
    return kExitRunFailed;
  }
  std::cout << "\n" << FormatScalingTable(report) << "\nwrote " << json_path
            << absl::StrFormat(" (%.0f s)", report.wall_seconds()) << std::endl;
  return 0;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Times this project against PyTorch DDP and a bare LibTorch step, one "
      "and two workers, on two models: --out=DIR [--set FIELD_PATH=VALUE ...] "
      "(overrides of --base_config, as train takes them)");
  // --set as train takes it (its values may hold commas): before absl.
  absl::StatusOr<std::vector<std::string>> sets =
      receipt_parity::ParseCommandLineTaking("set", argc, argv);
  if (!sets.ok()) return receipt_parity::ReportFailure(sets.status());
  return receipt_parity::Main(argc, argv, *sets);
}
