#include "checkpointing/run_checkpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/phase_kill.h"
#include "checkpoint/recovery.h"
#include "checkpoint/save_generation.h"
#include "checkpoint/shard_state.h"
#include "logging/glog.h"
#include "model/model_state.h"
#include "parity/tensor_comparison.h"
#include "collectives/collective_error.h"
#include "runtime/process_group.h"
#include "config/config_loader.h"
#include "config/plugin_kinds.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

// Shard confirmations through the c10d store: rank r publishes its
// ShardInfo under ckpt/gen-N/<r>; rank 0 waits for every rank's.
class StoreConfirmations : public ShardConfirmations {
 public:
  StoreConfirmations(c10d::Store& store, int64_t generation, int rank, int world)
      : store_(store), generation_(generation), rank_(rank), world_(world) {}

  absl::StatusOr<std::vector<ShardInfo>> GatherOnRankZero(
      const ShardInfo& mine) override {
    return receipt_parity::GatherOnRankZero(
        store_, absl::StrCat("ckpt/gen-", generation_), rank_, world_, mine);
  }

 private:
  c10d::Store& store_;
  int64_t generation_;
  int rank_;
  int world_;
};

constexpr char kOptimizerPrefix[] = "optimizer/";

// The optimizer's state as checkpoint entries: "optimizer/<name>/<buffer>".
absl::StatusOr<std::map<std::string, at::Tensor>> OptimizerEntries(
    const RunCheckpointContext& c, Classifier& model, torch::optim::Optimizer& optimizer) {
  absl::StatusOr<OptimizerState> state =
      c.optimizer->SaveState(NamedParametersOf(model), optimizer);
  if (!state.ok()) return state.status();
  std::map<std::string, at::Tensor> entries;
  for (auto& [name, tensor] : *state) entries[kOptimizerPrefix + name] = std::move(tensor);
  return entries;
}

// The optimizer's state from the merged checkpoint entries.
absl::Status RestoreOptimizer(const RunCheckpointContext& c, Classifier& model,
                              torch::optim::Optimizer& optimizer,
                              const std::map<std::string, at::Tensor>& entries) {
  OptimizerState state;
  for (const auto& [name, tensor] : entries) {
    if (absl::StartsWith(name, kOptimizerPrefix)) {
      state[name.substr(sizeof(kOptimizerPrefix) - 1)] = tensor;
    }
  }
  absl::Status restored = c.optimizer->RestoreState(NamedParametersOf(model), optimizer, state);
  if (restored.ok()) return restored;
  return absl::Status(restored.code(), absl::StrCat(kOptimizerPrefix, restored.message()));
}

// The live replicated state, by checkpoint name (not copied: CopyShard
// copies what this rank owns).
std::map<std::string, at::Tensor> ReplicatedState(
    Classifier& model, const std::map<std::string, at::Tensor>& optimizer_state) {
  std::map<std::string, at::Tensor> all = optimizer_state;
  all.merge(ModelStateByName(model));
  return all;
}

