// Reading and writing a generation's MANIFEST (checkpoint/manifest.proto).
// Rank 0 writes it once every shard is durable; recovery trusts a generation
// only through a MANIFEST that passes ReadManifest.
#ifndef RECEIPT_PARITY_CHECKPOINT_MANIFEST_FILE_H_
#define RECEIPT_PARITY_CHECKPOINT_MANIFEST_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/atomic_file.h"
#include "checkpoint/manifest.pb.h"

namespace receipt_parity {

inline constexpr int32_t kManifestFormatVersion = 1;

// The most a MANIFEST may hold: one shard entry per rank is some 200 bytes,
// so 4096 ranks (the most a config allows) take under 1 MiB.
inline constexpr int64_t kMaxManifestBytes = int64_t{16} << 20;

// Crc32Checksum of the deterministic binary serialization of `manifest`
// with manifest_checksum cleared.
std::string ManifestChecksum(const CheckpointManifest& manifest);

// OK iff `shards` holds ranks 0..world_size-1 exactly once each, named
// ShardFileName(rank), with size_bytes >= 0 and a checksum. Errors
// (InvalidArgument) name the offending rank or file.
absl::Status CheckShardSet(const std::vector<ShardInfo>& shards,
                           int world_size);

// Sets manifest_checksum and writes `manifest` as JSON to
// GEN_DIR/MANIFEST through WriteFileAtomically (hooks as there).
absl::Status WriteManifest(const std::string& gen_dir,
                           CheckpointManifest manifest,
                           const WriteHooks& hooks = {});

// Parses and checks GEN_DIR/MANIFEST, read as untrusted input first
// (io/untrusted_file.h: a regular file inside GEN_DIR of at most
// kMaxManifestBytes, checked before it is opened): JSON parses with no unknown keys, the
// checksum matches, format_version is kManifestFormatVersion, generation
// equals `expected_generation`, world_size >= 1 and CheckShardSet holds.
// Reads no shard. Errors (DataLoss, or NotFound if there is no MANIFEST)
// start with "MANIFEST" and say what is wrong, e.g.
// "MANIFEST unreadable: ...", "MANIFEST: checksum crc32:... != recorded ...".
absl::StatusOr<CheckpointManifest> ReadManifest(const std::string& gen_dir,
                                                int64_t expected_generation);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_MANIFEST_FILE_H_
