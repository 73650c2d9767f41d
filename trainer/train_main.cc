// bazel run //trainer:train -- --config=configs/NAME.pbtxt --out=DIR
//
// world_size 1: trains the one-worker reference into DIR/reference/.
// world_size W > 1, no RANK in the environment: makes DIR/reference/ first
//   when it does not hold a finished reference of this config (its first
//   update: all that parity needs), then launches W local worker processes
//   (torchrun conventions) and watches them.
// RANK set (this launcher, `torchrun --no-python`, a scheduler, another
//   host), or OMPI_COMM_WORLD_RANK (mpirun): runs as that one rank and
//   writes DIR/ (rank 0). `run { launcher: "mpirun" }` makes the launcher
//   start its workers with mpirun (trainer/rank_transport.h).
// The folder's states (fresh, resume, finished, another config) and
// --overwrite: trainer/run_folder_setup.h. A finished run asked for no
// more updates trains nothing and exits 0.
//
// Exit codes: 0 done; 1 a run failed (a rank died, a peer timed out); 2 bad
// input (flags, config, data); 3 parity with the reference failed (the
// first update, which stops the run, or the whole run; see
// DIR/parity.json); 4 preempted (SIGTERM or SIGUSR1: stopped at an update
// boundary with a generation saved there when it fitted; run it again).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "checkpoint/fault_injection.h"
#include "cli/command_line.h"
#include "config/checkpoint_plan.h"
#include "logging/glog.h"
#include "io/json_file.h"
#include "io/run_folder_lock.h"
#include "plugins/plugin_registry.h"
#include "runtime/distributed_env.h"
#include "runtime/launcher.h"
#include "runtime/mpi_world.h"
#include "runtime/cuda_support_loader.h"
#include "runtime/preemption.h"
#include "runtime/process_group.h"
#include "config/config_loader.h"
#include "config/device_check.h"
#include "config/layer_policy.h"
#include "artifacts/membership_record.h"
#include "artifacts/run_folder.h"
#include "trainer/run_folder_setup.h"
#include "config/plugin_listing.h"
#include "trainer/rank_transport.h"
#include "runtime/heartbeat.h"
#include "trainer/live_membership.h"
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
          "forward_backward, allreduce, optimizer_step, validation_gather, save or "
          "save_background (checkpoint.async). --kill_rank "
          "SIGKILLs itself --kill_delay_us after the phase of --kill_update "
          "began, or at the phase's end if it ends first.");
ABSL_FLAG(int64_t, kill_update, -1,
          "With --kill_phase: the updates the run has completed when the phase "
          "begins (update K's forward_backward and allreduce, the save after K "
          "updates, the validation after the run's K updates).");
ABSL_FLAG(std::string, kill_signal, "SIGKILL",
          "With --kill_phase: SIGKILL (the rank dies) or SIGTERM (the rank is sent a "
          "preemption, as a scheduler sends it, and the run stops at an update boundary).");
ABSL_FLAG(int64_t, kill_delay_us, 0,
          "With --kill_phase: microseconds from the phase's start to the kill.");
ABSL_FLAG(int64_t, audit_slots_file_above, receipt_parity::kAuditSlotsFileAbove,
          "Above this many training slots (training views x epochs trained) the run's "
          "sampler_audit.json keeps the summary and every slot goes to "
          "sampler_audit.slots beside it (samplers/audit_slots_file.h).");
ABSL_FLAG(int64_t, render_pixels_above, receipt_parity::kRenderPixelsAbove,
          "Above this many synthetic identities (data.synthetic.num_identities) every rank "
          "keeps a compact index of its examples and renders their pixels when a slot needs "
          "them, instead of holding them all; 0 renders always. The same examples bitwise "
          "either way (docs/data.md).");
ABSL_FLAG(int64_t, pixel_cache_mib, receipt_parity::kPixelCacheBytes >> 20,
          "With pixels rendered on demand: the MiB of rendered training examples each rank "
          "keeps (least recently used out).");
ABSL_FLAG(std::vector<std::string>, record_update, {},
          "Global update indices to record as OUT/update-K.json.");
ABSL_FLAG(bool, overwrite, false,
          "Remove the run held in --out (under its lock) and train it afresh. "
          "Ignored on a torchrun restart.");
ABSL_FLAG(bool, allow_recipe_change, false,
          "Continue the run held in --out although this config changes its recipe "
          "(the optimizer's settings, lr_schedule, clip_grad_norm; nothing else): "
          "the new attempt in run_state.json records each change.");
ABSL_FLAG(bool, whole_run_parity, true,
          "Judge the whole run against a whole one-worker reference and its drift "
          "twin at the end of a parity run (parity.check_updates, docs/parity.md); "
          "false: only the first update is judged, and parity.json's whole_run says "
          "so (the fault drill's runs, compared with each other, pass false).");
