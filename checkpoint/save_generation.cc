#include "checkpoint/save_generation.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/manifest_file.h"
#include "checkpoint/shard_file.h"
#include "logging/glog.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Adds the seconds since it was made, or since the last Lap(), to a phase.
class PhaseClock {
 public:
  explicit PhaseClock(SaveTimings* timings) : timings_(timings), last_(Clock::now()) {}
  void Lap(double SaveTimings::*phase) {
    const Clock::time_point now = Clock::now();
    if (timings_ != nullptr) {
      timings_->*phase += std::chrono::duration<double>(now - last_).count();
    }
    last_ = now;
  }

 private:
  SaveTimings* timings_;
  Clock::time_point last_;
};

absl::Status CheckArguments(int64_t generation, int rank, int world_size,
                            const SaveOptions& options) {
  if (generation < 1 || generation > 999999) {
    return absl::InvalidArgumentError(
        absl::StrCat("generation ", generation, " outside [1, 999999]"));
  }
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " outside world size ", world_size));
  }
  if (options.keep_last < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("keep_last ", options.keep_last, " < 0"));
  }
  return absl::OkStatus();
}

// Creates ROOT/gen-NNNNNN (every rank may race to do it); rank 0 makes its
// entry in ROOT durable (before its MANIFEST; no other rank needs it).
absl::StatusOr<std::string> MakeGenerationFolder(const std::string& root,
                                                 int64_t generation, int rank) {
  const std::string gen_dir = GenerationPath(root, generation);
  std::error_code create_error, ec;
  fs::create_directories(gen_dir, create_error);
  if (!fs::is_directory(gen_dir, ec)) {
    return absl::InternalError(absl::StrCat("cannot create folder ", gen_dir,
                                            ": ", create_error.message()));
  }
  if (fs::exists(fs::path(gen_dir) / kManifestFileName, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        gen_dir, " already has a ", kManifestFileName, ": generation ",
        generation, " is advertised; save a new one"));
  }
  if (rank != 0) return gen_dir;
  absl::Status synced = SyncDirectory(root);
  if (!synced.ok()) return synced;
  return gen_dir;
}

// Rank 0's half: every shard confirmed and present at its final name.
absl::Status Advertise(const std::string& gen_dir, int64_t generation,
                       std::vector<ShardInfo> shards,
                       const CheckpointManifest& fields,
                       const FaultPlan& fault, PhaseClock& clock) {
  absl::Status complete = CheckShardSet(shards, fields.world_size());
  if (!complete.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generation ", generation, " confirmations: ", complete.message()));
  }
  std::sort(shards.begin(), shards.end(),
            [](const ShardInfo& a, const ShardInfo& b) {
              return a.rank() < b.rank();
            });
  // The store is not the source of integrity: each confirmation's size and
  // checksum must be the file's on disk, or nothing is advertised.
  for (const ShardInfo& shard : shards) {
    absl::StatusOr<std::string> verified = ReadVerifiedShard(gen_dir, shard);
    if (!verified.ok()) {
      return absl::InternalError(absl::StrCat(
          "generation ", generation, " not advertised: ", gen_dir, "/",
          shard.file(), " does not match its confirmation from rank ",
          shard.rank(), " (", verified.status().message(), ")"));
    }
  }
  // Every shard's name (no rank fsynced the folder after its rename).
  if (absl::Status synced = SyncDirectory(gen_dir); !synced.ok()) return synced;
  clock.Lap(&SaveTimings::verify);
  CheckpointManifest manifest = fields;
  manifest.set_format_version(kManifestFormatVersion);
  manifest.set_generation(generation);
  std::sort(manifest.mutable_plugins()->begin(),
            manifest.mutable_plugins()->end(),
            [](const PluginName& a, const PluginName& b) {
              return a.kind() < b.kind();
            });
  manifest.clear_shards();
  for (ShardInfo& shard : shards) *manifest.add_shards() = std::move(shard);

  KillIfPlanned(fault, KillPoint::kBeforeManifest, 0, generation);
  WriteHooks hooks;
  hooks.after_half = KillHook(fault, KillPoint::kMidManifest, 0, generation);
  absl::Status written = WriteManifest(gen_dir, std::move(manifest), hooks);
  clock.Lap(&SaveTimings::manifest);
  return written;
}

}  // namespace