// One write() and one fsync of `bytes` bytes: what the save is compared to.
double SequentialWriteSeconds(const std::string& root, int64_t bytes) {
  const std::string path = root + "/.sequential-write-baseline";
  std::string buffer(static_cast<size_t>(bytes), '\x5a');
  const Clock::time_point start = Clock::now();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < buffer.size()) {
    ssize_t n = write(fd, buffer.data() + done, buffer.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  fsync(fd);
  close(fd);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  unlink(path.c_str());
  return seconds;
}

std::string WorldIndependentFingerprint(const TrainingConfig& config) {
  return ConfigFingerprint(ReferenceConfig(config));
}

// Rank 0 decides (and cleans up); every rank then reads the same decision.
absl::StatusOr<RecoveryDecision> Decide(const RunCheckpointContext& c,
                                        ResumeRecord* record) {
  RecoveryOptions options;
  options.stop_on_corruption = c.config->checkpoint().stop_on_corruption();
  if (c.rank == 0) {
    absl::StatusOr<RecoveryDecision> decision = FindRestorable(c.plan.folder, options);
    if (!decision.ok()) return decision.status();
    for (const SkippedGeneration& s : decision->skipped) {
      record->add_skipped(s.reason);
      LOG(WARNING) << "checkpoint: passing over " << s.reason;
    }
    for (const std::string& p : decision->partial_folders) record->add_partial_folders(p);
    absl::StatusOr<std::vector<std::string>> cleaned = CleanUpPartialGenerations(c.plan.folder);
    if (!cleaned.ok()) return cleaned.status();
    for (const std::string& p : *cleaned) record->add_cleaned_up(p);
    absl::StatusOr<std::vector<std::string>> set_aside = SetAsideCorruptGenerations(*decision);
    if (!set_aside.ok()) return set_aside.status();
    for (const std::string& s : *set_aside) record->add_set_aside(s);
    absl::StatusOr<int64_t> next = NextGeneration(c.plan.folder);
    if (!next.ok()) return next.status();
    record->set_next_generation(static_cast<int32_t>(*next));
    if (c.store != nullptr) {
      if (absl::Status s = StoreSet(*c.store, "ckpt/resume",
                                    absl::StrCat(decision->generation, "/", *next));
          !s.ok()) {
        return s;
      }
    }
    return decision;
  }
  absl::StatusOr<std::string> published = StoreGet(*c.store, "ckpt/resume");
  if (!published.ok()) return published.status();
  absl::StatusOr<RecoveryDecision> decision = FindRestorable(c.plan.folder, options);
  if (!decision.ok()) return decision.status();
  const std::string mine = absl::StrCat(decision->generation, "/");
  if (published->rfind(mine, 0) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", c.rank, " sees checkpoint generation ", decision->generation,
        " but rank 0 chose ", *published, " (is ", c.plan.folder,
        " one shared folder on every host?)"));
  }
  record->set_next_generation(std::stoi(published->substr(mine.size())));
  return decision;
}

// Torch's CPU generator, as saved by this rank ("rng" of its shard).
absl::Status RestoreRng(const ShardState& mine) {
  auto it = mine.rank_tensors.find("rng");
  if (it == mine.rank_tensors.end()) return absl::OkStatus();
  try {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "checkpoint generator state: LibTorch",
                                 absl::StatusCode::kDataLoss);
  }
  return absl::OkStatus();
}

absl::Status CheckSameData(const RunCheckpointContext& c,
                           const CheckpointManifest& manifest);

// The fingerprint of `config` that `manifest` is compared with, and the
// manifest's, as this run's allowances choose: the whole config's; without
// world size and split when the world size changed (allowed); without the
// recipe when allow_recipe_change.
struct ComparedFingerprints {
  std::string saved;
  std::string here;
  // What the comparison leaves out, for the message: "" or " (beyond ...)".
  std::string beyond;
};

ComparedFingerprints FingerprintsToCompare(const RunCheckpointContext& c,
                                           const CheckpointManifest& manifest) {
  const TrainingConfig& config = *c.config;
  const bool world_changed = manifest.world_size() != c.world_size;
  if (c.allow_recipe_change && world_changed) {
    return {manifest.world_and_recipe_independent_fingerprint(),
            ConfigFingerprint(RecipeFreeConfig(ReferenceConfig(config))),
            " (beyond the world size and the recipe)"};
  }
  if (c.allow_recipe_change) {
    return {manifest.recipe_independent_fingerprint(),
            ConfigFingerprint(RecipeFreeConfig(config)), " (beyond the recipe)"};
  }
  if (world_changed) {
    return {manifest.world_independent_fingerprint(), WorldIndependentFingerprint(config),
            " (beyond the world size)"};
  }
  return {manifest.config_fingerprint(), ConfigFingerprint(config), ""};
}

