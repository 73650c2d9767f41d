#include "artifacts/run_folder.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "io/json_file.h"
#include "io/untrusted_file.h"
#include "runtime/distributed_env.h"
#include "config/config_loader.h"
#include "artifacts/run_manifest.pb.h"
#include "artifacts/tensorboard_curves.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// The JSON files a run writes into its folder, besides update-K.json.
const std::set<std::string>& ArtifactFiles() {
  static const auto* names = new std::set<std::string>{
      "run_manifest.json", "run_summary.json", "validation.json",
      "sampler_audit.json", "parity.json",      "first_step.json",
      "resume.json",        "world_size_change.json", kEveryUpdateRecordFile};
  return *names;
}

// "update-12.json".
bool IsUpdateRecord(const std::string& name) {
  absl::string_view rest = name;
  int64_t k = 0;
  return absl::ConsumePrefix(&rest, "update-") && absl::ConsumeSuffix(&rest, ".json") &&
         absl::SimpleAtoi(rest, &k);
}

// trajectory/ (artifacts/parity_trajectory.h kTrajectoryFolder): the
// parameters after each checked update.
constexpr char kTrajectory[] = "trajectory";

bool IsArtifact(const std::string& name) {
  return ArtifactFiles().count(name) > 0 || IsUpdateRecord(name) || name == kTrajectory ||
         name == kTensorBoardFolder;
}

// Whether `name`, an entry of a run folder, is one a run writes (or its
// lock): what --overwrite removes and what a run reads; every other entry
// is the user's.
bool IsRunEntry(const std::string& name) {
  return IsArtifact(name) || name == kRunStateFile || name == kFinishRecordFile ||
         name == "membership.json" || name == "checkpoints" || absl::StartsWith(name, "corrupt-gen-") ||
         name == "reference" || name == "drift_reference";
}

std::vector<std::string> EntryNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Removes every entry of DIR that `remove` selects (a folder with all it
// holds); returns their names. Internal "<failure> DIR/NAME: why" on the
// first that cannot be removed.
absl::StatusOr<std::vector<std::string>> RemoveEntries(
    const std::string& dir, absl::string_view failure,
    const std::function<bool(const std::string&)>& remove) {
  std::vector<std::string> removed;
  for (const std::string& name : EntryNames(dir)) {
    if (!remove(name)) continue;
    std::error_code ec;
    fs::remove_all(fs::path(dir) / name, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat(failure, " ", dir, "/", name, ": ", ec.message()));
    }
    removed.push_back(name);
  }
  return removed;
}

// Whether a run wrote anything in DIR beyond run_state.json: an artifact,
// or anything under checkpoints/.
bool HoldsRunOutput(const std::string& dir) {
  for (const std::string& name : EntryNames(dir)) {
    if (IsArtifact(name) || name == kFinishRecordFile) return true;
  }
  return !EntryNames(dir + "/checkpoints").empty();
}

// "field: old -> new" for every field where `a` and `b` differ; empty when
// they are equal.
std::vector<std::string> FieldDifferences(const TrainingConfig& a, const TrainingConfig& b) {
  std::string report;
  {
    google::protobuf::io::StringOutputStream stream(&report);
    google::protobuf::util::MessageDifferencer::StreamReporter reporter(&stream);
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesTo(&reporter);
    if (differ.Compare(a, b)) return {};
  }
  std::vector<std::string> items;
  for (absl::string_view line : absl::StrSplit(report, '\n', absl::SkipEmpty())) {
    items.emplace_back(line);
  }
  return items;
}

// Whether `config` may take up a run written by another number of
// workers: checkpoint.allow_world_size_change says so, or the run's
// updates do not depend on the world size (rules.world_size_dependence).
bool WorldSizeMayChange(const TrainingConfig& config, const RunFolderRules& rules) {
  return config.checkpoint().allow_world_size_change() || rules.world_size_dependence.empty();
}