absl::Status SaveGeneration(const std::string& root, int64_t generation,
                            int rank, absl::string_view shard_bytes,
                            const CheckpointManifest& manifest_fields,
                            ShardConfirmations& confirmations,
                            const SaveOptions& options) {
  absl::Status arguments =
      CheckArguments(generation, rank, manifest_fields.world_size(), options);
  if (!arguments.ok()) return arguments;
  PhaseClock clock(options.timings);
  absl::StatusOr<std::string> gen_dir = MakeGenerationFolder(root, generation, rank);
  clock.Lap(&SaveTimings::folder);
  if (!gen_dir.ok()) return gen_dir.status();

  absl::StatusOr<ShardInfo> mine =
      WriteShard(*gen_dir, generation, rank, shard_bytes, options.fault);
  clock.Lap(&SaveTimings::shard);
  if (!mine.ok()) return mine.status();
  if (rank != 0) {
    // Only rank 0 writes a MANIFEST: on other ranks both manifest points
    // mean "shard durable, not yet confirmed".
    KillIfPlanned(options.fault, KillPoint::kBeforeManifest, rank, generation);
    KillIfPlanned(options.fault, KillPoint::kMidManifest, rank, generation);
  }
  absl::StatusOr<std::vector<ShardInfo>> shards =
      confirmations.GatherOnRankZero(*mine);
  clock.Lap(&SaveTimings::confirmations);
  if (!shards.ok()) return shards.status();
  if (rank != 0) return absl::OkStatus();

  absl::Status advertised = Advertise(*gen_dir, generation, *std::move(shards),
                                      manifest_fields, options.fault, clock);
  if (!advertised.ok()) return advertised;
  LOG(INFO) << "checkpoint generation " << generation << " advertised in "
            << *gen_dir;
  if (options.keep_last == 0) return absl::OkStatus();
  absl::Status pruned = PruneGenerations(root, options.keep_last, generation);
  clock.Lap(&SaveTimings::prune);
  return pruned;
}

absl::Status PruneGenerations(const std::string& root, int keep_last,
                              int64_t newest) {
  CHECK_GE(keep_last, 1);
  absl::StatusOr<std::vector<GenerationFolder>> folders =
      ListGenerationFolders(root);
  if (!folders.ok()) return folders.status();
  int kept = 0;
  for (auto it = folders->rbegin(); it != folders->rend(); ++it) {
    if (!it->has_manifest || it->generation > newest) continue;
    if (++kept <= keep_last) continue;
    std::error_code ec;
    if (fs::is_symlink(it->path, ec)) {
      // Never follow a link: remove it, never what it points to.
      fs::remove(it->path, ec);
      if (ec) {
        return absl::InternalError(absl::StrCat("cannot delete the link ", it->path, ": ",
                                                ec.message()));
      }
      LOG(INFO) << "checkpoint retention (keep_last " << keep_last
                << "): deleted the link " << it->path << " (not its target)";
      continue;
    }
    const fs::path manifest = fs::path(it->path) / kManifestFileName;
    fs::remove(manifest, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat(
          "cannot delete ", manifest.string(), ": ", ec.message()));
    }
    absl::Status synced = SyncDirectory(it->path);
    if (!synced.ok()) return synced;
    fs::remove_all(it->path, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot delete ", it->path, ": ", ec.message()));
    }
    LOG(INFO) << "checkpoint retention (keep_last " << keep_last
              << "): deleted " << it->path;
  }
  // The root is not fsynced: a deletion lost to a crash brings back a
  // folder whose MANIFEST is already gone (fsynced above), which recovery
  // ignores and clears.
  return absl::OkStatus();
}

}  // namespace receipt_parity