// FailedPrecondition, naming both sides, unless the generation was written
// by this run's config and model (another world size only if allowed,
// another recipe only if allowed), on the same data (other data only if
// allowed).
absl::Status CheckSameRun(const RunCheckpointContext& c,
                          const CheckpointManifest& manifest) {
  const TrainingConfig& config = *c.config;
  if (manifest.world_size() != c.world_size && !c.world_size_dependence.empty() &&
      !config.checkpoint().allow_world_size_change()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint generation ", manifest.generation(), " was written by ",
        manifest.world_size(), " ranks; this run has ", c.world_size, ", and ",
        c.world_size_dependence, ". Set checkpoint { allow_world_size_change: true } to "
        "resume anyway (the data order of the rest of the epoch changes), or train with "
        "sampler { name: \"global_batches\" }"));
  }
  const bool same = manifest.config_fingerprint() == ConfigFingerprint(config);
  const ComparedFingerprints compared = FingerprintsToCompare(c, manifest);
  if (!same && compared.saved.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint generation ", manifest.generation(), " in ", c.plan.folder,
        " was written by another config and before recipe fingerprints were recorded, "
        "so --allow_recipe_change cannot tell whether only its recipe differs"));
  }
  if (!same && compared.saved != compared.here) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint generation ", manifest.generation(), " in ", c.plan.folder,
        " was written by another config", compared.beyond, ": fingerprint ",
        compared.saved, " != ", compared.here));
  }
  if (manifest.model_revision() != c.model_revision) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint model revision ", manifest.model_revision(), " != ",
        c.model_revision));
  }
  return CheckSameData(c, manifest);
}

// The generation was saved on the receipts this run trains on (a MANIFEST
// without a data hash predates it and is taken as it is).
absl::Status CheckSameData(const RunCheckpointContext& c,
                           const CheckpointManifest& manifest) {
  if (manifest.data_hash().empty() || manifest.data_hash() == c.data_hash ||
      c.config->checkpoint().allow_data_change()) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint generation ", manifest.generation(), " in ", c.plan.folder,
      " was saved while training on other receipts: data hash ",
      manifest.data_hash(), " != ", c.data_hash,
      " (a file of the manifest changed since). Set checkpoint { "
      "allow_data_change: true } to resume on the new data anyway"));
}

// The saving run's slots per rank per update: its MANIFEST's, or, in a
// generation that predates them, the global batch split evenly.
std::vector<int> SavedLocalBatchSizes(const CheckpointManifest& manifest, int global_batch) {
  if (manifest.local_batch_sizes_size() > 0) {
    return {manifest.local_batch_sizes().begin(), manifest.local_batch_sizes().end()};
  }
  const int ranks = std::max(1, manifest.world_size());
  return std::vector<int>(ranks, global_batch / ranks);
}

// Said loudly: the run goes on with another number of workers, and why
// that is allowed.
void LogWorldSizeChange(const RunCheckpointContext& c, const ResumeRecord& record) {
  if (c.world_size_dependence.empty()) {
    LOG(WARNING) << "WORLD SIZE CHANGED " << record.saved_world_size() << " -> "
                 << c.world_size << " at update " << record.update()
                 << ": the run's sampler order, loss weighting and reducer ignore the world "
                    "size, so it goes on as if nothing changed: every update trains the "
                    "receipts it would have (resume.json: world_size_change_rule "
                    "\"world_size_independent\")";
    return;
  }
  LOG(WARNING) << "WORLD SIZE CHANGED " << record.saved_world_size() << " -> " << c.world_size
               << " at update " << record.update()
               << " (checkpoint.allow_world_size_change), and " << c.world_size_dependence
               << ": the rest of the epoch trains other examples (world_size_change.json)";
}

// Every shard of the generation, verified again and parsed, in rank order.
absl::StatusOr<std::vector<ShardState>> ReadShards(const RecoveryDecision& decision,
                                                   ResumeRecord* record) {
  std::vector<ShardState> shards;
  for (const ShardInfo& info : decision.manifest.shards()) {
    absl::StatusOr<std::string> bytes = ReadShardBytes(decision, info.rank());
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<ShardState> shard = DeserializeShardState(*bytes, info.file());
    if (!shard.ok()) return shard.status();
    record->add_verified_shards(absl::StrCat(info.file(), ": ", info.size_bytes(),
                                             " bytes, ", info.checksum()));
    shards.push_back(*std::move(shard));
  }
  return shards;
}

