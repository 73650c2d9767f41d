// bazel run //trainer:train -- --config=configs/NAME.pbtxt --out=DIR
//
// world_size 1: trains the one-worker reference into DIR/reference/.
// world_size W > 1, no RANK in the environment: makes DIR/reference/ first
//   when it is missing or of another config (its first update: all that
//   parity needs), then launches W local worker processes (torchrun
//   conventions) and watches them.
// RANK set (this launcher, `torchrun --no-python`, a scheduler, another
//   host): runs as that one rank and writes DIR/ (rank 0).
//
// Exit codes: 0 done; 1 a run failed (a rank died, a peer timed out); 2 bad
// input (flags, config, data); 3 the run finished but first-step parity
// with the reference failed (see DIR/parity.json).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/fault_injection.h"
#include "cli/command_line.h"
#include "logging/glog.h"
#include "io/json_file.h"
#include "io/run_folder_lock.h"
#include "plugins/plugin_registry.h"
#include "runtime/distributed_env.h"
#include "runtime/launcher.h"
#include "runtime/cuda_support_loader.h"
#include "runtime/process_group.h"
#include "trainer/artifacts.pb.h"
#include "trainer/config_loader.h"
#include "trainer/device_check.h"
#include "trainer/training_run.h"

ABSL_FLAG(std::string, config, "", "Training config (text proto), e.g. configs/one_worker.pbtxt.");
ABSL_FLAG(std::string, out, "", "Output folder; default: the config's run.output_dir.");
ABSL_FLAG(bool, validate_only, false,
          "Check the config, data, plugins and model, print the fingerprint, "
          "write nothing.");
ABSL_FLAG(int32_t, kill_rank, -1,
          "Injected failure: this rank SIGKILLs itself during a checkpoint "
          "save (overrides run.fault.kill_rank), or inside --kill_phase.");
ABSL_FLAG(std::string, kill_point, "",
          "before_shard, mid_shard, after_shard_before_rename, "
          "before_manifest or mid_manifest (overrides run.fault.kill_point).");
ABSL_FLAG(int32_t, kill_generation, 0,
          "The generation whose save is interrupted (overrides "
          "run.fault.kill_generation; default 1).");
ABSL_FLAG(std::string, kill_phase, "",
          "Injected failure inside a phase instead of at a save's kill point: "
          "forward_backward, allreduce, validation_gather or save. --kill_rank "
          "SIGKILLs itself --kill_delay_us after the phase of --kill_update "
          "began, or at the phase's end if it ends first.");
ABSL_FLAG(int64_t, kill_update, -1,
          "With --kill_phase: the updates the run has completed when the phase "
          "begins (update K's forward_backward and allreduce, the save after K "
          "updates, the validation after the run's K updates).");
ABSL_FLAG(int64_t, kill_delay_us, 0,
          "With --kill_phase: microseconds from the phase's start to the kill.");
ABSL_FLAG(std::vector<std::string>, record_update, {},
          "Global update indices to record as OUT/update-K.json.");
ABSL_FLAG(bool, list_plugins, false, "Print every registered plugin as kind/name and exit.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

int Fail(const absl::Status& status) { return ReportFailure(status); }

// DIR/reference holds the one-worker reference of `config`?
bool ReferenceMatches(const std::string& reference_dir,
                      const TrainingConfig& config) {
  RunManifest manifest;
  if (!fs::exists(reference_dir + "/first_step.json") ||
      !ReadJsonFile(reference_dir + "/run_manifest.json", &manifest).ok()) {
    return false;
  }
  return manifest.config_fingerprint() ==
         ConfigFingerprint(ReferenceConfig(config));
}

// The rank that dies: --kill_rank over run.fault.kill_rank; InvalidArgument
// when the config has no such rank.
absl::StatusOr<int> KillRankFor(const LoadedConfig& loaded) {
  const int rank = absl::GetFlag(FLAGS_kill_rank) >= 0
                       ? absl::GetFlag(FLAGS_kill_rank)
                       : loaded.config.run().fault().kill_rank();
  if (rank >= loaded.config.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kill_rank=", rank, ": no such rank with world_size ",
        loaded.config.world_size()));
  }
  return rank;
}

// --kill_phase's plan (checkpoint/phase_kill.h), killing `rank`.
absl::StatusOr<FaultPlan> PhaseFaultPlanFor(const std::string& phase, int rank) {
  if (absl::GetFlag(FLAGS_kill_update) < 0) {
    return absl::InvalidArgumentError("--kill_phase needs --kill_update >= 0");
  }
  absl::StatusOr<PhaseKillPlan> kill = MakePhaseKillPlan(
      rank, phase, absl::GetFlag(FLAGS_kill_update), absl::GetFlag(FLAGS_kill_delay_us));
  if (!kill.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--kill_phase: ", kill.status().message()));
  }
  FaultPlan plan;
  plan.phase = *kill;
  return plan;
}