ABSL_FLAG(bool, list_plugins, false,
          "Print every registered plugin as kind/name and exit; with --config, "
          "also those its plugin_library entries add, each marked with its file.");

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

int Fail(const absl::Status& status) { return ReportFailure(status); }

// A process that trains `config` with the checkpoint plan `checkpoints`
// takes SIGTERM and SIGUSR1 as preemption (stop at an update boundary,
// save, exit 4); one without leaves them as by default (death: a restart
// would train from update 0 anyway).
bool TakePreemption(const TrainingConfig& config,
                    const std::optional<CheckpointPlan>& checkpoints) {
  if (!checkpoints.has_value()) {
    UnblockPreemptionSignals();
    return false;
  }
  StartPreemptionWatch(std::chrono::seconds(config.run().preemption_grace_seconds()));
  return true;
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
  const std::string signal = absl::GetFlag(FLAGS_kill_signal);
  if (signal != "SIGKILL" && signal != "SIGTERM") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kill_signal=", signal, ": SIGKILL or SIGTERM"));
  }
  kill->preempt = signal == "SIGTERM";
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

// --render_pixels_above and --pixel_cache_mib, each at least 0 and the
// cache's bytes an int64.
absl::Status CheckPixelFlags() {
  const int64_t above = absl::GetFlag(FLAGS_render_pixels_above);
  const int64_t cache_mib = absl::GetFlag(FLAGS_pixel_cache_mib);
  if (above < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--render_pixels_above: must be at least 0, got ", above));
  }
  if (cache_mib < 0 || cache_mib > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pixel_cache_mib: must be in [0, 2^40], got ", cache_mib));
  }
  return absl::OkStatus();
}

// What every run of this invocation shares: checkpoints (this process's
// plan), fault, records.
absl::Status FillRunOptions(const LoadedConfig& loaded,
                            const std::optional<CheckpointPlan>& checkpoints,
                            TrainingRunOptions* options) {
  absl::StatusOr<FaultPlan> fault = FaultPlanFor(loaded);
  if (!fault.ok()) return fault.status();
  absl::StatusOr<std::set<int64_t>> records = RecordedUpdates();
  if (!records.ok()) return records.status();
  if (absl::Status s = CheckPixelFlags(); !s.ok()) return s;
  options->loaded = &loaded;
  options->checkpoints = checkpoints;
  options->fault = *fault;
  options->record_updates = *records;
  options->allow_recipe_change = absl::GetFlag(FLAGS_allow_recipe_change);
  options->audit_slots_file_above = absl::GetFlag(FLAGS_audit_slots_file_above);
  options->render_pixels_above = absl::GetFlag(FLAGS_render_pixels_above);
  options->pixel_cache_bytes = absl::GetFlag(FLAGS_pixel_cache_mib) << 20;
  return absl::OkStatus();
}

// What the flags ask of the run folder, whether a run with the checkpoint
// plan `checkpoints` could be resumed there, and whether `loaded`'s
// updates depend on the world size.
RunFolderRules FolderRules(const LoadedConfig& loaded,
                           const std::optional<CheckpointPlan>& checkpoints) {
  RunFolderRules rules;
  rules.allow_recipe_change = absl::GetFlag(FLAGS_allow_recipe_change);
  rules.world_size_dependence = loaded.plugins.world_size_dependence;
  rules.nothing_to_resume = NothingToResume(checkpoints);
  return rules;
}

// The request to prepare `run_dir` (and `reference_dir`, when not empty)
// in --out=`out` for a run with the checkpoint plan `checkpoints`.
RunFolderRequest FolderRequest(const LoadedConfig& loaded, const std::string& out,
                               const std::string& run_dir,
                               const std::string& reference_dir,
                               const std::optional<CheckpointPlan>& checkpoints) {
  RunFolderRequest request;
  request.loaded = &loaded;
  request.out = out;
  request.run_dir = run_dir;
  request.reference_dir = reference_dir;
  request.overwrite = absl::GetFlag(FLAGS_overwrite);
  request.checkpoints = checkpoints;
  request.rules = FolderRules(loaded, request.checkpoints);
  return request;
}

// --overwrite in any of the forms absl accepts: not passed on to the
// ranks, whose folder the launcher has already prepared.
bool IsOverwriteFlag(const std::string& arg) {
  return arg == "--overwrite" || arg == "-overwrite" || arg == "--overwrite=true" ||
         arg == "--overwrite=1" || arg == "-overwrite=true";
}