// Parameters, optimizer state and (same world size) this rank's generator.
absl::Status RestoreState(const RunCheckpointContext& c,
                          const std::vector<ShardState>& shards,
                          bool world_size_changed, Classifier& model,
                          torch::optim::Optimizer& optimizer) {
  std::set<std::string> names;
  for (const ShardState& shard : shards) {
    for (const auto& [name, tensor] : shard.owned_tensors) names.insert(name);
  }
  absl::StatusOr<std::map<std::string, at::Tensor>> merged = MergeOwnedTensors(
      shards, std::vector<std::string>(names.begin(), names.end()));
  if (!merged.ok()) return merged.status();
  if (absl::Status s = LoadModelState(model, *merged); !s.ok()) return s;
  if (absl::Status s = RestoreOptimizer(c, model, optimizer, *merged); !s.ok()) {
    return s;
  }
  if (world_size_changed) return absl::OkStatus();
  if (c.rank >= static_cast<int>(shards.size())) {
    return absl::DataLossError(absl::StrCat("checkpoint has ", shards.size(),
                                            " shards; no shard of rank ", c.rank));
  }
  return RestoreRng(shards[c.rank]);
}

// The cursor rank 0 saved. DataLoss when a part of it is missing.
absl::StatusOr<TrainingCursor> SavedCursor(const std::vector<ShardState>& shards) {
  if (shards.empty()) return absl::DataLossError("checkpoint has no shard");
  return CursorOf(shards[0], "checkpoint shard of rank 0");
}

// This rank's shard: its part of the replicated state (balanced by
// size), its generator state and the cursor, serialized.
// This rank's part of the state, copied: its owned tensors (on the CPU,
// whatever device the run computes on), the generator and the cursor.
absl::StatusOr<ShardState> CopyShard(const RunCheckpointContext& c, Classifier& model,
                                     torch::optim::Optimizer& optimizer,
                                     const TrainingCursor& cursor) {
  absl::StatusOr<std::map<std::string, at::Tensor>> optimizer_state =
      OptimizerEntries(c, model, optimizer);
  if (!optimizer_state.ok()) return optimizer_state.status();
  ShardState shard;
  try {
    const std::map<std::string, at::Tensor> all = ReplicatedState(model, *optimizer_state);
    // Every rank holds the same state, so all refuse together, before any
    // shard is written.
    for (const auto& [name, tensor] : all) {
      if (!AllFinite(tensor)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "checkpoint: rank ", c.rank, ", after update ", cursor.total_updates, ": ",
            name, " is not finite (NaN or infinity): training stops here, and "
            "nothing holding it is saved"));
      }
    }
    std::vector<std::pair<std::string, int64_t>> sized;
    for (const auto& [name, tensor] : all) {
      sized.emplace_back(name, tensor.numel() * static_cast<int64_t>(tensor.element_size()));
    }
    for (const std::string& name : OwnedNamesBySize(sized, c.world_size, c.rank)) {
      // A copy, so that training may go on while it is written.
      shard.owned_tensors[name] = all.at(name).to(at::TensorOptions().device(at::kCPU),
                                                  /*non_blocking=*/false, /*copy=*/true);
    }
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    shard.rank_tensors["rng"] = generator.get_state();
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat("checkpoint: rank ", c.rank, ": LibTorch"));
  }
  shard.scalars["total_updates"] = cursor.total_updates;
  shard.scalars["epoch"] = cursor.epoch;
  shard.scalars["update_in_epoch"] = cursor.update_in_epoch;
  return shard;
}

