// The save protocol of one checkpoint generation, run by every rank:
//
//   1. every rank writes its shard's bytes durably under its final name
//      (checkpoint/shard_file.h);
//   2. every rank confirms its ShardInfo to rank 0 (ShardConfirmations);
//   3. rank 0, once ALL ranks confirmed, reads every shard back against
//      its confirmation, fsyncs the generation folder (every shard's name
//      durable) and writes the MANIFEST durably: only now is the
//      generation advertised;
//   4. rank 0 prunes: keeps the newest `keep_last` advertised generations.
//
// A crash anywhere before 3 completes leaves a folder without MANIFEST,
// which recovery ignores (checkpoint/recovery.h). The fsyncs, each needed
// once: rank 0 the root (the new folder's entry) when it makes the folder,
// every rank its shard's bytes, rank 0 the folder (every shard's name),
// the MANIFEST's bytes and the folder again (its name); pruning, each
// deleted generation's folder after its MANIFEST is unlinked.
#ifndef RECEIPT_PARITY_CHECKPOINT_SAVE_GENERATION_H_
#define RECEIPT_PARITY_CHECKPOINT_SAVE_GENERATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/fault_injection.h"
#include "checkpoint/manifest.pb.h"

namespace receipt_parity {

// How rank 0 learns that every shard is durable. The trainer implements it
// over its c10d store or process group; tests implement it in-process.
class ShardConfirmations {
 public:
  virtual ~ShardConfirmations() = default;

  // Called by every rank exactly once per save, after its shard is durable
  // under its final name. On rank 0: returns once every rank's ShardInfo
  // (its own included) has arrived, all of them in any order. On other
  // ranks: hands `mine` to rank 0; the returned vector is ignored.
  // Errors: a rank that never confirms must make rank 0's call fail (e.g.
  // after a timeout) rather than block forever.
  virtual absl::StatusOr<std::vector<ShardInfo>> GatherOnRankZero(
      const ShardInfo& mine) = 0;
};

// World size 1: the only rank's info is all there is.
class SingleRankConfirmations : public ShardConfirmations {
 public:
  absl::StatusOr<std::vector<ShardInfo>> GatherOnRankZero(
      const ShardInfo& mine) override {
    return std::vector<ShardInfo>{mine};
  }
};

// Where one save's time went on the calling rank, in seconds.
struct SaveTimings {
  // The generation folder made (on rank 0, its entry in the root fsynced).
  double folder = 0;
  // This rank's shard written, fsynced and renamed.
  double shard = 0;
  // Rank 0: waiting until every rank confirmed; other ranks: handing the
  // confirmation over.
  double confirmations = 0;
  // Rank 0: every shard read back and checked, the folder fsynced.
  double verify = 0;
  // Rank 0: the MANIFEST written durably.
  double manifest = 0;
  // Rank 0: older generations deleted (keep_last).
  double prune = 0;
};

struct SaveOptions {
  // Advertised generations kept after a save, the new one included; older
  // ones are deleted (MANIFEST first). 0 keeps all.
  int keep_last = 0;
  // Injected failure (checkpoint/fault_injection.h); unarmed by default.
  FaultPlan fault;
  // When set, receives where the save's time went (also on error: the
  // phases passed so far).
  SaveTimings* timings = nullptr;
};

// Saves this rank's part of generation `generation` under `root` (created
// if missing) and, on rank 0, advertises and prunes as above.
//
// `manifest_fields` supplies update, epoch, epoch_cursor, world_size,
// config_fingerprint, model_revision and plugins; format_version,
// generation, shards and manifest_checksum are filled in here (rank 0 uses
// it; other ranks only read world_size).
//
// REQUIRES: every rank calls it with the same root, generation and
// manifest_fields, and 0 <= rank < manifest_fields.world_size();
// `generation` is not yet advertised (see NextGeneration in
// checkpoint/generation_layout.h). Blocks on rank 0 until every rank has
// confirmed. `root` is one folder every rank sees (a shared file system
// across hosts): rank 0 checks each confirmed shard's size on disk.
// Concurrent calls in one process need distinct ranks.
// Errors: InvalidArgument for bad arguments or a shard set that does not
// cover every rank once; FailedPrecondition if the generation already has a
// MANIFEST; Internal for I/O errors, naming the file; and whatever
// `confirmations` returns. On error nothing new is advertised.
absl::Status SaveGeneration(const std::string& root, int64_t generation,
                            int rank, absl::string_view shard_bytes,
                            const CheckpointManifest& manifest_fields,
                            ShardConfirmations& confirmations,
                            const SaveOptions& options = {});

// Deletes advertised generations up to `newest` except the newest
// `keep_last` of them: for each, its MANIFEST is unlinked and the folder
// fsynced before the rest is removed, so a half-deleted generation is never
// advertised. REQUIRES: keep_last >= 1; called by one process at a time.
absl::Status PruneGenerations(const std::string& root, int keep_last,
                              int64_t newest);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_SAVE_GENERATION_H_
