// The scaling benchmark of issue 7, side by side in one run:
//
//   bazel run //bench:scaling -- --out=out/scaling
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
//   3. bench/ddp_baseline.py under /usr/bin/python3, one and two workers.
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
#include "bench/receipt_pool.h"
#include "bench/scaling_plan.h"
#include "bench/scaling_report.pb.h"
#include "bench/scaling_report_builder.h"
#include "bench/scaling_table.h"
#include "data/receipt_dataset.h"
#include "google/protobuf/text_format.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "study/runfiles_locator.h"
#include "study/subprocess.h"
#include "trainer/artifacts.pb.h"

ABSL_FLAG(std::string, out, "out/scaling",
          "Output folder, relative to the directory `bazel run` was started "
          "from.");
ABSL_FLAG(int32_t, rounds, 2,
          "Rounds of every run, interleaved; each figure is the round with "
          "the most examples/s (other work on the machine only slows runs "
          "down). --smoke runs one.");
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
ABSL_FLAG(std::string, python, "/usr/bin/python3",
          "Interpreter with torch (Debian's python3-torch) for the DDP "
          "baseline.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;
constexpr char kThreadSettings[] =
    "one intra-op thread per worker (at::set_num_threads(1), "
    "torch.set_num_threads(1)); OMP_NUM_THREADS=OPENBLAS_NUM_THREADS="
    "MKL_NUM_THREADS=1 in every process";
// Smoke sizes: 2 warm-up updates + 2 windows of 5.
constexpr int kSmokeUpdates = 12;
constexpr int kTimingWindow = 5;
constexpr int kWarmupUpdates = 2;

struct Programs {
  std::string train;
  std::string bare;
  std::string ddp_script;
  std::string base_config;
  std::string python;
};

struct Settings {
  std::string out_dir;
  bool smoke = false;
  int rounds = 1;
  double seconds_per_run = 0;
  int max_updates = 0;
};

absl::StatusOr<Programs> FindPrograms(const char* argv0) {
  absl::StatusOr<RunfilesLocator> runfiles = RunfilesLocator::Create(argv0);
  if (!runfiles.ok()) return runfiles.status();
  Programs p;
  p.train = runfiles->Locate("trainer/train");
  p.bare = runfiles->Locate("bench/bare_libtorch_step");
  p.ddp_script = runfiles->Locate("bench/ddp_baseline.py");
  p.base_config = absl::GetFlag(FLAGS_base_config).empty()
                      ? runfiles->Locate("configs/one_worker.pbtxt")
                      : UserPath(absl::GetFlag(FLAGS_base_config));
  p.python = absl::GetFlag(FLAGS_python);
  return p;
}

// The children's environment: one thread everywhere, and none of the
// torchrun variables a user's shell might carry (the trainer would take
// them as "run as this rank").
void PrepareEnvironment() {
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) {
    setenv(name, "1", /*overwrite=*/1);
  }
  for (const char* name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    unsetenv(name);
  }
}

