#include "trainer/run_folder_setup.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/parity_trajectory.h"
#include "checkpoint/generation_layout.h"
#include "config/checkpoint_plan.h"
#include "io/json_file.h"
#include "logging/glog.h"
#include "collectives/collective_error.h"
#include "runtime/distributed_env.h"
#include "artifacts/run_manifest.pb.h"
#include "trainer/training_run.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

constexpr char kFinishedKey[] = "run_folder/finished";

// A reference folder written before run_state.json existed: its manifest
// names the reference config and it has the first step.
bool LegacyReferenceMatches(const std::string& reference_dir, const TrainingConfig& config) {
  RunManifest manifest;
  ArtifactStamp stamp;
  if (fs::exists(reference_dir + "/" + kRunStateFile) ||
      !fs::exists(reference_dir + "/first_step.json") ||
      !ReadArtifact(reference_dir + "/run_manifest.json", &manifest, &stamp).ok()) {
    return false;
  }
  return stamp.config_fingerprint() == ConfigFingerprint(ReferenceConfig(config));
}

// What a refused reference folder's error adds: how a user makes the
// reference of `config` there by hand (docs/data.md's two-step flow), or
// lets the run make it.
std::string ReferenceByHand(const TrainingConfig& config, const std::string& reference_dir) {
  std::string overrides;
  for (const std::string& set : ReferenceOverrides(config)) {
    absl::StrAppend(&overrides, " --set ", set);
  }
  return absl::StrCat(". A reference is this config on one worker, one micro-batch an update: "
                      "train it there with `train --config=<this config>",
                      overrides, " --out=<this --out>` (with --overwrite, which replaces the "
                      "run it holds), or remove ", reference_dir, " and this run makes it");
}

// The config of the one-update reference of `config`: its first update is
// its only checked one.
TrainingConfig OneUpdateReference(const TrainingConfig& config) {
  TrainingConfig reference = ReferenceConfig(config);
  reference.mutable_run()->set_max_updates(1);
  reference.mutable_parity()->clear_check_updates();
  return reference;
}

// `reference_dir`'s state for the one-update reference of `config`: it is
// usable as it is when `finished` (a reference of this config written
// before run_state.json existed counts as finished). Errors: it holds a run
// of another config.
absl::StatusOr<RunFolderDecision> DecideReference(const std::string& reference_dir,
                                                  const TrainingConfig& config,
                                                  const RunFolderRules& rules) {
  RunFolderRules reference_rules = rules;
  reference_rules.nothing_to_resume = "a reference saves no checkpoints";
  absl::StatusOr<RunFolderDecision> decision =
      DecideRunFolder(reference_dir, OneUpdateReference(config), reference_rules);
  if (!decision.ok()) {
    return absl::Status(decision.status().code(),
                        absl::StrCat("this run's one-worker reference cannot be made: ",
                                     decision.status().message(),
                                     ReferenceByHand(config, reference_dir)));
  }
  if (!decision->finished && LegacyReferenceMatches(reference_dir, config)) {
    decision->finished = true;
  }
  return decision;
}

// Trains the one-update reference as `decision` (DecideReference's) says.
absl::Status MakeReference(const LoadedConfig& loaded, const std::string& reference_dir,
                           const RunFolderDecision& decision) {
  const LoadedConfig reference =
      WithTrainingConfig(loaded, OneUpdateReference(loaded.config));
  LOG(INFO) << "making the one-worker reference (one update) in " << reference_dir;
  TrainingRunOptions options;
  options.loaded = &reference;
  options.artifact_dir = reference_dir;
  options.attempt = decision.attempt;
  options.folder = &decision;
  options.purpose =
      "one-update reference for the parity check of the multi-worker run in the "
      "folder above: it trained only the first update, so its validation and "
      "losses are not a trained model's";
  return RunTraining(options).status();
}

absl::Status LockAll(const std::vector<std::string>& dirs,
                     std::vector<RunFolderLock>* locks) {
  for (const std::string& dir : dirs) {
    absl::StatusOr<RunFolderLock> lock = RunFolderLock::Acquire(dir);
    if (!lock.ok()) return lock.status();
    LOG(INFO) << "run folder " << dir << " locked (" << lock->holder() << ")";
    locks->push_back(*std::move(lock));
  }
  return absl::OkStatus();
}