// What a finished run prints instead of training; one its failed first
// update stopped (parity.stop_on_failure) exits as it did, 3.
int ReportFinished(const RunFolderDecision& decision) {
  std::cout << decision.description << std::endl;
  if (decision.finish.stopped_by() == "parity_failed") {
    std::cerr << "parity FAILED: this run stopped after its first update failed parity; see "
                 "its parity.json"
              << std::endl;
    return kExitCheckFailed;
  }
  return 0;
}

// This rank's view of the run folder: rank 0's prepared folder, or none on
// the other ranks. Under torchrun or a scheduler rank 0 prepares the folder
// (the other ranks wait for it at rendezvous); under this binary's launcher
// the launcher did, holds the lock and has decided, and deciding again reads
// the same folder (nothing was written since) and gives its decision.
absl::StatusOr<std::optional<PreparedRunFolder>> RankRunFolder(
    const LoadedConfig& loaded, const DistributedEnv& env, const std::string& out,
    const std::string& reference_dir, const std::optional<CheckpointPlan>& checkpoints) {
  // When survivors go on, any rank may become the writer: each knows the
  // launcher's decision (read before any rank writes: rank 0 begins the
  // attempt only after every rank joined).
  if (env.rank != 0 && !env.survivors_go_on) return std::optional<PreparedRunFolder>();
  if (!ParentHoldsRunFolderLock(out)) {
    absl::StatusOr<PreparedRunFolder> prepared =
        PrepareRunFolder(FolderRequest(loaded, out, out, reference_dir, checkpoints));
    if (!prepared.ok()) return prepared.status();
    return std::optional<PreparedRunFolder>(*std::move(prepared));
  }
  absl::StatusOr<RunFolderDecision> decision =
      DecideRunFolder(out, loaded.config, FolderRules(loaded, checkpoints));
  if (!decision.ok()) return decision.status();
  std::optional<PreparedRunFolder> folder;
  folder.emplace();
  folder->decision = *std::move(decision);
  return folder;
}

// The rank's exit code for a training run that ended: preempted, its parity
// failed (said on stderr), or 0 (the verdict said on stdout when judged).
int ExitCodeOf(const TrainingOutcome& outcome, const std::string& out) {
  if (outcome.preempted) return kExitPreempted;
  if (outcome.parity_checked && !outcome.parity_pass) {
    std::cerr << outcome.parity_verdict << "; see " << out << "/parity.json" << std::endl;
    return kExitCheckFailed;
  }
  if (outcome.parity_checked) {
    std::cout << outcome.parity_verdict << "; see " << out << "/parity.json" << std::endl;
  }
  return 0;
}

// One change of membership into run_summary.json's totals.
void CountChange(const ReformedReport& report, int world_size_before, int world_size_after,
                 MembershipTotals* totals) {
  if (totals->changes() == 0) totals->set_first_world_size(world_size_before);
  totals->set_changes(totals->changes() + 1);
  totals->set_reforming_seconds(totals->reforming_seconds() + report.reforming_seconds);
  totals->set_updates_redone(totals->updates_redone() + report.updates_redone);
  totals->set_world_size(world_size_after);
}

// `options` go on in the group `next` formed (after a loss, a grown group,
// or a replacement's first) from `agreed`, the state its members agreed
// on: the group and its membership taken into `group` and `membership`,
// the change counted, the rank and world size, the config at that world
// size (kept in `resized`), no injected failure (it happened).
absl::Status GoOnInGroup(const LoadedConfig& loaded, GroupAfterLoss& next,
                         const LiveHandover& agreed, int* membership, ProcessGroupHandle* group,
                         std::optional<LoadedConfig>* resized, TrainingRunOptions* options) {
  *membership = next.membership;
  *group = std::move(next.group);
  CountChange(next.report, agreed.state.world_size, next.world_size, &options->membership);
  absl::StatusOr<LoadedConfig> adopted = WithWorldSize(loaded, next.world_size);
  if (!adopted.ok()) return adopted.status();
  *resized = *std::move(adopted);
  options->loaded = &**resized;
  options->rank = next.rank;
  options->world_size = next.world_size;
  options->fault = FaultPlan{};
  options->attempt = agreed.attempt;
  options->resume_from_memory = &agreed;
  return absl::OkStatus();
}

