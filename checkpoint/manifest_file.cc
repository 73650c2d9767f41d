#include "checkpoint/manifest_file.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "checkpoint/generation_layout.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/untrusted_file.h"

namespace receipt_parity {
namespace {

std::string ManifestPath(const std::string& gen_dir) {
  return (std::filesystem::path(gen_dir) / kManifestFileName).string();
}

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat(kManifestFileName, ": ", what));
}

}  // namespace

std::string ManifestChecksum(const CheckpointManifest& manifest) {
  CheckpointManifest unsealed = manifest;
  unsealed.clear_manifest_checksum();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream string_stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&string_stream);
    coded.SetSerializationDeterministic(true);
    unsealed.SerializeToCodedStream(&coded);
  }
  return Crc32Checksum(bytes);
}

absl::Status CheckShardSet(const std::vector<ShardInfo>& shards,
                           int world_size) {
  if (static_cast<int>(shards.size()) != world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(shards.size(), " shards for world size ", world_size));
  }
  std::vector<bool> seen(world_size, false);
  for (const ShardInfo& shard : shards) {
    if (shard.rank() < 0 || shard.rank() >= world_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shard rank ", shard.rank(), " outside [0, ", world_size, ")"));
    }
    if (seen[shard.rank()]) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", shard.rank(), " has two shards"));
    }
    seen[shard.rank()] = true;
    if (shard.file() != ShardFileName(shard.rank())) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", shard.rank(), " shard is named \"",
                       shard.file(), "\", not ", ShardFileName(shard.rank())));
    }
    if (shard.size_bytes() < 0 || shard.checksum().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(shard.file(), ": no size or checksum"));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteManifest(const std::string& gen_dir,
                           CheckpointManifest manifest,
                           const WriteHooks& hooks) {
  manifest.set_manifest_checksum(ManifestChecksum(manifest));
  return WriteFileAtomically(ManifestPath(gen_dir), ToJson(manifest), hooks);
}

absl::StatusOr<CheckpointManifest> ReadManifest(const std::string& gen_dir,
                                                int64_t expected_generation) {
  const std::string path = ManifestPath(gen_dir);
  CheckpointManifest manifest;
  // Read as untrusted input: a regular file inside the generation folder,
  // of at most kMaxManifestBytes, checked before it is opened.
  UntrustedFileRules rules;
  rules.within = gen_dir;
  rules.max_bytes = kMaxManifestBytes;
  absl::StatusOr<std::string> text = ReadUntrustedFile(path, rules);
  if (absl::IsNotFound(text.status())) return text.status();
  absl::Status read =
      text.ok() ? ParseJsonFileText(path, *text, &manifest) : text.status();
  if (!read.ok()) {
    return absl::DataLossError(
        absl::StrCat(kManifestFileName, " unreadable: ", read.message()));
  }
  const std::string checksum = ManifestChecksum(manifest);
  if (checksum != manifest.manifest_checksum()) {
    return Corrupt(absl::StrCat("checksum ", checksum, " != recorded \"",
                                manifest.manifest_checksum(), "\""));
  }
  if (manifest.format_version() != kManifestFormatVersion) {
    return Corrupt(absl::StrCat("format_version ", manifest.format_version(),
                                " (this build reads ", kManifestFormatVersion,
                                ")"));
  }
  if (manifest.generation() != expected_generation) {
    return Corrupt(absl::StrCat("generation ", manifest.generation(),
                                " in folder ",
                                GenerationFolderName(expected_generation)));
  }
  if (manifest.world_size() < 1) {
    return Corrupt(absl::StrCat("world_size ", manifest.world_size()));
  }
  absl::Status shards =
      CheckShardSet({manifest.shards().begin(), manifest.shards().end()},
                    manifest.world_size());
  if (!shards.ok()) return Corrupt(shards.message());
  return manifest;
}

}  // namespace receipt_parity