absl::Status Overwrite(const RunFolderRequest& request) {
  const TrainingConfig& config = request.loaded->config;
  bool keep_reference = false;
  if (!request.reference_dir.empty()) {
    absl::StatusOr<RunFolderDecision> reference =
        DecideReference(request.reference_dir, config, request.rules);
    keep_reference = reference.ok() && reference->finished;
    if (!keep_reference) {
      for (const std::string& dir : {request.reference_dir, DriftReferenceDir(request.out)}) {
        absl::StatusOr<std::vector<std::string>> removed = RemoveRun(dir, false);
        if (!removed.ok()) return removed.status();
      }
    }
  }
  absl::StatusOr<std::vector<std::string>> removed =
      RemoveRun(request.run_dir, /*keep_reference=*/true);
  if (!removed.ok()) return removed.status();
  LOG(WARNING) << "--overwrite: removed the run in " << request.run_dir << " ("
               << (removed->empty() ? "nothing there" : absl::StrJoin(*removed, ", ")) << ")"
               << (keep_reference ? "; kept its reference, which matches this config" : "");
  return absl::OkStatus();
}

void LogDecision(const RunFolderDecision& decision) {
  if (decision.start == AttemptStart::kFresh || decision.finished) {
    LOG(INFO) << decision.description;
  } else {
    LOG(WARNING) << decision.description;
  }
}

// A multi-worker run that saves no checkpoints: say at start what a restart
// would do.
void WarnIfARestartStartsOver(const TrainingConfig& config,
                              const std::optional<CheckpointPlan>& checkpoints) {
  if (config.world_size() <= 1 || checkpoints.has_value()) return;
  LOG(WARNING) << "this " << config.world_size()
               << "-worker run saves no checkpoints (no checkpoint section): if a rank "
                  "dies, a restart (torchrun --max_restarts, mpirun, or this command "
                  "again) trains again from update 0; add checkpoint { every_updates: N } "
                  "to resume instead";
}

// The smallest number of micro-batches above 1 that cuts `batch` into
// equal parts (the batch itself when it is prime; 0 for a batch of 1).
int SmallestSplit(int batch) {
  for (int d = 2; d <= batch; ++d) {
    if (batch % d == 0) return d;
  }
  return 0;
}

// The drift twin's config: the reference's with every update's gradient
// summed over `micro_batches` micro-batches, by the effective-batch rule's
// own plugins, so that the twin differs from the reference in its order
// only and never carries a mistake of the run's: a weighting that depends on
// how the update is cut (micro_batch_mean, rank_mean) is global_count, which
// each equals with one micro-batch on one rank; the reducer is
// allreduce_sum (one rank's sum, whatever the run's reducer does); clipping
// is global (the reduced gradient's norm).
TrainingConfig DriftTwinConfig(const TrainingConfig& reference, int micro_batches) {
  TrainingConfig twin = reference;
  twin.set_accumulation_steps(micro_batches);
  const std::string& weighting = twin.loss_weighting().name();
  if (weighting == "micro_batch_mean" || weighting == "rank_mean") {
    twin.mutable_loss_weighting()->Clear();
    twin.mutable_loss_weighting()->set_name("global_count");
  }
  twin.mutable_reducer()->Clear();
  twin.mutable_reducer()->set_name("allreduce_sum");
  if (twin.has_clip_grad_norm()) twin.mutable_clip_grad_norm()->set_scope("global");
  return twin;
}

bool HoldsEveryPoint(const std::string& dir, const std::vector<int64_t>& needed) {
  const std::vector<int64_t> held = RecordedTrajectoryUpdates(dir);
  return std::includes(held.begin(), held.end(), needed.begin(), needed.end());
}