// Trains with `options` over `group`; when survivors go on
// (env.survivors_go_on) and a rank is lost, or the launcher takes a
// replacement in, goes on in the launcher's next membership from the
// agreed state (trainer/live_membership.h), as often as that happens. A
// replacement comes in `joined`, with the state it received in `from`.
int TrainGoingOnAfterLosses(const LoadedConfig& loaded, const DistributedEnv& env,
                            ProcessGroupHandle group, TrainingRunOptions options,
                            const std::string& out, std::optional<GroupAfterLoss> joined,
                            LiveHandover from) {
  const TrainingConfig& config = loaded.config;
  const std::chrono::seconds timeout(config.run().collective_timeout_seconds());
  // A lost rank's membership comes within the heartbeat's timeout of the
  // loss (the launcher kills a frozen rank then) and a margin.
  const std::chrono::milliseconds wait =
      std::chrono::milliseconds(10 * env.heartbeat_interval_ms) + std::chrono::seconds(5);
  options.process_group = &group;
  LiveHandover into;
  std::optional<LoadedConfig> resized;
  int membership = 0;
  if (joined.has_value()) {
    if (absl::Status s =
            GoOnInGroup(loaded, *joined, from, &membership, &group, &resized, &options);
        !s.ok()) {
      return Fail(s);
    }
  }
  while (true) {
    into = LiveHandover();
    if (env.survivors_go_on) {
      options.live = &into;
      WatchForMembership(membership + 1);
    }
    absl::StatusOr<TrainingOutcome> outcome = RunTraining(options);
    if (outcome.ok() && !outcome->membership_changed) return ExitCodeOf(*outcome, out);
    if (!outcome.ok() && (!env.survivors_go_on || !into.filled)) return Fail(outcome.status());
    LOG(WARNING) << "launch rank " << env.rank << ": "
                 << (outcome.ok() ? std::string("a new membership takes a replacement in")
                                  : std::string(outcome.status().message()))
                 << "; waiting for the launcher's next membership";
    absl::StatusOr<std::optional<GroupAfterLoss>> next =
        GoOnWithoutLostRanks(env, membership, &group, &into, timeout, wait);
    if (!next.ok()) return Fail(next.status());
    if (!next->has_value()) {  // no rank was lost, or no membership came
      return Fail(outcome.ok() ? absl::UnavailableError(absl::StrCat(
                                     "launch rank ", env.rank, ": membership ", membership + 1,
                                     " was seen but did not come"))
                               : outcome.status());
    }
    std::swap(from, into);
    if (absl::Status s =
            GoOnInGroup(loaded, **next, from, &membership, &group, &resized, &options);
        !s.ok()) {
      return Fail(s);
    }
  }
}

int RunRank(const LoadedConfig& loaded, const DistributedEnv& env,
            const std::string& out) {
  const TrainingConfig& config = loaded.config;
  // A one-rank NCCL run is compared too: it proves the NCCL wiring.
  const bool compares = env.world_size > 1 || config.backend() == "nccl";
  const std::string reference_dir = compares ? out + "/reference" : "";
  // This process's checkpoint plan, decided once (config/checkpoint_plan.h).
  const std::optional<CheckpointPlan> checkpoints = PlanCheckpoints(config, out);
  absl::StatusOr<std::optional<PreparedRunFolder>> folder =
      RankRunFolder(loaded, env, out, reference_dir, checkpoints);
  if (!folder.ok()) return Fail(folder.status());
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
  // MPI for backend "mpi" (after the folder: nothing forks after MPI_Init).
  absl::StatusOr<DistributedEnv> joining = PrepareRankTransport(config, env);
  if (!joining.ok()) return Fail(joining.status());
  const std::chrono::seconds timeout(config.run().collective_timeout_seconds());
  // A replacement for a lost rank joins the members from a peer's memory
  // (trainer/live_membership.h); it waits as long as they train.
  std::optional<GroupAfterLoss> replacement;
  LiveHandover received;
  if (env.joins_after_membership >= 0) {
    absl::StatusOr<GroupAfterLoss> joined =
        JoinAsReplacement(env, &received, timeout, std::chrono::hours(24 * 365));
    if (!joined.ok()) return Fail(joined.status());
    replacement = *std::move(joined);
  }
  absl::StatusOr<ProcessGroupHandle> group = ProcessGroupHandle();
  if (!replacement.has_value()) {
    group = ConnectProcessGroup(*joining, timeout, nccl,
                                /*gradients_over_mpi=*/ReducesOverMpi(config));
    if (!group.ok()) return Fail(group.status());
    LOG(INFO) << "rank " << env.rank << "/" << env.world_size << ": joined the "
              << (nccl != nullptr ? "Gloo (CPU) and NCCL (CUDA)" : "Gloo")
              << " process group at " << joining->master_addr << ":" << joining->master_port
              << (MpiStarted() ? "; gradients over MPI" : "");
    absl::StatusOr<bool> finished = AgreeRunFinished(
        *group, env.rank, env.world_size, folder->has_value() && (*folder)->decision.finished);
    if (!finished.ok()) return Fail(finished.status());
    if (*finished) {
      if (env.rank == 0 && folder->has_value()) return ReportFinished((*folder)->decision);
      std::cout << "rank " << env.rank << ": the run in " << out
                << " is finished; nothing to train" << std::endl;
      return 0;
    }
  }
  TrainingRunOptions options;
  if (absl::Status s = FillRunOptions(loaded, checkpoints, &options); !s.ok()) return Fail(s);
  if (folder->has_value()) {
    options.attempt = (*folder)->decision.attempt;
    options.folder = &(*folder)->decision;
  }
  options.rank = env.rank;
  options.local_rank = env.local_rank;
  options.world_size = env.world_size;
  options.process_group = &*group;
  options.artifact_dir = out;
  options.reference_dir = reference_dir;
  if (compares && absl::GetFlag(FLAGS_whole_run_parity)) {
    options.whole_run_references = [&loaded, out](const WholeRunRequest& request) {
      return EnsureWholeRunReferences(loaded, out, request);
    };
  }
  options.preemptible = TakePreemption(config, checkpoints);
  return TrainGoingOnAfterLosses(loaded, env, *std::move(group), options, out,
                                 std::move(replacement), std::move(received));
}