// Runs one child to success; returns its wall time. The run's folder or
// file from an earlier benchmark is removed first, so nothing stale is read.
absl::StatusOr<double> RunChild(std::vector<std::string> argv,
                                const std::string& log_path,
                                const std::string& result_path) {
  std::error_code ignored;
  fs::remove_all(result_path, ignored);
  fs::remove(log_path, ignored);
  fs::create_directories(fs::path(result_path).parent_path(), ignored);
  const Clock::time_point start = Clock::now();
  if (absl::Status s = RunProcessToSuccess({std::move(argv), log_path}); !s.ok()) {
    return s;
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A baseline's own result and the report's view of the same run.
template <typename Result>
struct Measured {
  Result result;
  SystemRun run;
};

class Benchmark {
 public:
  Benchmark(Programs programs, Settings settings, TrainingConfig base)
      : programs_(std::move(programs)),
        settings_(std::move(settings)),
        base_(std::move(base)) {}

  absl::StatusOr<ModelScaling> Run(const BenchmarkModel& model) {
    ModelScaling m;
    m.set_name(model.name);
    *m.mutable_model() = model.model;
    m.set_image_size(model.image_size);
    m.set_batch_per_rank(model.batch_per_rank);

    absl::StatusOr<PoolFiles> pool = WritePool(model);
    if (!pool.ok()) return pool.status();
    int updates = 0;
    for (int round = 0; round < settings_.rounds; ++round) {
      const std::string suffix = absl::StrCat("_r", round);
      absl::StatusOr<Measured<BareStepResult>> bare = RunBare(model, *pool, suffix);
      if (!bare.ok()) return bare.status();
      KeepBestRound(bare->run, m.mutable_bare_libtorch());
      if (round == 0) {
        m.set_description(bare->result.model());
        m.set_parameter_count(bare->result.parameter_count());
        updates = settings_.smoke
                      ? kSmokeUpdates
                      : UpdatesFor(settings_.seconds_per_run,
                                   bare->result.median_update_seconds(),
                                   kWarmupUpdates + 20 * kTimingWindow,
                                   settings_.max_updates);
      }
      absl::StatusOr<SystemRun> pair =
          RunBarePair(model, *pool, bare->result.updates(), suffix);
      if (!pair.ok()) return pair.status();
      KeepBestRound(*pair, m.mutable_bare_two_processes());
      for (int world : {1, 2}) {
        absl::StatusOr<SystemRun> ours = RunOurs(model, world, updates, suffix);
        if (!ours.ok()) return ours.status();
        KeepBestRound(*ours, world == 1 ? m.mutable_ours_one_worker()
                                        : m.mutable_ours_two_workers());
        absl::StatusOr<Measured<DdpBaselineResult>> ddp =
            RunDdp(model, *pool, world, updates, suffix);
        if (!ddp.ok()) return ddp.status();
        KeepBestRound(ddp->run, world == 1 ? m.mutable_ddp_one_worker()
                                           : m.mutable_ddp_two_workers());
        if (world == 2) KeepFastestAllreduce(ddp->result, &m);
      }
    }
    FillRatios(&m);
    return m;
  }

 private:
  std::string Path(const std::string& folder, const std::string& name) const {
    return (fs::path(settings_.out_dir) / folder / name).string();
  }

  void Announce(const std::string& what) {
    ++step_;
    std::cout << "[" << step_ << "] " << what << " ..." << std::flush;
  }

  static void Done(const SystemRun& run) {
    std::cout << absl::StrFormat(" %.1f s: %.0f examples/s, %.3f ms per update\n",
                                 run.wall_seconds(), run.examples_per_second(),
                                 run.median_update_seconds() * 1e3)
              << std::flush;
  }

  // The receipts the trainer trains on for `model`, for the baselines.
  absl::StatusOr<PoolFiles> WritePool(const BenchmarkModel& model) {
    const DataConfig data = TrainerConfig(base_, model, 1, 1).data();
    absl::StatusOr<ReceiptSplit> split = LoadReceipts(data);
    if (!split.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          programs_.base_config, ": ", split.status().message()));
    }
    PoolFiles files{Path("data", model.name + ".images.f32"),
                    Path("data", model.name + ".labels.i64")};
    std::error_code ignored;
    fs::create_directories(fs::path(files.images).parent_path(), ignored);
    if (absl::Status s = WriteReceiptPool(PoolOf(*split), files.images, files.labels);
        !s.ok()) {
      return s;
    }
    return files;
  }

  // One bare loop: `updates` timed updates, or as many as fit in
  // `max_seconds` when that is > 0. Returns its result and wall time.
  absl::StatusOr<std::pair<BareStepResult, double>> RunOneBare(
      const BenchmarkModel& model, const PoolFiles& pool, const std::string& name,
      int updates, double max_seconds) {
    const std::string result_path = Path("runs", name + ".json");
    const std::string log_path = Path("logs", name + ".log");
    std::vector<std::string> argv = {programs_.bare};
    for (std::string& arg :
         BareArguments(model, base_.optimizer(), pool, settings_.smoke ? 1 : 5,
                       updates, max_seconds, result_path)) {
      argv.push_back(std::move(arg));
    }
    absl::StatusOr<double> wall = RunChild(argv, log_path, result_path);
    if (!wall.ok()) return wall.status();
    BareStepResult result;
    if (absl::Status s = ReadJsonFile(result_path, &result); !s.ok()) return s;
    return std::make_pair(result, *wall);
  }

  absl::StatusOr<Measured<BareStepResult>> RunBare(const BenchmarkModel& model,
                                                   const PoolFiles& pool,
                                                   const std::string& suffix) {
    const std::string name = model.name + "_bare_libtorch" + suffix;
    Announce(absl::StrCat(model.name, ": bare LibTorch step, 1 worker"));
    absl::StatusOr<std::pair<BareStepResult, double>> bare = RunOneBare(
        model, pool, name, settings_.smoke ? 3 : 100000,
        settings_.smoke ? 0 : std::min(3.0, settings_.seconds_per_run / 2));
    if (!bare.ok()) return bare.status();
    SystemRun run = FromBare(bare->first);
    run.set_wall_seconds(bare->second);
    run.set_log_path(Path("logs", name + ".log"));
    run.set_result_path(Path("runs", name + ".json"));
    Done(run);
    return Measured<BareStepResult>{bare->first, run};
  }

  // Two bare loops at once, `updates` timed updates each: the machine's
  // two-worker ceiling with free synchronisation.
  absl::StatusOr<SystemRun> RunBarePair(const BenchmarkModel& model,
                                        const PoolFiles& pool, int updates,
                                        const std::string& suffix) {
    Announce(absl::StrCat(model.name,
                          ": two bare LibTorch steps at once (no communication), ",
                          updates, " updates each"));
    const std::string names[2] = {model.name + "_bare_pair_a" + suffix,
                                  model.name + "_bare_pair_b" + suffix};
    absl::StatusOr<std::pair<BareStepResult, double>> second;
    std::thread other([&] { second = RunOneBare(model, pool, names[1], updates, 0); });
    absl::StatusOr<std::pair<BareStepResult, double>> first =
        RunOneBare(model, pool, names[0], updates, 0);
    other.join();
    if (!first.ok()) return first.status();
    if (!second.ok()) return second.status();
    SystemRun run = FromBarePair(first->first, second->first);
    run.set_wall_seconds(std::max(first->second, second->second));
    run.set_log_path(Path("logs", names[0] + ".log"));
    run.set_result_path(Path("runs", names[0] + ".json"));
    Done(run);
    return run;
  }

  absl::StatusOr<SystemRun> RunOurs(const BenchmarkModel& model, int world,
                                    int updates, const std::string& suffix) {
    const std::string name = absl::StrCat(model.name, "_ours_", world, "w", suffix);
    const std::string config_path = Path("configs", name + ".pbtxt");
    const std::string run_dir = Path("runs", name);
    const std::string log_path = Path("logs", name + ".log");
    Announce(absl::StrCat(model.name, ": this project, ", world, " worker(s), ",
                          updates, " updates"));
    std::string text;
    google::protobuf::TextFormat::PrintToString(
        TrainerConfig(base_, model, world, updates), &text);
    std::error_code ignored;
    fs::create_directories(fs::path(config_path).parent_path(), ignored);
    if (absl::Status s = WriteFileAtomically(
            config_path,
            absl::StrCat("# Generated by //bench:scaling from ",
                         programs_.base_config, "\n", text));
        !s.ok()) {
      return s;
    }
    absl::StatusOr<double> wall = RunChild(
        {programs_.train, "--config=" + config_path, "--out=" + run_dir},
        log_path, run_dir);
    if (!wall.ok()) return wall.status();
    // One worker: the trainer writes the one-worker reference.
    const std::string summary_path =
        (fs::path(run_dir) / (world == 1 ? "reference/run_summary.json"
                                         : "run_summary.json"))
            .string();
    RunSummary summary;
    if (absl::Status s = ReadJsonFile(summary_path, &summary); !s.ok()) return s;
    if (summary.updates() != updates || summary.world_size() != world) {
      return absl::InternalError(absl::StrCat(
          summary_path, ": ", summary.updates(), " updates on ",
          summary.world_size(), " workers, but the benchmark asked for ",
          updates, " on ", world, " (see ", config_path, ")"));
    }
    SystemRun run = FromRunSummary(summary);
    run.set_wall_seconds(*wall);
    run.set_log_path(log_path);
    run.set_result_path(summary_path);
    Done(run);
    return run;
  }

  absl::StatusOr<Measured<DdpBaselineResult>> RunDdp(const BenchmarkModel& model,
                                                     const PoolFiles& pool, int world,
                                                     int updates,
                                                     const std::string& suffix) {
    const std::string name = absl::StrCat(model.name, "_ddp_", world, "w", suffix);
    const std::string result_path = Path("runs", name + ".json");
    const std::string log_path = Path("logs", name + ".log");
    const int no_sync = settings_.smoke
                            ? kWarmupUpdates + kTimingWindow
                            : std::max(kWarmupUpdates + kTimingWindow, updates / 3);
    Announce(absl::StrCat(model.name, ": PyTorch DDP, ", world, " worker(s), ",
                          updates, " + ", no_sync, " no_sync updates"));
    std::vector<std::string> argv = {programs_.python};
    for (std::string& arg : DdpArguments(programs_.ddp_script, model,
                                         base_.optimizer(), pool, world, updates,
                                         no_sync, result_path)) {
      argv.push_back(std::move(arg));
    }
    absl::StatusOr<double> wall = RunChild(argv, log_path, result_path);
    if (!wall.ok()) return wall.status();
    DdpBaselineResult result;
    if (absl::Status s = ReadJsonFile(result_path, &result); !s.ok()) return s;
    SystemRun run = FromDdp(result);
    run.set_wall_seconds(*wall);
    run.set_log_path(log_path);
    run.set_result_path(result_path);
    Done(run);
    return Measured<DdpBaselineResult>{result, run};
  }

  Programs programs_;
  Settings settings_;
  TrainingConfig base_;
  int step_ = 0;
};

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
  return absl::StrCat("bazel run //bench:scaling -- ", absl::StrJoin(args, " "));
}