// `dir` holds a finished run of `config` with a trajectory point at every
// update of `needed`, or is made to, training `config` again from update 0
// (as long as the run there was, recording its points too).
// A folder of another config is refused (its error followed by
// `refused_hint`), unless `derived` (the drift twin's folder, which holds
// nothing but what this function made): then it is made again.
absl::Status EnsureTrajectory(const LoadedConfig& loaded, const std::string& dir,
                              TrainingConfig config, const std::vector<int64_t>& needed,
                              const std::string& purpose, bool derived,
                              const std::string& refused_hint = "") {
  RunFolderRules rules;
  rules.nothing_to_resume = "a reference saves no checkpoints";
  absl::StatusOr<RunFolderDecision> held = DecideRunFolder(dir, config, rules);
  if (!held.ok() && derived && held.status().code() == absl::StatusCode::kInvalidArgument) {
    LOG(INFO) << "whole-run parity: " << dir << " held the drift twin of another config ("
              << held.status().message() << "): made again";
    absl::StatusOr<std::vector<std::string>> removed = RemoveRun(dir, /*keep_reference=*/true);
    if (!removed.ok()) return removed.status();
    held = DecideRunFolder(dir, config, rules);
  }
  if (!held.ok()) {
    return absl::Status(held.status().code(),
                        absl::StrCat(held.status().message(), refused_hint));
  }
  if (held->finished && HoldsEveryPoint(dir, needed)) return absl::OkStatus();
  std::set<int64_t> points(needed.begin(), needed.end());
  for (int64_t u : RecordedTrajectoryUpdates(dir)) points.insert(u);
  int64_t length = config.run().max_updates();
  if (held->finished) length = std::max<int64_t>(length, held->finish.updates());
  for (auto it = points.begin(); it != points.end();) {
    it = *it < length ? std::next(it) : points.erase(it);
  }
  config.mutable_run()->set_max_updates(length);
  config.mutable_parity()->clear_check_updates();
  for (int64_t u : points) config.mutable_parity()->add_check_updates(static_cast<int32_t>(u));
  LOG(INFO) << "whole-run parity: training " << dir << " from update 0 through update "
            << length - 1 << " (" << purpose << "), recording updates "
            << absl::StrJoin(points, ", ");
  absl::StatusOr<std::vector<std::string>> removed = RemoveRun(dir, /*keep_reference=*/true);
  if (!removed.ok()) return removed.status();
  absl::StatusOr<RunFolderDecision> fresh = DecideRunFolder(dir, config, rules);
  if (!fresh.ok()) return fresh.status();
  const LoadedConfig changed = WithTrainingConfig(loaded, config);
  TrainingRunOptions options;
  options.loaded = &changed;
  options.artifact_dir = dir;
  options.attempt = fresh->attempt;
  options.folder = &*fresh;
  options.purpose = purpose;
  return RunTraining(options).status();
}

}  // namespace

std::string DriftReferenceDir(const std::string& out) { return out + "/drift_reference"; }

absl::StatusOr<WholeRunReferences> EnsureWholeRunReferences(const LoadedConfig& loaded,
                                                            const std::string& out,
                                                            const WholeRunRequest& request) {
  const TrainingConfig& config = loaded.config;
  WholeRunReferences references;
  references.reference_dir = out + "/reference";
  TrainingConfig reference = ReferenceConfig(config);
  // As far as the last checked update (by default the run's last).
  const int64_t through =
      request.check_updates.empty() ? request.run_length : request.check_updates.back() + 1;
  reference.mutable_run()->set_max_updates(through);
  references.reference_fingerprint = ConfigFingerprint(reference);
  if (absl::Status s = EnsureTrajectory(
          loaded, references.reference_dir, reference, request.check_updates,
          "the one-worker reference of the multi-worker run in the folder above, "
          "trained through the run for its whole-run parity verdict",
          /*derived=*/false, ReferenceByHand(config, references.reference_dir));
      !s.ok()) {
    return s;
  }
  // The ordered mode (reducers/ordered_sum_reducer.h) computes every update
  // as its one-worker reference does, chunk by chunk in one order: bitwise,
  // where the update's global order is the one worker's too (a sampler that
  // deals by the world size, masked_tail's padded tail, puts other slots
  // into a chunk, so the sum differs by rounding: the drift budget judges).
  const bool ordered_bitwise = loaded.plugins.reducer_chunk_slots > 0 &&
                               loaded.plugins.world_size_dependence.empty();
  const bool bitwise =
      (config.world_size() == 1 && config.accumulation_steps() == 1) || ordered_bitwise;
  if (bitwise) return references;
  references.twin_micro_batches = SmallestSplit(config.global_batch());
  if (references.twin_micro_batches == 0) {
    return absl::InvalidArgumentError(
        "whole-run parity: a global batch of 1 has no other reduction order to measure the "
        "drift with");
  }
  references.twin_dir = DriftReferenceDir(out);
  absl::StatusOr<RunFolderLock> lock = RunFolderLock::Acquire(references.twin_dir);
  if (!lock.ok()) return lock.status();
  const TrainingConfig twin = DriftTwinConfig(reference, references.twin_micro_batches);
  references.twin_fingerprint = ConfigFingerprint(twin);
  if (absl::Status s = EnsureTrajectory(
          loaded, references.twin_dir, twin, request.check_updates,
          absl::StrCat("the drift twin of the reference in the folder above: the same run "
                       "with every update's gradient summed over ",
                       references.twin_micro_batches,
                       " micro-batches, measuring how one reduction order's rounding grows "
                       "(parity.json whole_run)"),
          /*derived=*/true);
      !s.ok()) {
    return s;
  }
  return references;
}