// Both configs as the run folder compares them: fingerprinted, without
// what checkpoint.allow_* (or a world-size-independent run) allows to
// differ, and without the recipe when `without_recipe`. Across world sizes
// the split and the micro-batches may change too (one update's gradient
// does not depend on them, config/config_fingerprint.h ReferenceConfig);
// the global batch may not.
std::pair<TrainingConfig, TrainingConfig> ComparedConfigs(const TrainingConfig& saved,
                                                          const TrainingConfig& config,
                                                          const RunFolderRules& rules,
                                                          bool without_recipe) {
  TrainingConfig a = saved;
  TrainingConfig b = FingerprintedConfig(config);
  if (WorldSizeMayChange(config, rules)) {
    const bool changed = a.world_size() != b.world_size();
    for (TrainingConfig* c : {&a, &b}) {
      c->clear_world_size();
      c->clear_local_batch_sizes();
      if (changed) c->clear_accumulation_steps();
    }
  }
  if (config.checkpoint().allow_data_change()) {
    a.clear_data();
    b.clear_data();
  }
  if (without_recipe) {
    a = RecipeFreeConfig(a);
    b = RecipeFreeConfig(b);
  }
  return {std::move(a), std::move(b)};
}

// What differs between the folder's config and this one, as
// "field: old -> new" items; empty when they train the same model, or when
// every difference is one that checkpoint.allow_*, a world-size-independent
// run (or, with `without_recipe`, --allow_recipe_change) allows.
std::vector<std::string> ConfigDifferences(const TrainingConfig& saved,
                                           const TrainingConfig& config,
                                           const RunFolderRules& rules,
                                           bool without_recipe) {
  auto [a, b] = ComparedConfigs(saved, config, rules, without_recipe);
  return FieldDifferences(a, b);
}

// What checkpoint.allow_* or --allow_recipe_change would let resume, and
// what nothing does, for the refusal's message.
std::string AllowHints(const TrainingConfig& saved, const TrainingConfig& config,
                       const RunFolderRules& rules) {
  std::string hints;
  if (saved.world_size() != config.world_size() && !WorldSizeMayChange(config, rules)) {
    absl::StrAppend(&hints, ". The run there was written by ", saved.world_size(),
                    " ranks; this run has ", config.world_size(), ", and ",
                    rules.world_size_dependence,
                    ": set checkpoint { allow_world_size_change: true } to resume it "
                    "with ", config.world_size(),
                    " anyway (the rest of its epoch then trains other examples, said in "
                    "world_size_change.json), or train it with sampler { name: "
                    "\"global_batches\" }, whose updates do not depend on the world size");
  }
  if (saved.global_batch() != config.global_batch()) {
    absl::StrAppend(&hints, ". A checkpoint's cursor counts updates of global_batch slots, "
                            "so with global_batch ", config.global_batch(),
                            " it would not mean the same position as with ",
                            saved.global_batch(), ": nothing allows that change");
  }
  if (!google::protobuf::util::MessageDifferencer::Equals(saved.data(),
                                                          FingerprintedConfig(config).data()) &&
      !config.checkpoint().allow_data_change()) {
    absl::StrAppend(&hints, ". Its data settings differ: set checkpoint "
                            "{ allow_data_change: true } to resume it on these");
  }
  if (ConfigDifferences(saved, config, rules, /*without_recipe=*/true).empty()) {
    absl::StrAppend(&hints, ". Only its recipe differs (the optimizer's settings, "
                            "lr_schedule, clip_grad_norm): pass --allow_recipe_change to "
                            "continue that run with this recipe as a new attempt");
  }
  return hints;
}

absl::Status AnotherConfig(const std::string& dir, const std::string& file,
                           const std::string& what_differs) {
  return absl::InvalidArgumentError(absl::StrCat(
      dir, " holds a run of another config (", dir, "/", file, "): ", what_differs,
      ". Use --overwrite to replace that run, or another --out"));
}

// Whether a finished run already reached what `config` asks for.
bool FinishCovers(const FinishRecord& finish, const TrainingConfig& config) {
  if (finish.stopped_by() == "epochs") return true;
  // A run its failed first update stopped (parity.stop_on_failure) would
  // stop there again; without stop_on_failure it goes on.
  if (finish.stopped_by() == "parity_failed") return config.parity().stop_on_failure();
  const int64_t asked = config.run().max_updates();
  return asked > 0 && asked <= finish.updates();
}

