// One rank's shard file inside a generation folder: written durably with
// the shard kill points, read back only after its size and checksum match
// what the MANIFEST recorded.
#ifndef RECEIPT_PARITY_CHECKPOINT_SHARD_FILE_H_
#define RECEIPT_PARITY_CHECKPOINT_SHARD_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/manifest.pb.h"

namespace receipt_parity {

// Writes `bytes` to GEN_DIR/ShardFileName(rank): temp name, fsync, rename
// (io/atomic_file.h). `fault` may kill the process at before_shard (nothing
// written), mid_shard (half the bytes in the temp file, written and
// fsynced: only then is the half fsynced on its own) or
// after_shard_before_rename, for this `rank` and `generation`.
// Returns the file's name, size and checksum: once it returns, the shard's
// bytes are durable and it has its final name; the folder is not fsynced
// here: the name is durable once someone fsyncs GEN_DIR (SaveGeneration's
// rank 0 does, once for every rank's shard, before the MANIFEST).
// REQUIRES: GEN_DIR exists. Errors (Internal) name the file.
absl::StatusOr<ShardInfo> WriteShard(const std::string& gen_dir,
                                     int64_t generation, int rank,
                                     absl::string_view bytes,
                                     const FaultPlan& fault = {});

// The bytes of GEN_DIR/expected.file(), only if its size and checksum equal
// `expected`'s. Errors (DataLoss; NotFound if missing) start with the file
// name, e.g. "shard-rank-00001.pt: size 123 != manifest 456".
absl::StatusOr<std::string> ReadVerifiedShard(const std::string& gen_dir,
                                              const ShardInfo& expected);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_SHARD_FILE_H_
