// Choosing the generation to restart from, and cleaning up what interrupted
// saves left behind.
//
// Only a folder with a MANIFEST is a generation. The newest one is verified
// (MANIFEST parses and matches its checksum; every shard exists with the
// recorded size and checksum) before anything is deserialised; if it fails,
// recovery falls back to the previous advertised generation with a WARNING,
// or stops if so configured.
#ifndef RECEIPT_PARITY_CHECKPOINT_RECOVERY_H_
#define RECEIPT_PARITY_CHECKPOINT_RECOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/manifest.pb.h"

namespace receipt_parity {

struct RecoveryOptions {
  // Fail instead of falling back when the newest advertised generation is
  // corrupt.
  bool stop_on_corruption = false;
};

struct SkippedGeneration {
  int64_t generation = 0;
  // Starts with the folder name, e.g. "gen-000002: no MANIFEST (partial
  // save)" or "gen-000002: shard-rank-00001.pt: size 123 != manifest 456".
  std::string reason;
};

struct RecoveryDecision {
  std::string root;
  // The chosen generation; 0 when no generation was ever advertised (a
  // fresh start).
  int64_t generation = 0;
  // Its verified MANIFEST (empty when generation is 0).
  CheckpointManifest manifest;
  // Folders newer than the chosen one, newest first, with why each was
  // passed over.
  std::vector<SkippedGeneration> skipped;
  // Names of all gen-NNNNNN folders without a MANIFEST, oldest first.
  std::vector<std::string> partial_folders;

  bool has_generation() const { return generation > 0; }
};

// Scans ROOT (see checkpoint/generation_layout.h) and picks the newest
// advertised generation that verifies. Reads every shard of the generations
// it verifies; modifies nothing. A missing or empty root is a fresh start.
// Errors: DataLoss when advertised generations exist but none verifies, or
// when the newest is corrupt and options.stop_on_corruption; the message
// lists the reasons. Internal if ROOT cannot be listed.
absl::StatusOr<RecoveryDecision> FindRestorable(
    const std::string& root, const RecoveryOptions& options = {});

// The bytes of `rank`'s shard of the chosen generation, verified again
// against the MANIFEST (size and checksum). Errors: InvalidArgument if the
// decision has no generation or no such rank; DataLoss/NotFound naming the
// file if it no longer matches.
absl::StatusOr<std::string> ReadShardBytes(const RecoveryDecision& decision,
                                           int rank);

// Removes every gen-NNNNNN folder without a MANIFEST and every temp file
// (TempPathFor names) inside advertised folders; returns the removed paths.
// REQUIRES: no save is in progress under ROOT (call it at restart, on one
// rank, before any rank saves). Errors (Internal) name the path.
absl::StatusOr<std::vector<std::string>> CleanUpPartialGenerations(
    const std::string& root);

// Moves every advertised generation newer than the chosen one that failed
// verification (decision.skipped, partial folders aside) out of the
// gen-NNNNNN names, to corrupt-gen-NNNNNN (corrupt-gen-NNNNNN.2, .3, ...
// when taken), so that numbering (NextGeneration), resume and retention
// only ever see generations that verify, and nothing is deleted that could
// explain what went wrong. Returns "gen-000007 -> corrupt-gen-000007:
// <reason>" for each, and logs it. REQUIRES: as CleanUpPartialGenerations.
// Errors (Internal) name the folder.
absl::StatusOr<std::vector<std::string>> SetAsideCorruptGenerations(
    const RecoveryDecision& decision);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_RECOVERY_H_