// The config this rank runs: `loaded`, or, when the launcher started
// another number of workers (WORLD_SIZE) than its world_size and the run's
// updates ignore the world size, `loaded` on the launcher's (the elastic
// case: torchrun restarted with another --nproc_per_node), said loudly.
// InvalidArgument naming world_size otherwise.
absl::StatusOr<LoadedConfig> ConfigForLauncher(const LoadedConfig& loaded,
                                               const DistributedEnv& env) {
  const TrainingConfig& config = loaded.config;
  if (env.world_size == config.world_size()) return loaded;
  const std::string& dependence = loaded.plugins.world_size_dependence;
  if (!dependence.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        env.world_size_variable, "=", env.world_size, " but ",
        loaded.locator->Where("world_size"),
        ": world_size is ", config.world_size(), ", and ", dependence,
        ", so the run would train otherwise on ", env.world_size,
        " workers; start ", config.world_size(), " workers, or set world_size (with "
        "checkpoint { allow_world_size_change: true } to take up a run saved by ",
        config.world_size(), ")"));
  }
  absl::StatusOr<LoadedConfig> adopted = WithWorldSize(loaded, env.world_size);
  if (!adopted.ok()) return adopted.status();
  if (env.rank == 0) {
    LOG(WARNING) << env.world_size_variable << "=" << env.world_size << " from the launcher, "
                 << loaded.locator->Where("world_size") << " says " << config.world_size()
                 << ": the run's sampler order, loss weighting and reducer ignore the world "
                    "size, so it runs on "
                 << env.world_size << " workers, global_batch " << config.global_batch()
                 << " split evenly, and trains what it would on " << config.world_size();
  }
  return adopted;
}

// RunRank (on ConfigForLauncher's config), then MPI_Finalize where MPI was
// started and the run did not fail: a failed rank exits without it, and
// mpirun ends the job.
int RunAsRank(const LoadedConfig& config_loaded, const DistributedEnv& env,
              const std::string& out) {
  absl::StatusOr<LoadedConfig> loaded = ConfigForLauncher(config_loaded, env);
  if (!loaded.ok()) return Fail(loaded.status());
  const int code = RunRank(*loaded, env, out);
  if (code != 0 && code != kExitCheckFailed) return code;  // preempted, 4, included
  if (absl::Status s = FinishMpi(); !s.ok()) return Fail(s);
  return code;
}

// The launcher's exit: the workers' cause, whichever rank found it. Bad
// input found by any rank (a config or data error: exit 2) is 2; parity
// that failed (rank 0's 3; under mpirun, mpirun's 3) is 3; anything else 1.
// Ranks the launcher stopped after the first failure do not count.
int LaunchExitCode(const LaunchResult& result, bool under_mpirun) {
  auto exited_with = [&](int rank, int code) {
    const int status = result.wait_status[rank];
    return WIFEXITED(status) && WEXITSTATUS(status) == code;
  };
  for (int rank = 0; rank < static_cast<int>(result.wait_status.size()); ++rank) {
    if (exited_with(rank, kExitBadInput)) return kExitBadInput;
  }
  // Preempted ranks (and none that failed otherwise): 4, run it again.
  if (result.failed_rank < 0) {
    for (int rank = 0; rank < static_cast<int>(result.wait_status.size()); ++rank) {
      if (exited_with(rank, kExitPreempted)) return kExitPreempted;
    }
  }
  if ((result.failed_rank == 0 || under_mpirun) && exited_with(0, kExitCheckFailed)) {
    return kExitCheckFailed;
  }
  return kExitRunFailed;
}

