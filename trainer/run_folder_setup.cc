#include "trainer/run_folder_setup.h"

#include <exception>
#include <filesystem>
#include <optional>
#include <utility>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "artifacts/artifact_stamp.h"
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

// The config of the one-update reference of `config`.
TrainingConfig OneUpdateReference(const TrainingConfig& config) {
  TrainingConfig reference = ReferenceConfig(config);
  reference.mutable_run()->set_max_updates(1);
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
                                     decision.status().message()));
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
      absl::StatusOr<std::vector<std::string>> removed = RemoveRun(request.reference_dir, false);
      if (!removed.ok()) return removed.status();
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

}  // namespace

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