// The run's fault plan: flags over the config's run.fault; a kill point or
// a kill phase, not both.
absl::StatusOr<FaultPlan> FaultPlanFor(const LoadedConfig& loaded) {
  const FaultInjection& fault = loaded.config.run().fault();
  const std::string point = !absl::GetFlag(FLAGS_kill_point).empty()
                                ? absl::GetFlag(FLAGS_kill_point)
                                : fault.kill_point();
  const std::string phase = absl::GetFlag(FLAGS_kill_phase);
  if (point.empty() && phase.empty()) return FaultPlan{};
  if (!point.empty() && !phase.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kill_phase=", phase, " and kill point ", point,
        " (--kill_point or run.fault.kill_point): one injected failure per run"));
  }
  absl::StatusOr<int> rank = KillRankFor(loaded);
  if (!rank.ok()) return rank.status();
  if (!phase.empty()) return PhaseFaultPlanFor(phase, *rank);
  const int64_t generation = absl::GetFlag(FLAGS_kill_generation) > 0
                                 ? absl::GetFlag(FLAGS_kill_generation)
                                 : fault.kill_generation();
  absl::StatusOr<FaultPlan> plan = MakeFaultPlan(*rank, point, generation);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--kill_point: ", plan.status().message()));
  }
  return plan;
}

absl::StatusOr<std::set<int64_t>> RecordedUpdates() {
  std::set<int64_t> updates;
  for (const std::string& text : absl::GetFlag(FLAGS_record_update)) {
    int64_t k = 0;
    if (!absl::SimpleAtoi(text, &k) || k < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--record_update: '", text, "' is not an update index"));
    }
    updates.insert(k);
  }
  return updates;
}

// What every run of this invocation shares: checkpoints, fault, records.
absl::Status FillRunOptions(const LoadedConfig& loaded, const std::string& out,
                            TrainingRunOptions* options) {
  absl::StatusOr<FaultPlan> fault = FaultPlanFor(loaded);
  if (!fault.ok()) return fault.status();
  absl::StatusOr<std::set<int64_t>> records = RecordedUpdates();
  if (!records.ok()) return records.status();
  options->loaded = &loaded;
  options->checkpoint_dir = out + "/checkpoints";
  options->fault = *fault;
  options->record_updates = *records;
  return absl::OkStatus();
}

absl::Status MakeReference(const LoadedConfig& loaded,
                           const std::string& reference_dir,
                           int64_t max_updates) {
  LoadedConfig reference = loaded;
  reference.config = ReferenceConfig(loaded.config);
  if (max_updates > 0) reference.config.mutable_run()->set_max_updates(max_updates);
  LOG(INFO) << "making the one-worker reference in " << reference_dir;
  TrainingRunOptions options;
  options.loaded = &reference;
  options.artifact_dir = reference_dir;
  return RunTraining(options).status();
}

// OUT's lock (io/run_folder_lock.h), taken before anything in OUT is read
// or written; none for a rank whose launcher holds it, or for ranks other
// than 0.
absl::StatusOr<std::optional<RunFolderLock>> LockRunFolder(const std::string& out,
                                                           bool needs_lock) {
  if (!needs_lock || ParentHoldsRunFolderLock(out)) return std::nullopt;
  absl::StatusOr<RunFolderLock> lock = RunFolderLock::Acquire(out);
  if (!lock.ok()) return lock.status();
  LOG(INFO) << "run folder " << out << " locked (" << lock->holder() << ")";
  return std::optional<RunFolderLock>(*std::move(lock));
}

int RunAsRank(const LoadedConfig& loaded, const DistributedEnv& env,
              const std::string& out) {
  const TrainingConfig& config = loaded.config;
  if (env.world_size != config.world_size()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "WORLD_SIZE=", env.world_size, " but ", loaded.locator->Where("world_size"),
        ": world_size is ", config.world_size())));
  }
  absl::StatusOr<std::optional<RunFolderLock>> lock = LockRunFolder(out, env.rank == 0);
  if (!lock.ok()) return Fail(lock.status());
  const std::string reference_dir = out + "/reference";
  // A one-rank NCCL run is compared too: it proves the NCCL wiring.
  const bool compares = env.world_size > 1 || config.backend() == "nccl";
  if (env.rank == 0 && compares && !ReferenceMatches(reference_dir, config)) {
    // Under torchrun nobody made it first; the other ranks wait for rank 0
    // at rendezvous.
    if (absl::Status s = MakeReference(loaded, reference_dir, 1); !s.ok()) {
      return Fail(s);
    }
  }
  // NCCL binds each rank to the GPU current when it starts.
  if (config.device() == "cuda") {
    try {
      RankDevice(config, env.local_rank);
    } catch (const std::exception& e) {
      return Fail(absl::InternalError(
          absl::StrCat("rank ", env.rank, ": choosing its GPU: ", e.what())));
    }
  }
  const CudaSupport* nccl = config.backend() == "nccl" ? LoadedCudaSupport() : nullptr;
  absl::StatusOr<ProcessGroupHandle> group = ConnectProcessGroup(
      env, std::chrono::seconds(config.run().collective_timeout_seconds()), nccl);
  if (!group.ok()) return Fail(group.status());
  LOG(INFO) << "rank " << env.rank << "/" << env.world_size << ": joined the "
            << (nccl != nullptr ? "Gloo (CPU) and NCCL (CUDA)" : "Gloo")
            << " process group at " << env.master_addr << ":" << env.master_port;
  TrainingRunOptions options;
  if (absl::Status s = FillRunOptions(loaded, out, &options); !s.ok()) return Fail(s);
  options.rank = env.rank;
  options.local_rank = env.local_rank;
  options.world_size = env.world_size;
  options.process_group = &*group;
  options.artifact_dir = out;
  options.reference_dir = compares ? reference_dir : "";
  absl::StatusOr<TrainingOutcome> outcome = RunTraining(options);
  if (!outcome.ok()) return Fail(outcome.status());
  if (outcome->parity_checked && !outcome->parity_pass) {
    std::cerr << "parity FAILED: the multi-worker first update differs from "
                 "the one-worker reference; see "
              << out << "/parity.json" << std::endl;
    return kExitCheckFailed;
  }
  return 0;
}