// A change of membership.json, stamped with `attempt` and now.
MembershipChange StampedChange(int attempt) {
  MembershipChange change;
  change.set_attempt(attempt);
  change.set_at(absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone()));
  return change;
}

// membership.json's change for a rank lost.
MembershipChange LossChange(const RankLoss& loss, int attempt) {
  MembershipChange change = StampedChange(attempt);
  change.add_left(loss.rank);
  change.add_why(loss.why);
  change.set_updates_completed(static_cast<int32_t>(loss.updates_completed));
  change.set_detection_seconds(loss.detection_seconds);
  if (loss.membership == 0) {
    change.set_outcome("attempt_ended");
    return change;
  }
  change.set_world_size_after(static_cast<int32_t>(loss.survivors.size()));
  change.set_outcome("survivors_went_on");
  change.set_reforming_seconds(loss.reforming_seconds);
  change.set_updates_redone(loss.updates_redone);
  change.set_went_on_from_update(static_cast<int32_t>(loss.went_on_from_update));
  return change;
}

// membership.json's change for a replacement that joined.
MembershipChange JoinChange(const RankJoin& join, int attempt) {
  MembershipChange change = StampedChange(attempt);
  change.add_joined(join.rank);
  change.set_world_size_after(static_cast<int32_t>(join.members.size()));
  change.set_outcome("replacement_joined");
  change.set_joining_seconds(join.joining_seconds);
  change.set_reforming_seconds(join.reforming_seconds);
  change.set_went_on_from_update(static_cast<int32_t>(join.went_on_from_update));
  change.set_updates_completed(static_cast<int32_t>(join.went_on_from_update));
  return change;
}

// The changes in the order of their memberships (an attempt's end last),
// those of one membership in one change (ranks lost together, replacements
// taken in together), each with the world size before it.
std::vector<MembershipChange> InOrder(std::vector<std::pair<int, MembershipChange>> changes,
                                      int world_size) {
  std::stable_sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) {
    const int left = a.first == 0 ? INT32_MAX : a.first;
    const int right = b.first == 0 ? INT32_MAX : b.first;
    return left < right;
  });
  std::vector<MembershipChange> ordered;
  int previous = -1;
  for (auto& [membership, change] : changes) {
    if (membership > 0 && membership == previous) {
      MembershipChange& together = ordered.back();
      for (int rank : change.left()) together.add_left(rank);
      for (const std::string& why : change.why()) together.add_why(why);
      for (int rank : change.joined()) together.add_joined(rank);
      continue;
    }
    previous = membership;
    change.set_world_size_before(ordered.empty() ? world_size : ordered.back().world_size_after());
    ordered.push_back(std::move(change));
  }
  return ordered;
}

// membership.json: the ranks the attempt lost, those the others went on
// without and the one that ended it, and the replacements that joined. A
// rank that exited with bad input (2) or failed parity (3) gave the run's
// verdict and is no loss. A record that cannot be written is said, and
// the run's own outcome stands.
void RecordLosses(const LoadedConfig& loaded, const std::string& out, int attempt,
                  const LaunchResult& result) {
  std::vector<std::pair<int, MembershipChange>> changes;
  for (const RankLoss& loss : result.losses) {
    if (WIFEXITED(loss.wait_status) && (WEXITSTATUS(loss.wait_status) == kExitBadInput ||
                                        WEXITSTATUS(loss.wait_status) == kExitCheckFailed)) {
      continue;
    }
    changes.emplace_back(loss.membership, LossChange(loss, attempt));
  }
  for (const RankJoin& join : result.joins) {
    changes.emplace_back(join.membership, JoinChange(join, attempt));
  }
  if (changes.empty()) return;
  const absl::Status written =
      AppendMembershipChanges(out, MakeArtifactStamp(loaded.fingerprint, attempt),
                              InOrder(std::move(changes), loaded.config.world_size()));
  if (!written.ok()) LOG(WARNING) << "launcher: " << written.message();
}

// The launcher that started this rank, when it is not this binary's: it,
// not the ranks, decides what a lost rank costs.
std::string OutsideLauncher(const DistributedEnv& env) {
  if (env.under_mpirun) return "mpirun, which ends the job when a rank dies";
  if (std::getenv("TORCHELASTIC_RUN_ID") != nullptr) {
    return "torchrun, whose agent stops and restarts every worker when one fails (the "
           "restarted ranks resume from the last generation)";
  }
  if (env.world_size_variable == "SLURM_NTASKS") {
    return "srun, whose step ends when a task dies under --kill-on-bad-exit (or waits for "
           "the others without it; rerun the step to resume from the last generation)";
  }
  return "a launcher other than this binary's, which hosts no store the survivors can "
         "re-form over";
}