std::string NothingToResume(const std::optional<CheckpointPlan>& checkpoints) {
  if (!checkpoints.has_value()) return "this config saves no checkpoints (no checkpoint section)";
  absl::StatusOr<std::vector<GenerationFolder>> folders =
      ListGenerationFolders(checkpoints->folder);
  if (folders.ok()) {
    for (const GenerationFolder& folder : *folders) {
      if (folder.has_manifest) return "";
    }
  }
  return absl::StrCat("its checkpoint folder ", checkpoints->folder,
                      " holds no advertised generation");
}

absl::StatusOr<PreparedRunFolder> PrepareRunFolder(const RunFolderRequest& request) {
  const TrainingConfig& config = request.loaded->config;
  PreparedRunFolder prepared;
  std::vector<std::string> lock_dirs = {request.out};
  if (request.run_dir != request.out) lock_dirs.push_back(request.run_dir);
  if (!request.reference_dir.empty()) lock_dirs.push_back(request.reference_dir);
  if (absl::Status s = LockAll(lock_dirs, &prepared.locks); !s.ok()) return s;
  if (request.overwrite && ElasticRestartCount() > 0) {
    LOG(WARNING) << "--overwrite ignored: this is torchrun restart "
                 << ElasticRestartCount()
                 << "; it continues the run its first attempt started";
  } else if (request.overwrite) {
    if (absl::Status s = Overwrite(request); !s.ok()) return s;
  }
  if (absl::Status s = RefuseLinksLeaving(request.out); !s.ok()) return s;
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(request.run_dir, config, request.rules);
  if (!decision.ok()) return decision.status();
  prepared.decision = *std::move(decision);
  LogDecision(prepared.decision);
  if (prepared.decision.finished) return prepared;
  WarnIfARestartStartsOver(config, request.checkpoints);
  if (!request.reference_dir.empty()) {
    absl::StatusOr<RunFolderDecision> reference =
        DecideReference(request.reference_dir, config, request.rules);
    if (!reference.ok()) return reference.status();
    if (!reference->finished) {
      if (absl::Status s = MakeReference(*request.loaded, request.reference_dir, *reference);
          !s.ok()) {
        return s;
      }
    }
  }
  return prepared;
}

PreparedRunFolder::~PreparedRunFolder() {
  while (!locks.empty()) locks.pop_back();  // the innermost folder first
}

absl::StatusOr<bool> AgreeRunFinished(const ProcessGroupHandle& group, int rank,
                                      int world_size, bool finished) {
  try {
    if (rank == 0) {
      group.store->set(kFinishedKey, std::vector<uint8_t>{finished ? uint8_t{1} : uint8_t{0}});
      if (!finished) return false;
      std::vector<std::string> seen;
      for (int r = 1; r < world_size; ++r) seen.push_back(absl::StrCat(kFinishedKey, "/seen/", r));
      group.store->wait(seen);
      return true;
    }
    const std::vector<uint8_t> value = group.store->get(kFinishedKey);
    const bool is_finished = !value.empty() && value[0] == 1;
    if (is_finished) {
      group.store->set(absl::StrCat(kFinishedKey, "/seen/", rank), std::vector<uint8_t>{1});
    }
    return is_finished;
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(
        e, absl::StrCat("rank ", rank, ": agreeing whether the run is finished"));
  }
}

}  // namespace receipt_parity