// A folder written before run_state.json existed: its run_manifest.json
// says which config it holds, when it has one.
absl::Status CheckLegacyFolder(const std::string& dir, const TrainingConfig& config) {
  RunManifest manifest;
  ArtifactStamp stamp;
  if (!ReadArtifact(dir + "/run_manifest.json", &manifest, &stamp).ok()) {
    return absl::OkStatus();
  }
  const std::string fingerprint = ConfigFingerprint(config);
  const bool allowed = config.checkpoint().allow_world_size_change() ||
                       config.checkpoint().allow_data_change();
  if (stamp.config_fingerprint() == fingerprint || allowed) return absl::OkStatus();
  return AnotherConfig(dir, "run_manifest.json",
                       absl::StrCat("config fingerprint ", stamp.config_fingerprint(),
                                    " there, ", fingerprint, " here"));
}

absl::StatusOr<RunFolderState> ReadState(const std::string& dir) {
  RunFolderState state;
  const std::string path = dir + "/" + kRunStateFile;
  if (!fs::exists(path)) return state;
  if (absl::Status s = ReadJsonFile(path, &state); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the run folder's state is unreadable: ", s.message(),
        "; move the folder aside or use --overwrite"));
  }
  return state;
}

std::string Now() {
  return absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
}

std::string HostName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

// The decision's note when the folder's run was written by another number
// of workers, and what that changes.
std::string WorldSizeChangeNote(const TrainingConfig& saved, const TrainingConfig& config,
                                const RunFolderRules& rules) {
  return absl::StrCat(
      "; its last attempt ran on ", saved.world_size(), " workers, this one on ",
      config.world_size(), ": ",
      rules.world_size_dependence.empty()
          ? "the run's sampler order, loss weighting and reducer ignore the world size, "
            "so it continues as if nothing changed (resume.json: world_size_change_rule "
            "\"world_size_independent\")"
          : absl::StrCat("checkpoint.allow_world_size_change, and ",
                         rules.world_size_dependence,
                         ": the rest of the epoch trains other examples "
                         "(world_size_change.json says which)"));
}

// The decision for a folder that holds a run of this config (or one that
// checkpoint.allow_* lets this config continue).
// An unfinished run (or a finished one asked for more) with nothing to
// resume from: it trains again from update 0, and says so.
RunFolderDecision StartOver(const std::string& dir, int last_attempt, bool finished,
                            const std::string& nothing_to_resume) {
  RunFolderDecision decision;
  decision.attempt = last_attempt + 1;
  decision.start = AttemptStart::kStartOver;
  decision.description = absl::StrCat(
      dir, " holds ", finished ? "a finished" : "an unfinished", " run of this config (attempt ",
      last_attempt, ") and nothing to resume from (", nothing_to_resume,
      "): STARTING it again from update 0 as attempt ", decision.attempt);
  return decision;
}

absl::StatusOr<RunFolderDecision> DecideHeldRun(const std::string& dir,
                                                const TrainingConfig& config,
                                                int last_attempt,
                                                const RunFolderRules& rules) {
  RunFolderDecision decision;
  decision.attempt = last_attempt + 1;
  const std::string finish_path = dir + "/" + kFinishRecordFile;
  if (!fs::exists(finish_path)) {
    if (!rules.nothing_to_resume.empty()) {
      return StartOver(dir, last_attempt, /*finished=*/false, rules.nothing_to_resume);
    }
    decision.start = AttemptStart::kResume;
    decision.description = absl::StrCat(
        dir, " holds an unfinished run of this config (attempt ", last_attempt,
        "): RESUMING it as attempt ", decision.attempt,
        " from its newest checkpoint generation that verifies");
    return decision;
  }
  ArtifactStamp finish_stamp;
  if (absl::Status s = ReadArtifact(finish_path, &decision.finish, &finish_stamp); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the run's finish record is unreadable: ", s.message(),
        "; move the folder aside or use --overwrite"));
  }
  if (FinishCovers(decision.finish, config)) {
    decision.finished = true;
    decision.attempt = finish_stamp.attempt();
    decision.description = absl::StrCat(
        dir, ": this run is finished (", decision.finish.updates(), " updates, stopped by ",
        decision.finish.stopped_by(), ", attempt ", finish_stamp.attempt(),
        "); nothing to train, nothing changed. Its results are in ", dir,
        "/ (see finished.json). --overwrite trains it again; a larger "
        "run.max_updates continues it");
    return decision;
  }
  if (!rules.nothing_to_resume.empty()) {
    return StartOver(dir, last_attempt, /*finished=*/true, rules.nothing_to_resume);
  }
  decision.start = AttemptStart::kContinue;
  decision.description = absl::StrCat(
      dir, " holds this config's run, finished at update ", decision.finish.updates(),
      "; run.max_updates asks for more: CONTINUING it as attempt ", decision.attempt,
      " from its newest checkpoint generation that verifies");
  return decision;
}

}  // namespace

