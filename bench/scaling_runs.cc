#include "bench/scaling_runs.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/receipt_pool.h"
#include "bench/scaling_plan.h"
#include "bench/scaling_report.pb.h"
#include "bench/scaling_report_builder.h"
#include "data/receipt_dataset.h"
#include "google/protobuf/text_format.h"
#include "io/atomic_file.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/run_summary_builder.h"
#include "io/json_file.h"
#include "parity/parity_report.pb.h"
#include "runtime/cpu_pinning.h"
#include "runtime/mpirun_launcher.h"
#include "runtime/subprocess.h"
#include "artifacts/run_summary.pb.h"

namespace receipt_parity {

void PrepareEnvironment() {
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) {
    setenv(name, "1", /*overwrite=*/1);
  }
  for (const char* name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    unsetenv(name);
  }
}

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Runs one child to success; returns its wall time. The run's folder or
// file from an earlier benchmark is removed first, so nothing stale is read.
// Runs the child to its end, which must be exit `expected_exit` (0 unless
// a run is expected to report a failed verdict); its wall seconds.
absl::StatusOr<double> RunChild(std::vector<std::string> argv,
                                const std::string& log_path,
                                const std::string& result_path, int expected_exit = 0) {
  std::error_code ignored;
  fs::remove_all(result_path, ignored);
  fs::remove(log_path, ignored);
  fs::create_directories(fs::path(result_path).parent_path(), ignored);
  const Clock::time_point start = Clock::now();
  if (expected_exit == 0) {
    if (absl::Status s = RunProcessToSuccess({argv, log_path}); !s.ok()) return s;
  } else {
    absl::StatusOr<ProcessExit> exit = RunProcess({argv, log_path});
    if (!exit.ok()) return exit.status();
    if (exit->exit_code() != expected_exit) {
      return absl::AbortedError(absl::StrCat(
          "`", absl::StrJoin(argv, " "), "` ", exit->Describe(), ", where this run ends with ",
          expected_exit, "; last lines of ", log_path, ":\n", LastLines(log_path, 20)));
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median seconds of the checked updates the run at `parity_path`
// replayed (parity.json replay); 0 when it replayed none.
absl::StatusOr<double> ReplaySecondsPerCheckedUpdate(const std::string& parity_path) {
  ParityReport parity;
  if (absl::Status s = ReadArtifact(parity_path, &parity); !s.ok()) return s;
  std::vector<double> seconds;
  for (const UpdateReplay& update : parity.replay().updates()) {
    if (update.mode() != "not_replayed" && update.seconds() > 0) {
      seconds.push_back(update.seconds());
    }
  }
  return Median(seconds);
}

// A baseline's own result and the report's view of the same run.
template <typename Result>
struct Measured {
  Result result;
  SystemRun run;
};

}  // namespace

// Buckets of the overlap runs (ModelScaling.overlap_buckets).
constexpr int kOverlapBuckets = 4;
// Tries of a PyTorch DDP baseline run after its first fails (its aborts are
// PyTorch's, at random; ours are never retried).
constexpr int kDdpRetries = 2;

// What every run of one round needs.
struct RoundInputs {
  const BenchmarkModel* model = nullptr;
  const PoolFiles* pool = nullptr;
  std::string suffix;      // "_rN": names the round's files
  int updates = 0;         // trainer and DDP updates (fixed in round 0)
  int bare_updates = 0;    // the bare pair's timed updates (round 0's bare)
  int64_t bucket_cap_bytes = 0;  // the overlap runs' cap
  std::string scripted_model;    // the model as TorchScript (ModelRoute::kTorchScript)
};

// One run of a round after the bare step (which fixes the round-0 sizes):
// where it goes in ModelScaling and how it runs. A new variant of the
// benchmark is one entry of Impl::Variants.
struct Variant {
  std::function<SystemRun*(ModelScaling*)> field;
  std::function<absl::StatusOr<SystemRun>(const RoundInputs&)> run;
};

class ScalingRunner::Impl {
 public:
  Impl(Programs programs, Settings settings, TrainingConfig base)
      : programs_(std::move(programs)),
        settings_(std::move(settings)),
        base_(std::move(base)) {}

  absl::StatusOr<ModelScaling> Run(const BenchmarkModel& model) {
    ModelScaling m;
    m.set_name(model.name);
    *m.mutable_model() = model.model;
    m.set_image_size(model.image_size);
    m.set_batch_per_rank(model.batch_per_rank);
    m.set_overlap_buckets(kOverlapBuckets);

    absl::StatusOr<PoolFiles> pool = WritePool(model);
    if (!pool.ok()) return pool.status();
    RoundInputs inputs;
    inputs.model = &model;
    inputs.pool = &*pool;
    absl::StatusOr<std::string> scripted = WriteScriptedModel(model);
    if (!scripted.ok()) return scripted.status();
    inputs.scripted_model = *scripted;
    std::vector<ModelScaling> rounds;
    for (int round = 0; round < settings_.rounds; ++round) {
      inputs.suffix = absl::StrCat("_r", round);
      ModelScaling this_round;
      this_round.set_batch_per_rank(model.batch_per_rank);
      absl::StatusOr<Measured<BareStepResult>> bare = RunBare(model, *pool, inputs.suffix);
      if (!bare.ok()) return bare.status();
      *this_round.mutable_bare_libtorch() = bare->run;
      KeepBestRound(bare->run, m.mutable_bare_libtorch());
      if (round == 0) {
        m.set_description(bare->result.model());
        m.set_parameter_count(bare->result.parameter_count());
        inputs.updates = settings_.smoke
                             ? kSmokeUpdates
                             : UpdatesFor(settings_.seconds_per_run,
                                          bare->result.median_update_seconds(),
                                          kWarmupUpdates + 20 * kTimingWindow,
                                          settings_.max_updates);
        inputs.bare_updates = bare->result.updates();
        inputs.bucket_cap_bytes =
            std::max<int64_t>(1, int64_t{4} * bare->result.parameter_count() /
                                     kOverlapBuckets);
      }
      for (const Variant& variant : Variants(model, &m)) {
        absl::StatusOr<SystemRun> run = variant.run(inputs);
        if (!run.ok()) return run.status();
        *variant.field(&this_round) = *run;
        KeepBestRound(*run, variant.field(&m));
      }
      if (MpirunInstalled()) {
        absl::StatusOr<double> shm = RunShmAllreduce(m.parameter_count(), inputs.suffix);
        if (!shm.ok()) return shm.status();
        this_round.set_shm_allreduce_seconds_gradient(*shm);
        if (m.shm_allreduce_seconds_gradient() == 0 || *shm < m.shm_allreduce_seconds_gradient()) {
          m.set_shm_allreduce_seconds_gradient(*shm);
        }
      }
      FillRatios(&this_round);
      rounds.push_back(std::move(this_round));
    }
    FillRatios(&m);
    FillRoundRatios(rounds, &m);
    return m;
  }

 private:
  // Every run of a round after the bare step, in the order they run.
  // `m` receives the DDP two-worker all-reduce figures.
  std::vector<Variant> Variants(const BenchmarkModel& model, ModelScaling* m) {
    auto ours = [this](int world, TrainerVariant how) {
      return [this, world, how](const RoundInputs& in) {
        return RunOurs(*in.model, world, in.updates, in.suffix, how, in.bucket_cap_bytes);
      };
    };
    auto routed = [this](ModelRoute route) {
      return [this, route](const RoundInputs& in) {
        const std::string file =
            route == ModelRoute::kTorchScript ? in.scripted_model : programs_.ddp_script;
        return RunOurs(*in.model, 2, in.updates, in.suffix, TrainerVariant::kAsConfigured,
                       in.bucket_cap_bytes, route, file);
      };
    };
    auto ddp = [this, m](int world) {
      return [this, m, world](const RoundInputs& in) -> absl::StatusOr<SystemRun> {
        absl::StatusOr<Measured<DdpBaselineResult>> run =
            RunDdp(*in.model, *in.pool, world, in.updates, in.suffix);
        if (!run.ok()) return run.status();
        if (world == 2) KeepFastestAllreduce(run->result, m);
        return run->run;
      };
    };
    std::vector<Variant> variants = {
        {[](ModelScaling* s) { return s->mutable_bare_two_processes(); },
         [this](const RoundInputs& in) {
           return RunBarePair(*in.model, *in.pool, in.bare_updates, in.suffix);
         }},
        {[](ModelScaling* s) { return s->mutable_ours_one_worker(); },
         ours(1, TrainerVariant::kAsConfigured)},
        {[](ModelScaling* s) { return s->mutable_ddp_one_worker(); }, ddp(1)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers(); },
         ours(2, TrainerVariant::kAsConfigured)},
        {[](ModelScaling* s) { return s->mutable_ddp_two_workers(); }, ddp(2)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_buckets_overlap(); },
         ours(2, TrainerVariant::kBucketsOverlapped)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_buckets_no_overlap(); },
         ours(2, TrainerVariant::kBucketsNotOverlapped)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_accumulation_2(); },
         ours(2, TrainerVariant::kAccumulation2)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_accumulation_4(); },
         ours(2, TrainerVariant::kAccumulation4)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_ordered_sum(); },
         ours(2, TrainerVariant::kOrderedSum)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_ordered_sum_whole_shares(); },
         ours(2, TrainerVariant::kOrderedSumWholeShares)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_checks_off(); },
         ours(2, TrainerVariant::kChecksOff)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_torchscript(); },
         routed(ModelRoute::kTorchScript)},
        {[](ModelScaling* s) { return s->mutable_ours_two_workers_python_module(); },
         routed(ModelRoute::kPythonModule)},
    };
    if (TakesBatchNorm(model)) AddBatchNormVariants(ours, &variants);
    AddOrderedSumScalingVariants(&variants);
    // Where mpirun is installed; --smoke: only where communication binds.
    if (MpirunInstalled() && (!settings_.smoke || m->name() == "communication_bound")) {
      variants.push_back({[](ModelScaling* s) { return s->mutable_ours_two_workers_mpi(); },
                          ours(2, TrainerVariant::kOverMpi)});
      if (m->name() == "communication_bound") {
        variants.push_back(
            {[](ModelScaling* s) { return s->mutable_ours_two_workers_mpi_checks_off(); },
             ours(2, TrainerVariant::kChecksOffOverMpi)});
      }
    }
    return variants;
  }

  // allreduce_sum and ordered_sum side by side at three and four workers,
  // half the updates of the two-worker runs (no fewer than the least a
  // timed run takes).
  void AddOrderedSumScalingVariants(std::vector<Variant>* variants) {
    auto ours = [this](int world, TrainerVariant how) {
      return [this, world, how](const RoundInputs& in) {
        const int updates =
            settings_.smoke ? in.updates
                            : std::max(in.updates / 2, kWarmupUpdates + 20 * kTimingWindow);
        return RunOurs(*in.model, world, updates, in.suffix, how, in.bucket_cap_bytes);
      };
    };
    variants->insert(
        variants->end(),
        {{[](ModelScaling* s) { return s->mutable_ours_three_workers(); },
          ours(3, TrainerVariant::kAsConfigured)},
         {[](ModelScaling* s) { return s->mutable_ours_three_workers_ordered_sum(); },
          ours(3, TrainerVariant::kOrderedSum)},
         {[](ModelScaling* s) { return s->mutable_ours_four_workers(); },
          ours(4, TrainerVariant::kAsConfigured)},
         {[](ModelScaling* s) { return s->mutable_ours_four_workers_ordered_sum(); },
          ours(4, TrainerVariant::kOrderedSum)}});
  }

  // Synchronized and per-rank batch norm, side by side at 1, 2 and 4
  // micro-batches per update.
  template <typename Ours>
  static void AddBatchNormVariants(const Ours& ours, std::vector<Variant>* variants) {
    variants->insert(
        variants->end(),
        {{[](ModelScaling* s) { return s->mutable_ours_two_workers_per_rank_batch_norm(); },
          ours(2, TrainerVariant::kPerRankBatchNorm)},
         {[](ModelScaling* s) { return s->mutable_ours_two_workers_sync_batch_norm(); },
          ours(2, TrainerVariant::kSyncBatchNorm)},
         {[](ModelScaling* s) {
            return s->mutable_ours_two_workers_per_rank_batch_norm_accumulation_2();
          },
          ours(2, TrainerVariant::kPerRankBatchNormAccumulation2)},
         {[](ModelScaling* s) {
            return s->mutable_ours_two_workers_sync_batch_norm_accumulation_2();
          },
          ours(2, TrainerVariant::kSyncBatchNormAccumulation2)},
         {[](ModelScaling* s) {
            return s->mutable_ours_two_workers_per_rank_batch_norm_accumulation_4();
          },
          ours(2, TrainerVariant::kPerRankBatchNormAccumulation4)},
         {[](ModelScaling* s) {
            return s->mutable_ours_two_workers_sync_batch_norm_accumulation_4();
          },
          ours(2, TrainerVariant::kSyncBatchNormAccumulation4)}});
  }

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

  // The median seconds of MPI_Allreduce of `elements` float32 values
  // between two ranks of mpirun, over shared memory (bench/shm_allreduce),
  // started as the trainer's launcher starts mpirun.
  absl::StatusOr<double> RunShmAllreduce(int64_t elements, const std::string& suffix) {
    Announce(absl::StrCat("MPI_Allreduce of ", elements,
                          " float32 values over shared memory, 2 ranks"));
    const std::string name = absl::StrCat("shm_allreduce_", elements, suffix);
    const std::string result_path = Path("runs", name + ".json");
    LaunchOptions options;
    options.world_size = 2;
    options.args = {absl::StrCat("--elements=", elements),
                    absl::StrCat("--repeats=", settings_.smoke ? 3 : 30),
                    "--out=" + result_path};
    std::vector<std::string> command = MpirunCommandLine(options, programs_.shm_allreduce);
    command[0] = MpirunPath();  // RunChild takes a path, not a name to look up
    absl::StatusOr<double> wall = RunChild(command, Path("logs", name + ".log"), result_path);
    if (!wall.ok()) return wall.status();
    ShmAllreduceResult result;
    if (absl::Status s = ReadJsonFile(result_path, &result); !s.ok()) return s;
    return result.median_seconds();
  }

  // One bare loop: `updates` timed updates, or as many as fit in
  // `max_seconds` when that is > 0. Returns its result and wall time.
  absl::StatusOr<std::pair<BareStepResult, double>> RunOneBare(
      const BenchmarkModel& model, const PoolFiles& pool, const std::string& name,
      int updates, double max_seconds, int pin_cpu = -1) {
    const std::string result_path = Path("runs", name + ".json");
    const std::string log_path = Path("logs", name + ".log");
    std::vector<std::string> argv = {programs_.bare};
    for (std::string& arg :
         BareArguments(model, base_.optimizer(), pool, settings_.smoke ? 1 : 5,
                       updates, max_seconds, result_path)) {
      argv.push_back(std::move(arg));
    }
    if (pin_cpu >= 0) argv.push_back(absl::StrCat("--pin_cpu=", pin_cpu));
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
    // Pinned as the launcher pins two ranks (runtime/cpu_pinning.h).
    int cpus[2] = {-1, -1};
    if (absl::StatusOr<std::vector<int>> allowed = AllowedCpus(); allowed.ok()) {
      for (int i = 0; i < 2; ++i) cpus[i] = CpuForRank(*allowed, i, 2).value_or(-1);
    }
    absl::StatusOr<std::pair<BareStepResult, double>> second;
    std::thread other(
        [&] { second = RunOneBare(model, pool, names[1], updates, 0, cpus[1]); });
    absl::StatusOr<std::pair<BareStepResult, double>> first =
        RunOneBare(model, pool, names[0], updates, 0, cpus[0]);
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

  // The model's layers scripted by ddp_baseline.py --script-to, once per
  // model: DIR/models/MODEL.pt.
  absl::StatusOr<std::string> WriteScriptedModel(const BenchmarkModel& model) {
    const std::string path = Path("models", model.name + ".pt");
    Announce(absl::StrCat(model.name, ": the same layers as TorchScript, ", path));
    std::vector<std::string> argv = {programs_.python};
    for (std::string& arg : ScriptModelArguments(programs_.ddp_script, model,
                                                 base_.seeds().model_init(), path)) {
      argv.push_back(std::move(arg));
    }
    absl::StatusOr<double> wall =
        RunChild(argv, Path("logs", model.name + "_script.log"), path);
    if (!wall.ok()) return wall.status();
    std::cout << absl::StrFormat(" %.1f s\n", *wall) << std::flush;
    return path;
  }

  // `route` and `model_file`: how the run's model is given
  // (WithModelRoute).
  absl::StatusOr<SystemRun> RunOurs(const BenchmarkModel& model, int world,
                                    int updates, const std::string& suffix,
                                    TrainerVariant how, int64_t bucket_cap_bytes,
                                    ModelRoute route = ModelRoute::kBuiltIn,
                                    const std::string& model_file = "") {
    const std::string name = absl::StrCat(model.name, "_ours_", world, "w", VariantTag(how),
                                          RouteTag(route), suffix);
    const std::string config_path = Path("configs", name + ".pbtxt");
    const std::string run_dir = Path("runs", name);
    const std::string log_path = Path("logs", name + ".log");
    Announce(absl::StrCat(model.name, ": this project, ", world, " worker(s)",
                          VariantLabel(how, bucket_cap_bytes), RouteLabel(route), ", ",
                          updates, " updates"));
    std::string text;
    google::protobuf::TextFormat::Printer printer;
    printer.SetExpandAny(true);  // plugin options as text, not bytes
    printer.PrintToString(
        WithModelRoute(WithTrainerVariant(TrainerConfig(base_, model, world, updates), how,
                                          bucket_cap_bytes),
                       model, route, model_file),
        &text);
    std::error_code ignored;
    fs::create_directories(fs::path(config_path).parent_path(), ignored);
    if (absl::Status s = WriteFileAtomically(
            config_path,
            absl::StrCat("# Generated by //bench:scaling from ",
                         programs_.base_config, "\n", text));
        !s.ok()) {
      return s;
    }
    // The benchmark measures speed: no whole-run reference is trained at
    // the end of a run (train --whole_run_parity=false).
    absl::StatusOr<double> wall = RunChild(
        {programs_.train, "--config=" + config_path, "--out=" + run_dir,
         "--whole_run_parity=false"},
        log_path, run_dir, ExpectedExitCode(how));
    if (!wall.ok()) return wall.status();
    // One worker: the trainer writes the one-worker reference.
    const std::string summary_path =
        (fs::path(run_dir) / (world == 1 ? "reference/run_summary.json"
                                         : "run_summary.json"))
            .string();
    RunSummary summary;
    if (absl::Status s = ReadArtifact(summary_path, &summary); !s.ok()) return s;
    if (summary.updates() != updates || summary.world_size() != world) {
      return absl::InternalError(absl::StrCat(
          summary_path, ": ", summary.updates(), " updates on ",
          summary.world_size(), " workers, but the benchmark asked for ",
          updates, " on ", world, " (see ", config_path, ")"));
    }
    SystemRun run = FromRunSummary(summary);
    if (world > 1) {
      absl::StatusOr<double> replay =
          ReplaySecondsPerCheckedUpdate((fs::path(run_dir) / "parity.json").string());
      if (!replay.ok()) return replay.status();
      run.set_replay_seconds_per_checked_update(*replay);
    }
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
    // PyTorch's side has aborted a DDP rank at random (std::terminate in a
    // rank, once in some 60 runs here idle, twice in a row once on busy
    // cores): the baseline gets two more tries, the last failed log kept as
    // LOG.failed. Our own runs get none.
    for (int retry = 1; !wall.ok() && retry <= kDdpRetries; ++retry) {
      std::error_code ignored;
      fs::rename(log_path, log_path + ".failed", ignored);
      std::cout << " failed (" << wall.status().message() << "; log in " << log_path
                << ".failed); once more ..." << std::flush;
      wall = RunChild(argv, log_path, result_path);
    }
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

ScalingRunner::ScalingRunner(Programs programs, Settings settings, TrainingConfig base)
    : impl_(std::make_unique<Impl>(std::move(programs), std::move(settings),
                                   std::move(base))) {}

ScalingRunner::~ScalingRunner() = default;

absl::StatusOr<ModelScaling> ScalingRunner::Run(const BenchmarkModel& model) {
  return impl_->Run(model);
}

}  // namespace receipt_parity