// A rank started by another launcher: rank 0 says at its start that a lost
// rank ends the attempt (run.survivors_go_on needs this binary's launcher).
void SayWhereSurvivorsCannotGoOn(const TrainingConfig& config, const DistributedEnv& env) {
  if (env.launcher_hosts_store || env.rank != 0 || env.world_size < 2 ||
      !config.run().survivors_go_on()) {
    return;
  }
  LOG(WARNING) << "run.survivors_go_on does not apply: this rank was started by "
               << OutsideLauncher(env)
               << "; a lost rank ends the attempt, and the same command resumes from the last "
                  "generation";
}

// run.survivors_go_on, where it can apply (said at start where it cannot):
// under this launcher (not mpirun), over Gloo, with updates that ignore the
// world size.
bool SurvivorsGoOn(const LoadedConfig& loaded, bool under_mpirun) {
  const TrainingConfig& config = loaded.config;
  if (!config.run().survivors_go_on()) return false;
  std::string why_not;
  if (under_mpirun) {
    why_not = "run.launcher is mpirun, which ends the job when a rank dies";
  } else if (config.backend() != "gloo") {
    why_not = absl::StrCat("backend ", config.backend(), ": a new group is formed over Gloo only");
  } else if (!loaded.plugins.world_size_dependence.empty()) {
    why_not = loaded.plugins.world_size_dependence;
  }
  if (why_not.empty()) {
    LOG(INFO) << "launcher: a rank lost to a signal or frozen leaves, and the others go on "
                 "at the smaller world size (run.survivors_go_on)";
    return true;
  }
  LOG(WARNING) << "launcher: run.survivors_go_on does not apply (" << why_not
               << "): a lost rank ends the attempt, and the same command resumes from the "
                  "last generation";
  return false;
}

int Launch(const LoadedConfig& loaded, const std::string& out,
           const std::optional<CheckpointPlan>& checkpoints, int argc, char** argv) {
  const TrainingConfig& config = loaded.config;
  const std::string reference_dir = out + "/reference";
  absl::StatusOr<PreparedRunFolder> folder =
      PrepareRunFolder(FolderRequest(loaded, out, out, reference_dir, checkpoints));
  if (!folder.ok()) return Fail(folder.status());
  if (folder->decision.finished) return ReportFinished(folder->decision);
  // The ranks started below are this run and its attempt: they do not lock
  // or decide again.
  setenv(kRunLockHeldEnv, absl::StrCat(folder->locks[0].path(), ":", getpid()).c_str(), 1);
  absl::StatusOr<int> port = PickFreePort();
  if (!port.ok()) return Fail(port.status());
  LaunchOptions options;
  options.world_size = config.world_size();
  options.master_addr = config.run().master_addr();
  options.master_port = *port;
  options.under_mpirun = config.run().launcher() == "mpirun";
  options.parent_pid_variables = {kRunLockHeldEnv};
  options.forward_preemption_signals = true;
  // mpirun's workers find the store as mpirun's conventions say (rank 0).
  options.host_store = !options.under_mpirun;
  options.heartbeat_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(config.run().heartbeat_timeout_seconds() * 1000));
  options.survivors_go_on = SurvivorsGoOn(loaded, options.under_mpirun);
  options.replace_lost_ranks = options.survivors_go_on && config.run().replace_lost_ranks();
  options.max_replacements = config.run().max_replacements();
  for (int i = 1; i < argc; ++i) {
    if (!IsOverwriteFlag(argv[i])) options.args.push_back(argv[i]);
  }
  options.args.push_back("--out=" + out);
  LOG(INFO) << "launching " << options.world_size << " workers"
            << (options.under_mpirun ? " under mpirun" : "") << " (MASTER_ADDR="
            << options.master_addr << " MASTER_PORT=" << options.master_port << ")";
  LaunchResult result;
  absl::Status status = LaunchLocalWorkers(options, &result);
  RecordLosses(loaded, out, folder->decision.attempt, result);
  if (status.ok()) {
    std::cout << "results in " << out << "/ (reference in " << reference_dir
              << "/)" << std::endl;
    return 0;
  }
  std::cerr << "error: " << status.message() << std::endl;
  return LaunchExitCode(result, options.under_mpirun);
}

// Where a one-worker run of `loaded` trains: OUT/reference (it is the
// reference of OUT's multi-worker runs), or OUT itself when OUT holds a
// run (only a multi-worker run writes OUT/run_state.json) that this one
// goes on with on one worker: its updates ignore the world size
// (RunPluginSelections::world_size_dependence), and the folder's rules
// then check that it is this config's run.
std::string OneWorkerRunDir(const LoadedConfig& loaded, const std::string& out) {
  if (!loaded.plugins.world_size_dependence.empty()) return out + "/reference";
  absl::StatusOr<RunFolderState> state = ReadRunFolderState(out);
  if (state.ok() && !state->config_fingerprint().empty()) {
    LOG(INFO) << out << " holds a run written by " << state->config().world_size()
              << " worker(s): this one-worker run goes on there";
    return out;
  }
  return out + "/reference";
}