// What the MANIFEST says besides its shards (checkpoint/save_generation.h).
CheckpointManifest ManifestFields(const RunCheckpointContext& c,
                                  const TrainingCursor& cursor) {
  const TrainingConfig& config = *c.config;
  CheckpointManifest fields;
  fields.set_update(cursor.total_updates);
  fields.set_epoch(cursor.epoch);
  fields.set_epoch_cursor(cursor.update_in_epoch);
  fields.set_world_size(c.world_size);
  for (int slots : LocalBatchSizes(config)) fields.add_local_batch_sizes(slots);
  fields.set_config_fingerprint(ConfigFingerprint(config));
  fields.set_world_independent_fingerprint(WorldIndependentFingerprint(config));
  fields.set_recipe_independent_fingerprint(ConfigFingerprint(RecipeFreeConfig(config)));
  fields.set_world_and_recipe_independent_fingerprint(
      ConfigFingerprint(RecipeFreeConfig(ReferenceConfig(config))));
  fields.set_model_revision(c.model_revision);
  fields.set_data_hash(c.data_hash);
  for (const auto& [kind, name] : SelectedPluginNames(config)) {
    PluginName* plugin = fields.add_plugins();
    plugin->set_kind(kind);
    plugin->set_name(name);
  }
  return fields;
}

// Writes this rank's shard; rank 0 advertises the generation once every
// rank's shard is durable. Returns when the generation is advertised.
absl::Status SaveAndAdvertise(const RunCheckpointContext& c, int64_t generation,
                              const std::string& bytes, const TrainingCursor& cursor,
                              BackgroundPruner* pruner, SavePhases* phases) {
  SaveTimings timings;
  SaveOptions options;
  // With a pruner, retention runs in its thread after the save.
  options.keep_last = pruner != nullptr ? 0 : c.plan.keep_last;
  options.fault = c.fault;
  options.timings = &timings;
  SingleRankConfirmations single;
  std::unique_ptr<StoreConfirmations> through_store;
  ShardConfirmations* confirmations = &single;
  if (c.store != nullptr) {
    through_store = std::make_unique<StoreConfirmations>(*c.store, generation,
                                                         c.rank, c.world_size);
    confirmations = through_store.get();
  }
  if (absl::Status s = SaveGeneration(c.plan.folder, generation, c.rank, bytes,
                                      ManifestFields(c, cursor), *confirmations, options);
      !s.ok()) {
    return s;
  }
  phases->set_folder(timings.folder);
  phases->set_shard(timings.shard);
  phases->set_confirmations(timings.confirmations);
  phases->set_verify(timings.verify);
  phases->set_manifest(timings.manifest);
  if (pruner == nullptr) phases->set_prune(timings.prune);
  if (c.store == nullptr) return absl::OkStatus();
  // Nobody runs ahead of a generation that is not advertised yet.
  const Clock::time_point start = Clock::now();
  const std::string advertised = absl::StrCat("ckpt/gen-", generation, "/advertised");
  absl::Status told = c.rank == 0 ? StoreSet(*c.store, advertised, "1")
                                  : StoreGet(*c.store, advertised).status();
  phases->set_advertise(std::chrono::duration<double>(Clock::now() - start).count());
  return told;
}

// The bytes of the generation's shards on disk (MANIFEST left out).
int64_t GenerationBytes(const RunCheckpointContext& c, int64_t generation) {
  int64_t bytes = 0;
  std::error_code ec;
  const std::string folder = absl::StrCat(c.plan.folder, "/", GenerationFolderName(generation));
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (entry.path().filename() != "MANIFEST") {
      bytes += static_cast<int64_t>(entry.file_size(ec));
    }
  }
  return bytes;
}

// Where `cursor` puts a resumed run, in its record.
void RecordResumedAt(const TrainingCursor& cursor, ResumeRecord* record) {
  record->set_update(static_cast<int32_t>(cursor.total_updates));
  record->set_epoch(cursor.epoch);
  record->set_epoch_cursor(static_cast<int32_t>(cursor.update_in_epoch));
}

}  // namespace

