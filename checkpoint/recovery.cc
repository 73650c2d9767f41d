#include "checkpoint/recovery.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/manifest_file.h"
#include "checkpoint/shard_file.h"
#include "logging/glog.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// The MANIFEST of an advertised folder, once it and every shard verify.
absl::StatusOr<CheckpointManifest> Verify(const GenerationFolder& folder) {
  absl::StatusOr<CheckpointManifest> manifest =
      ReadManifest(folder.path, folder.generation);
  if (!manifest.ok()) return manifest.status();
  for (const ShardInfo& shard : manifest->shards()) {
    absl::StatusOr<std::string> bytes = ReadVerifiedShard(folder.path, shard);
    if (!bytes.ok()) return bytes.status();
  }
  return manifest;
}

// Why a generation folder that is a link out of the root is not resumed
// from (nothing outside the run folder is trusted).
absl::Status LinkLeavingRoot(const GenerationFolder& folder, const std::string& root) {
  std::error_code ec;
  return absl::FailedPreconditionError(absl::StrCat(
      "a link leading out of ", root, " (to ", fs::weakly_canonical(folder.path, ec).string(),
      "); nothing outside the run folder is resumed from"));
}

std::string JoinReasons(const std::vector<SkippedGeneration>& skipped) {
  return absl::StrJoin(skipped, "; ",
                       [](std::string* out, const SkippedGeneration& s) {
                         out->append(s.reason);
                       });
}

}  // namespace

absl::StatusOr<RecoveryDecision> FindRestorable(
    const std::string& root, const RecoveryOptions& options) {
  absl::StatusOr<std::vector<GenerationFolder>> folders =
      ListGenerationFolders(root);
  if (!folders.ok()) return folders.status();
  RecoveryDecision decision;
  decision.root = root;
  for (const GenerationFolder& folder : *folders) {
    if (!folder.has_manifest && !folder.leaves_root) {
      decision.partial_folders.push_back(
          GenerationFolderName(folder.generation));
    }
  }
  bool saw_corruption = false;
  for (auto it = folders->rbegin(); it != folders->rend(); ++it) {
    const std::string name = GenerationFolderName(it->generation);
    if (!it->has_manifest && !it->leaves_root) {
      decision.skipped.push_back(
          {it->generation, absl::StrCat(name, ": no MANIFEST (partial save)")});
      continue;
    }
    absl::StatusOr<CheckpointManifest> manifest =
        it->leaves_root ? LinkLeavingRoot(*it, root) : Verify(*it);
    if (manifest.ok()) {
      decision.generation = it->generation;
      decision.manifest = *std::move(manifest);
      break;
    }
    const std::string reason =
        absl::StrCat(name, ": ", manifest.status().message());
    decision.skipped.push_back({it->generation, reason});
    if (options.stop_on_corruption) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", it->path,
                       " is corrupt and stop_on_corruption is set: ", reason));
    }
    LOG(WARNING) << "checkpoint " << it->path << " is corrupt (" << reason
                 << "); falling back to an older generation";
    saw_corruption = true;
  }
  if (decision.has_generation()) {
    LOG_IF(WARNING, saw_corruption)
        << "resuming from the older checkpoint "
        << GenerationFolderName(decision.generation) << " under " << root
        << " because newer ones are corrupt: " << JoinReasons(decision.skipped);
  } else if (saw_corruption) {
    return absl::DataLossError(
        absl::StrCat("no restorable checkpoint generation under ", root, ": ",
                     JoinReasons(decision.skipped)));
  }
  return decision;
}

absl::StatusOr<std::string> ReadShardBytes(const RecoveryDecision& decision,
                                           int rank) {
  if (!decision.has_generation()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no checkpoint generation was chosen under ", decision.root));
  }
  const std::string gen_dir =
      GenerationPath(decision.root, decision.generation);
  for (const ShardInfo& shard : decision.manifest.shards()) {
    if (shard.rank() != rank) continue;
    absl::StatusOr<std::string> bytes = ReadVerifiedShard(gen_dir, shard);
    if (!bytes.ok()) {
      return absl::Status(bytes.status().code(),
                          absl::StrCat(gen_dir, "/", bytes.status().message()));
    }
    return bytes;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(gen_dir, " has no shard for rank ", rank, " (world size ",
                   decision.manifest.world_size(), ")"));
}

absl::StatusOr<std::vector<std::string>> CleanUpPartialGenerations(
    const std::string& root) {
  absl::StatusOr<std::vector<GenerationFolder>> folders =
      ListGenerationFolders(root);
  if (!folders.ok()) return folders.status();
  std::vector<std::string> removed;
  std::error_code ec;
  for (const GenerationFolder& folder : *folders) {
    // A link out of the root: its target is not ours to clean (set aside
    // by SetAsideCorruptGenerations, which moves the link only).
    if (folder.leaves_root) continue;
    if (!folder.has_manifest) {
      fs::remove_all(folder.path, ec);
      if (ec) break;
      removed.push_back(folder.path);
      continue;
    }
    std::vector<fs::path> temps;
    for (fs::directory_iterator it(folder.path, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (IsTempFileName(it->path().filename().string())) {
        temps.push_back(it->path());
      }
    }
    for (const fs::path& temp : temps) {
      if (ec) break;
      fs::remove(temp, ec);
      if (!ec) removed.push_back(temp.string());
    }
    if (ec) break;
    if (temps.empty()) continue;
    absl::Status synced = SyncDirectory(folder.path);
    if (!synced.ok()) return synced;
  }
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot clean up checkpoint root ",
                                            root, ": ", ec.message()));
  }
  for (const std::string& path : removed) {
    LOG(INFO) << "checkpoint clean-up: removed " << path;
  }
  if (folders->empty()) return removed;
  absl::Status synced = SyncDirectory(root);
  if (!synced.ok()) return synced;
  return removed;
}

absl::StatusOr<std::vector<std::string>> SetAsideCorruptGenerations(
    const RecoveryDecision& decision) {
  std::vector<std::string> moved;
  for (const SkippedGeneration& skipped : decision.skipped) {
    const fs::path from = GenerationPath(decision.root, skipped.generation);
    std::error_code ec;
    // A link is moved itself (rename never follows it), its target untouched.
    if (!fs::is_symlink(from, ec) && !fs::exists(fs::path(from) / kManifestFileName, ec)) {
      continue;  // partial
    }
    const std::string base = "corrupt-" + GenerationFolderName(skipped.generation);
    fs::path to = fs::path(decision.root) / base;
    for (int n = 2; fs::exists(to, ec); ++n) {
      to = fs::path(decision.root) / absl::StrCat(base, ".", n);
    }
    fs::rename(from, to, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("cannot set aside the corrupt generation ",
                                              from.string(), ": ", ec.message()));
    }
    moved.push_back(absl::StrCat(from.filename().string(), " -> ",
                                 to.filename().string(), ": ", skipped.reason));
    LOG(WARNING) << "checkpoint: set aside " << moved.back();
  }
  if (moved.empty()) return moved;
  absl::Status synced = SyncDirectory(decision.root);
  if (!synced.ok()) return synced;
  return moved;
}

}  // namespace receipt_parity
