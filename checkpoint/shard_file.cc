#include "checkpoint/shard_file.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "checkpoint/checksum.h"
#include "checkpoint/generation_layout.h"
#include "io/atomic_file.h"

namespace receipt_parity {

namespace fs = std::filesystem;

absl::StatusOr<ShardInfo> WriteShard(const std::string& gen_dir,
                                     int64_t generation, int rank,
                                     absl::string_view bytes,
                                     const FaultPlan& fault) {
  KillIfPlanned(fault, KillPoint::kBeforeShard, rank, generation);
  ShardInfo info;
  info.set_rank(rank);
  info.set_file(ShardFileName(rank));
  info.set_size_bytes(static_cast<int64_t>(bytes.size()));
  info.set_checksum(Crc32Checksum(bytes));
  WriteHooks hooks;
  hooks.after_half = [&] {
    KillIfPlanned(fault, KillPoint::kMidShard, rank, generation);
  };
  hooks.before_rename = [&] {
    KillIfPlanned(fault, KillPoint::kAfterShardBeforeRename, rank, generation);
  };
  absl::Status written = WriteFileAtomically(
      (fs::path(gen_dir) / info.file()).string(), bytes, hooks);
  if (!written.ok()) return written;
  return info;
}

absl::StatusOr<std::string> ReadVerifiedShard(const std::string& gen_dir,
                                              const ShardInfo& expected) {
  absl::StatusOr<std::string> bytes =
      ReadFileToString((fs::path(gen_dir) / expected.file()).string());
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError(absl::StrCat(expected.file(), ": missing"));
  }
  if (!bytes.ok()) {
    return absl::DataLossError(
        absl::StrCat(expected.file(), ": ", bytes.status().message()));
  }
  if (static_cast<int64_t>(bytes->size()) != expected.size_bytes()) {
    return absl::DataLossError(absl::StrCat(expected.file(), ": size ",
                                            bytes->size(), " != manifest ",
                                            expected.size_bytes()));
  }
  const std::string checksum = Crc32Checksum(*bytes);
  if (checksum != expected.checksum()) {
    return absl::DataLossError(absl::StrCat(expected.file(), ": checksum ",
                                            checksum, " != manifest ",
                                            expected.checksum()));
  }
  return bytes;
}

}  // namespace receipt_parity