int Launch(const LoadedConfig& loaded, const std::string& out, int argc,
           char** argv) {
  const TrainingConfig& config = loaded.config;
  absl::StatusOr<std::optional<RunFolderLock>> lock = LockRunFolder(out, true);
  if (!lock.ok()) return Fail(lock.status());
  // The ranks started below are this run: they do not lock again.
  if (lock->has_value()) {
    setenv(kRunLockHeldEnv, absl::StrCat((*lock)->path(), ":", getpid()).c_str(), 1);
  }
  const std::string reference_dir = out + "/reference";
  if (!ReferenceMatches(reference_dir, config)) {
    if (absl::Status s = MakeReference(loaded, reference_dir, 1); !s.ok()) {
      return Fail(s);
    }
  }
  absl::StatusOr<int> port = PickFreePort();
  if (!port.ok()) return Fail(port.status());
  LaunchOptions options;
  options.world_size = config.world_size();
  options.master_addr = config.run().master_addr();
  options.master_port = *port;
  for (int i = 1; i < argc; ++i) options.args.push_back(argv[i]);
  options.args.push_back("--out=" + out);
  LOG(INFO) << "launching " << options.world_size << " workers (MASTER_ADDR="
            << options.master_addr << " MASTER_PORT=" << options.master_port << ")";
  LaunchResult result;
  absl::Status status = LaunchLocalWorkers(options, &result);
  if (status.ok()) {
    std::cout << "results in " << out << "/ (reference in " << reference_dir
              << "/)" << std::endl;
    return 0;
  }
  if (result.failed_rank == 0 && WIFEXITED(result.wait_status[0]) &&
      WEXITSTATUS(result.wait_status[0]) == kExitCheckFailed) {
    return kExitCheckFailed;
  }
  std::cerr << "error: " << status.message() << std::endl;
  return kExitRunFailed;
}

int Main(int argc, char** argv) {
  ChangeToCallersDirectory();
  if (absl::Status s = CheckRegistries(); !s.ok()) return Fail(s);
  if (absl::GetFlag(FLAGS_list_plugins)) {
    for (const std::string& kind : RegisteredKinds()) {
      for (const std::string& name : RegisteredNames(kind.c_str())) {
        std::cout << kind << "/" << name << "\n";
      }
    }
    return 0;
  }
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (config_path.empty()) {
    return Fail(absl::InvalidArgumentError("--config is required"));
  }
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(config_path);
  if (!loaded.ok()) return Fail(loaded.status());
  if (absl::GetFlag(FLAGS_validate_only)) {
    if (absl::Status s = CheckRunnable(*loaded); !s.ok()) return Fail(s);
    std::cout << config_path << ": OK, fingerprint "
              << ConfigFingerprint(loaded->config) << std::endl;
    return 0;
  }
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) out = loaded->config.run().output_dir();
  if (out.empty()) {
    out = "out/" + fs::path(config_path).stem().string();
  }
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  if (!env.ok()) return Fail(env.status());
  if (env->has_value()) return RunAsRank(*loaded, **env, out);
  if (loaded->config.world_size() == 1) {
    // One worker: this run is the reference (with its checkpoints, if any).
    TrainingRunOptions options;
    if (absl::Status s = FillRunOptions(*loaded, out, &options); !s.ok()) {
      return Fail(s);
    }
    absl::StatusOr<std::optional<RunFolderLock>> lock = LockRunFolder(out, true);
    if (!lock.ok()) return Fail(lock.status());
    options.artifact_dir = out + "/reference";
    if (absl::Status s = RunTraining(options).status(); !s.ok()) return Fail(s);
    std::cout << "reference in " << out << "/reference/" << std::endl;
    return 0;
  }
  // Bad fault or record flags fail here, before any worker starts.
  TrainingRunOptions probe;
  if (absl::Status s = FillRunOptions(*loaded, out, &probe); !s.ok()) {
    return Fail(s);
  }
  return Launch(*loaded, out, argc, argv);
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Trains the receipt classifier: --config=configs/NAME.pbtxt --out=DIR");
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main(argc, argv);
}
