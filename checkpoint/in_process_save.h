// Test support: every rank of a checkpoint save in one process, in the
// order a real run would see it: rank 0 writes its shard and waits in
// GatherOnRankZero, during which the other ranks write and confirm theirs.
// A kill on any rank therefore interrupts the whole save where it would
// interrupt it across processes, and rank 0 can only write the MANIFEST
// after every other shard is on disk.
#ifndef RECEIPT_PARITY_CHECKPOINT_IN_PROCESS_SAVE_H_
#define RECEIPT_PARITY_CHECKPOINT_IN_PROCESS_SAVE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "checkpoint/manifest.pb.h"
#include "checkpoint/save_generation.h"

namespace receipt_parity {

// Deterministic, distinct bytes for (generation, rank) of `size` bytes.
std::string TestShardBytes(int64_t generation, int rank, size_t size = 40000);

// Manifest fields for a save of `world_size` ranks at `update`.
CheckpointManifest TestManifestFields(int world_size, int64_t update);

// Saves `generation` for ranks 0..world_size-1 with TestShardBytes, as
// described above, through SaveGeneration on every rank.
absl::Status SaveAllRanks(const std::string& root, int64_t generation,
                          int world_size, const SaveOptions& options = {});

// An empty folder for one test.
std::string FreshTestDir(const std::string& name);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_IN_PROCESS_SAVE_H_