absl::Status RefuseLinksLeaving(const std::string& out) {
  std::vector<std::string> folders = {out};
  for (const char* inner : {"reference", "drift_reference"}) {
    folders.push_back(absl::StrCat(out, "/", inner));
  }
  // Every entry of a run's own subfolders is the run's; in a run folder,
  // only those a run writes: the user's own entries (a link to a plot kept
  // elsewhere) are neither read nor removed, so they never refuse a run.
  const size_t run_folders = folders.size();
  for (size_t i = 0; i < run_folders; ++i) {
    folders.push_back(absl::StrCat(folders[i], "/trajectory"));
    folders.push_back(absl::StrCat(folders[i], "/", kTensorBoardFolder));
  }
  for (size_t f = 0; f < folders.size(); ++f) {
    const std::string& folder = folders[f];
    for (const std::string& name : EntryNames(folder)) {
      if (f < run_folders && !IsRunEntry(name)) continue;
      const std::string path = absl::StrCat(folder, "/", name);
      std::error_code ec;
      if (!fs::is_symlink(fs::symlink_status(path, ec)) || ResolvesInside(path, out)) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          path, " is a link to ", fs::weakly_canonical(path, ec).string(),
          ", outside the run folder ", out,
          ": a run reads and removes only what lies in its folder; put a copy there instead "
          "of the link, use another --out, or --overwrite (which removes the link, never "
          "what it points to)"));
    }
  }
  return absl::OkStatus();
}

absl::Status RecordAttemptEnd(const std::string& dir, const std::string& ended, int64_t updates,
                              bool saved) {
  absl::StatusOr<RunFolderState> state = ReadState(dir);
  if (!state.ok()) return state.status();
  if (state->attempts_size() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(dir, "/", kRunStateFile, " has no attempt"));
  }
  AttemptRecord* attempt = state->mutable_attempts(state->attempts_size() - 1);
  attempt->set_ended(ended);
  attempt->set_ended_at_update(static_cast<int32_t>(updates));
  attempt->set_saved_at_end(saved);
  return WriteJsonFile(dir + "/" + kRunStateFile, *state);
}

absl::StatusOr<RunFolderState> ReadRunFolderState(const std::string& dir) {
  return ReadState(dir);
}

absl::string_view AttemptStartName(AttemptStart start) {
  switch (start) {
    case AttemptStart::kFresh:
      return "fresh";
    case AttemptStart::kResume:
      return "resume";
    case AttemptStart::kContinue:
      return "continue";
    case AttemptStart::kStartOver:
      return "start_over";
  }
  return "fresh";
}

