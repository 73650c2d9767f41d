#include "checkpoint/shard_file.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "checkpoint/generation_layout.h"
#include "io/atomic_file.h"
#include "io/untrusted_file.h"

namespace receipt_parity {

namespace fs = std::filesystem;

namespace {

// `message` with "GEN_DIR/" taken out: the caller names the folder.
std::string ShortenPath(absl::string_view message, const std::string& gen_dir) {
  std::string text(message);
  const std::string prefix = gen_dir + "/";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix)) {
    text.erase(at, prefix.size());
  }
  return text;
}

}  // namespace

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
  hooks.after_half = KillHook(fault, KillPoint::kMidShard, rank, generation);
  hooks.before_rename = KillHook(fault, KillPoint::kAfterShardBeforeRename, rank, generation);
  hooks.sync_folder = false;  // rank 0 fsyncs the folder for every shard
  absl::Status written = WriteFileAtomically(
      (fs::path(gen_dir) / info.file()).string(), bytes, hooks);
  if (!written.ok()) return written;
  return info;
}

absl::StatusOr<std::string> ReadVerifiedShard(const std::string& gen_dir,
                                              const ShardInfo& expected) {
  // Read as untrusted input: a regular file inside the generation folder,
  // of the MANIFEST's size, checked before anything is opened or allocated.
  UntrustedFileRules rules;
  rules.within = gen_dir;
  rules.exact_bytes = expected.size_bytes();
  rules.exact_bytes_source = "manifest";
  absl::StatusOr<std::string> bytes =
      ReadUntrustedFile((fs::path(gen_dir) / expected.file()).string(), rules);
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError(absl::StrCat(expected.file(), ": missing"));
  }
  if (!bytes.ok()) {
    // The message starts with the file's path; its folder is the caller's.
    return absl::DataLossError(ShortenPath(bytes.status().message(), gen_dir));
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