int Main(int argc, char** argv) {
  if (absl::Status s = CheckFlags(); !s.ok()) {
    std::cerr << "error: " << s.message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<Programs> programs = FindPrograms(argv[0]);
  if (!programs.ok()) {
    std::cerr << "error: " << programs.status().message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<std::string> base_text = ReadFileToString(programs->base_config);
  if (!base_text.ok()) {
    std::cerr << "error: " << base_text.status().message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<TrainingConfig> base =
      ParseBaseConfig(*base_text, programs->base_config);
  if (!base.ok()) {
    std::cerr << "error: " << base.status().message() << std::endl;
    return kExitBadInput;
  }
  absl::StatusOr<std::vector<BenchmarkModel>> models = ChosenModels(*base);
  if (!models.ok()) {
    std::cerr << "error: " << models.status().message() << std::endl;
    return kExitBadInput;
  }
  Settings settings;
  settings.out_dir = UserPath(absl::GetFlag(FLAGS_out));
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
  Benchmark benchmark(*programs, settings, *base);
  for (const BenchmarkModel& model : *models) {
    absl::StatusOr<ModelScaling> scaling = benchmark.Run(model);
    if (!scaling.ok()) {
      std::cout << std::endl;
      std::cerr << "scaling benchmark FAILED (" << model.name
                << "): " << scaling.status().message() << std::endl;
      return kExitRunFailed;
    }
    *report.add_models() = *std::move(scaling);
  }
  for (TargetCheck& check : CheckTargets({report.models().begin(), report.models().end()})) {
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
      "and two workers, on two models: --out=DIR");
  absl::ParseCommandLine(argc, argv);
  return receipt_parity::Main(argc, argv);
}