absl::StatusOr<TrainingCursor> CursorOf(const ShardState& shard, absl::string_view what) {
  int64_t parts[3] = {0, 0, 0};
  const char* names[3] = {"total_updates", "epoch", "update_in_epoch"};
  for (int i = 0; i < 3; ++i) {
    auto it = shard.scalars.find(names[i]);
    if (it == shard.scalars.end()) {
      return absl::DataLossError(absl::StrCat(what, " lacks the cursor's '", names[i], "'"));
    }
    parts[i] = it->second;
  }
  return TrainingCursor{parts[0], static_cast<int>(parts[1]), parts[2]};
}

absl::StatusOr<ResumeRecord> ResumeFromCheckpoint(
    const RunCheckpointContext& c, Classifier& model,
    torch::optim::Optimizer& optimizer, TrainingCursor* cursor) {
  ResumeRecord record;
  record.set_checkpoint_root(c.plan.folder);
  record.set_world_size(c.world_size);
  std::error_code ignored;  // a missing folder is a fresh start, or fails below
  std::filesystem::create_directories(c.plan.folder, ignored);
  absl::StatusOr<RecoveryDecision> decision = Decide(c, &record);
  if (!decision.ok()) return decision.status();
  if (!decision->has_generation()) return record;

  const CheckpointManifest& manifest = decision->manifest;
  record.set_generation(static_cast<int32_t>(manifest.generation()));
  record.set_saved_world_size(manifest.world_size());
  record.set_world_size_changed(manifest.world_size() != c.world_size);
  if (record.world_size_changed()) {
    record.set_world_size_change_rule(c.world_size_dependence.empty()
                                          ? "world_size_independent"
                                          : "allow_world_size_change");
  }
  for (int slots : SavedLocalBatchSizes(manifest, c.config->global_batch())) {
    record.add_saved_local_batch_sizes(slots);
  }
  record.set_saved_data_hash(manifest.data_hash());
  record.set_data_hash(c.data_hash);
  record.set_data_changed(!manifest.data_hash().empty() &&
                          manifest.data_hash() != c.data_hash);
  if (absl::Status s = CheckSameRun(c, manifest); !s.ok()) return s;
  absl::StatusOr<std::vector<ShardState>> shards = ReadShards(*decision, &record);
  if (!shards.ok()) return shards.status();
  absl::StatusOr<TrainingCursor> saved = SavedCursor(*shards);
  if (!saved.ok()) return saved.status();
  if (absl::Status s = RestoreState(c, *shards, record.world_size_changed(), model,
                                    optimizer);
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("checkpoint generation ",
                                               manifest.generation(), " in ", c.plan.folder,
                                               ": ", s.message()));
  }
  *cursor = *saved;
  RecordResumedAt(*cursor, &record);
  LOG(INFO) << "rank " << c.rank << ": resumed from " << c.plan.folder << "/"
            << GenerationFolderName(manifest.generation()) << " at update " << cursor->total_updates
            << " (epoch " << cursor->epoch << ", update " << cursor->update_in_epoch
            << " of the epoch)";
  if (record.world_size_changed() && c.rank == 0) LogWorldSizeChange(c, record);
  return record;
}

absl::StatusOr<SaveCopy> CopyForSave(const RunCheckpointContext& c, Classifier& model,
                                     torch::optim::Optimizer& optimizer,
                                     const TrainingCursor& cursor) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<ShardState> shard = CopyShard(c, model, optimizer, cursor);
  if (!shard.ok()) return shard.status();
  SaveCopy copy;
  copy.shard = *std::move(shard);
  copy.cursor = cursor;
  copy.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return copy;
}

absl::StatusOr<MemoryState> CopyWholeState(const RunCheckpointContext& c, Classifier& model,
                                           torch::optim::Optimizer& optimizer,
                                           const TrainingCursor& cursor) {
  RunCheckpointContext one_owner = c;
  one_owner.rank = 0;
  one_owner.world_size = 1;
  absl::StatusOr<ShardState> whole = CopyShard(one_owner, model, optimizer, cursor);
  if (!whole.ok()) return whole.status();
  MemoryState state;
  state.whole = *std::move(whole);
  state.cursor = cursor;
  state.world_size = c.world_size;
  return state;
}