int Main(int argc, char** argv, const std::vector<std::string>& sets) {
  ChangeToCallersDirectory();
  if (absl::Status s = CheckRegistries(); !s.ok()) return Fail(s);
  // Until a mode takes them: a launcher passes them on, a trainer with
  // checkpoints watches them (TakePreemption), anything else lets them act.
  if (absl::GetFlag(FLAGS_list_plugins) || absl::GetFlag(FLAGS_validate_only)) {
    UnblockPreemptionSignals();
  }
  if (absl::GetFlag(FLAGS_list_plugins)) {
    absl::StatusOr<std::string> listing = ListPlugins(absl::GetFlag(FLAGS_config));
    if (!listing.ok()) return Fail(listing.status());
    std::cout << *listing;
    return 0;
  }
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (config_path.empty()) {
    return Fail(absl::InvalidArgumentError("--config is required"));
  }
  absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(sets);
  if (!overrides.ok()) return Fail(overrides.status());
  absl::StatusOr<LoadedConfig> loaded = LoadTrainingConfig(config_path, *overrides);
  if (!loaded.ok()) return Fail(loaded.status());
  // parity.batch_dependent_layers: a refused model stops before anything
  // trains, its reference included.
  if (absl::Status s = CheckLayerPolicy(*loaded); !s.ok()) return Fail(s);
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
  if (absl::Status s = CheckLauncherFits(*loaded, *env); !s.ok()) return Fail(s);
  if (env->has_value()) {
    SayWhereSurvivorsCannotGoOn(loaded->config, **env);
    return RunAsRank(*loaded, **env, out);
  }
  if (loaded->config.world_size() == 1) {
    // One worker: this run is the reference (with its checkpoints, if
    // any), unless it takes up OUT's multi-worker run on one worker.
    const std::string run_dir = OneWorkerRunDir(*loaded, out);
    const std::optional<CheckpointPlan> checkpoints = PlanCheckpoints(loaded->config, run_dir);
    TrainingRunOptions options;
    if (absl::Status s = FillRunOptions(*loaded, checkpoints, &options); !s.ok()) {
      return Fail(s);
    }
    absl::StatusOr<PreparedRunFolder> folder =
        PrepareRunFolder(FolderRequest(*loaded, out, run_dir, "", checkpoints));
    if (!folder.ok()) return Fail(folder.status());
    if (folder->decision.finished) return ReportFinished(folder->decision);
    options.attempt = folder->decision.attempt;
    options.folder = &folder->decision;
    options.artifact_dir = run_dir;
    options.preemptible = TakePreemption(loaded->config, checkpoints);
    absl::StatusOr<TrainingOutcome> outcome = RunTraining(options);
    if (!outcome.ok()) return Fail(outcome.status());
    if (outcome->preempted) return kExitPreempted;
    std::cout << (run_dir == out ? "results in " : "reference in ") << run_dir << "/"
              << std::endl;
    return 0;
  }
  // The launcher's plan (its workers decide theirs, each once). Bad fault
  // or record flags fail here, before any worker starts.
  const std::optional<CheckpointPlan> checkpoints = PlanCheckpoints(loaded->config, out);
  TrainingRunOptions probe;
  if (absl::Status s = FillRunOptions(*loaded, checkpoints, &probe); !s.ok()) {
    return Fail(s);
  }
  return Launch(*loaded, out, checkpoints, argc, argv);
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  // Before any thread starts, so every thread inherits the mask: a process
  // that trains with checkpoints takes them as preemption, a launcher passes
  // them on, any other unblocks them (runtime/preemption.h).
  receipt_parity::BlockPreemptionSignals();
  absl::SetProgramUsageMessage(
      "Trains the receipt classifier: --config=configs/NAME.pbtxt --out=DIR "
      "[--set FIELD_PATH=VALUE ...] (any field of the config, e.g. --set "
      "optimizer.options.lr=0.1 --set model.options.conv_channels=[8,16]; "
      "config/config_overrides.h)");
  // --set is repeatable and its values may hold commas: taken out before
  // absl parses the rest. A launcher passes the whole command line on, so
  // every rank applies the same overrides.
  absl::StatusOr<std::vector<std::string>> sets =
      receipt_parity::ParseCommandLineTaking("set", argc, argv);
  if (!sets.ok()) return receipt_parity::ReportFailure(sets.status());
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  return receipt_parity::Main(argc, argv, *sets);
}
