#include "drill/generation_audit.h"

#include "absl/strings/str_cat.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/manifest_file.h"
#include "checkpoint/recovery.h"
#include "checkpoint/shard_state.h"

namespace receipt_parity {
namespace {

// OK when every shard of `decision`'s generation verifies and holds the
// MANIFEST's cursor.
absl::Status CheckShards(const RecoveryDecision& decision) {
  for (const ShardInfo& shard : decision.manifest.shards()) {
    absl::StatusOr<std::string> bytes = ReadShardBytes(decision, shard.rank());
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<ShardState> state = DeserializeShardState(*bytes, shard.file());
    if (!state.ok()) return state.status();
    const auto saved = state->scalars.find("total_updates");
    if (saved == state->scalars.end() || saved->second != decision.manifest.update()) {
      return absl::DataLossError(absl::StrCat(
          shard.file(), ": its cursor is not the MANIFEST's update ", decision.manifest.update(),
          saved == state->scalars.end() ? " (none saved)"
                                        : absl::StrCat(" (", saved->second, ")")));
    }
  }
  return absl::OkStatus();
}

AdvertisedGeneration Check(const std::string& root, const GenerationFolder& folder) {
  AdvertisedGeneration checked;
  checked.generation = folder.generation;
  const std::string name = GenerationFolderName(folder.generation);
  absl::StatusOr<CheckpointManifest> manifest = ReadManifest(folder.path, folder.generation);
  if (!manifest.ok()) {
    checked.line = absl::StrCat(name, ": ", manifest.status().message());
    return checked;
  }
  RecoveryDecision decision;
  decision.root = root;
  decision.generation = folder.generation;
  decision.manifest = *std::move(manifest);
  checked.update = decision.manifest.update();
  if (absl::Status s = CheckShards(decision); !s.ok()) {
    checked.line = absl::StrCat(name, " (update ", checked.update, "): ", s.message());
    return checked;
  }
  checked.restores = true;
  checked.line = absl::StrCat(name, " (update ", checked.update, "): MANIFEST and ",
                              decision.manifest.shards_size(),
                              " shard(s) verify and deserialise");
  return checked;
}

}  // namespace

absl::StatusOr<std::vector<AdvertisedGeneration>> CheckAdvertisedGenerations(
    const std::string& root) {
  absl::StatusOr<std::vector<GenerationFolder>> folders = ListGenerationFolders(root);
  if (!folders.ok()) return folders.status();
  std::vector<AdvertisedGeneration> generations;
  for (const GenerationFolder& folder : *folders) {
    if (folder.has_manifest) generations.push_back(Check(root, folder));
  }
  return generations;
}

}  // namespace receipt_parity