absl::StatusOr<RunFolderDecision> DecideRunFolder(const std::string& dir,
                                                  const TrainingConfig& config,
                                                  const RunFolderRules& rules) {
  absl::StatusOr<RunFolderState> state = ReadState(dir);
  if (!state.ok()) return state.status();
  const bool has_state = !state->config_fingerprint().empty();
  const std::vector<std::string> differences =
      has_state ? ConfigDifferences(state->config(), config, rules, rules.allow_recipe_change)
                : std::vector<std::string>{};
  if (!HoldsRunOutput(dir)) {
    // Nothing a run wrote: a fresh run, numbered after earlier attempts of
    // this config that ended before writing anything.
    RunFolderDecision decision;
    decision.attempt = has_state && differences.empty() ? state->attempt() + 1 : 1;
    decision.description = absl::StrCat("fresh run in ", dir, " (attempt ",
                                        decision.attempt, ")");
    return decision;
  }
  if (!differences.empty()) {
    return AnotherConfig(dir, kRunStateFile,
                         absl::StrCat(absl::StrJoin(differences, "; "),
                                      AllowHints(state->config(), config, rules)));
  }
  if (!has_state) {
    if (absl::Status s = CheckLegacyFolder(dir, config); !s.ok()) return s;
  }
  absl::StatusOr<RunFolderDecision> decision =
      DecideHeldRun(dir, config, has_state ? state->attempt() : 1, rules);
  if (decision.ok() && has_state && !decision->finished &&
      state->config().world_size() != config.world_size()) {
    absl::StrAppend(&decision->description, WorldSizeChangeNote(state->config(), config, rules));
  }
  if (!decision.ok() || !has_state || !rules.allow_recipe_change) return decision;
  decision->recipe_changes =
      ConfigDifferences(state->config(), config, rules, /*without_recipe=*/false);
  if (!decision->recipe_changes.empty()) {
    absl::StrAppend(&decision->description, "; --allow_recipe_change: ",
                    decision->finished ? "the run is finished, so nothing trains with "
                                         "the new recipe: "
                                       : "with the new recipe: ",
                    absl::StrJoin(decision->recipe_changes, "; "));
  }
  return decision;
}

absl::StatusOr<std::vector<std::string>> RemoveRun(const std::string& dir,
                                                   bool keep_reference) {
  return RemoveEntries(dir, "--overwrite: cannot remove", [&](const std::string& name) {
    const bool reference = name == "reference" || name == "drift_reference";
    return IsRunEntry(name) && !(reference && keep_reference);
  });
}

absl::Status BeginAttempt(const std::string& dir, const TrainingConfig& config,
                          const RunFolderDecision& decision) {
  absl::StatusOr<RunFolderState> read = ReadState(dir);
  RunFolderState state = read.ok() ? *std::move(read) : RunFolderState();
  if (decision.start == AttemptStart::kFresh && decision.attempt == 1) state.Clear();
  *state.mutable_config() = FingerprintedConfig(config);
  state.set_config_fingerprint(ConfigFingerprint(config));
  state.set_attempt(decision.attempt);
  AttemptRecord* attempt = state.add_attempts();
  attempt->set_attempt(decision.attempt);
  attempt->set_start(std::string(AttemptStartName(decision.start)));
  attempt->set_started_at(Now());
  attempt->set_host(HostName());
  attempt->set_pid(static_cast<int32_t>(getpid()));
  attempt->set_elastic_restart(ElasticRestartCount());
  attempt->set_world_size(config.world_size());
  attempt->set_config_fingerprint(ConfigFingerprint(config));
  for (const std::string& change : decision.recipe_changes) {
    attempt->add_recipe_changes(change);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (absl::Status s = WriteJsonFile(dir + "/" + kRunStateFile, state); !s.ok()) return s;
  fs::remove(fs::path(dir) / kFinishRecordFile, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot remove ", dir, "/", kFinishRecordFile,
                                            ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> RemoveStaleArtifacts(const std::string& dir,
                                                              bool resumed) {
  return RemoveEntries(dir, "cannot remove the stale", [&](const std::string& name) {
    // A resumed run's curves continue the earlier attempts' event files.
    const bool kept = resumed && (name == "first_step.json" || IsUpdateRecord(name) ||
                                  name == kTrajectory || name == kTensorBoardFolder ||
                                  name == kEveryUpdateRecordFile);
    return (IsArtifact(name) || name == kFinishRecordFile) && !kept;
  });
}

absl::Status WriteFinishRecord(const std::string& dir, const ArtifactStamp& stamp,
                               FinishRecord record) {
  record.clear_artifacts();
  for (const std::string& name : EntryNames(dir)) {
    if (IsArtifact(name)) record.add_artifacts(name);
  }
  record.set_finished_at(Now());
  return WriteArtifact(dir + "/" + kFinishRecordFile, stamp, record);
}

}  // namespace receipt_parity