absl::StatusOr<ResumeRecord> ResumeFromMemory(const RunCheckpointContext& c,
                                              const MemoryState& state, Classifier& model,
                                              torch::optim::Optimizer& optimizer,
                                              TrainingCursor* cursor) {
  if (absl::Status s = RestoreState(c, {state.whole}, /*world_size_changed=*/true, model,
                                    optimizer);
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("a peer's state at update ",
                                               state.cursor.total_updates, ": ", s.message()));
  }
  *cursor = state.cursor;
  ResumeRecord record;
  record.set_from_peer_memory(true);
  RecordResumedAt(*cursor, &record);
  record.set_saved_world_size(state.world_size);
  record.set_world_size(c.world_size);
  record.set_world_size_changed(state.world_size != c.world_size);
  if (record.world_size_changed()) record.set_world_size_change_rule("world_size_independent");
  for (int slots : state.local_batch) record.add_saved_local_batch_sizes(slots);
  record.set_next_generation(static_cast<int32_t>(state.next_generation));
  record.set_data_hash(c.data_hash);
  record.set_saved_data_hash(c.data_hash);
  LOG(INFO) << "rank " << c.rank << ": went on from a peer's memory at update "
            << cursor->total_updates << " (epoch " << cursor->epoch << ", update "
            << cursor->update_in_epoch << " of the epoch), " << state.world_size << " -> "
            << c.world_size << " workers";
  return record;
}

absl::StatusOr<SaveResult> WriteSaveCopy(const RunCheckpointContext& c, int64_t generation,
                                         const SaveCopy& copy, BackgroundPruner* pruner) {
  const Clock::time_point start = Clock::now();
  SaveResult result;
  // No folder is made while the previous save's pruning still deletes.
  if (pruner != nullptr) {
    if (absl::Status s = pruner->Wait(); !s.ok()) return s;
    result.phases.set_prune(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const Clock::time_point serialize_start = Clock::now();
  absl::StatusOr<std::string> bytes = SerializeShardState(copy.shard);
  if (!bytes.ok()) return bytes.status();
  result.phases.set_serialize(
      std::chrono::duration<double>(Clock::now() - serialize_start).count());
  if (absl::Status s =
          SaveAndAdvertise(c, generation, *bytes, copy.cursor, pruner, &result.phases);
      !s.ok()) {
    return s;
  }
  result.generation = generation;
  if (c.rank == 0) {
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.bytes = GenerationBytes(c, generation);
    result.sequential_write_seconds = SequentialWriteSeconds(c.plan.folder, result.bytes);
  } else {
    result.phases.Clear();  // rank 0's figures only
  }
  // Pruning starts after the sequential write, so that the baseline never
  // shares the disk with it.
  if (pruner != nullptr) {
    if (absl::Status s = pruner->Start(generation); !s.ok()) return s;
  }
  return result;
}

absl::StatusOr<SaveResult> SaveCheckpoint(const RunCheckpointContext& c,
                                          int64_t generation, Classifier& model,
                                          torch::optim::Optimizer& optimizer,
                                          const TrainingCursor& cursor,
                                          BackgroundPruner* pruner) {
  const PhaseKillScope injected_kill(c.fault.phase, KillPhase::kSave, c.rank,
                                     cursor.total_updates);
  absl::StatusOr<SaveCopy> copy = CopyForSave(c, model, optimizer, cursor);
  if (!copy.ok()) return copy.status();
  absl::StatusOr<SaveResult> result = WriteSaveCopy(c, generation, *copy, pruner);
  if (!result.ok()) return result.status();
  // The copy is part of a synchronous save (and of its serialize phase).
  if (c.rank == 0) {
    result->seconds += copy->seconds;
    result->phases.set_serialize(result->phases.serialize() + copy->seconds);
  }
  result->blocked_seconds = result->seconds;
  return result;
}

}  // namespace receipt_parity
