// Names on disk of a checkpoint root (e.g. OUT/checkpoints):
//
//   ROOT/gen-000001/shard-rank-00000.pt   one shard per rank
//   ROOT/gen-000001/shard-rank-00001.pt
//   ROOT/gen-000001/MANIFEST              present only once every shard is
//                                         durable: it alone advertises gen 1
//   ROOT/gen-000002/...                   a folder without MANIFEST is a
//                                         partial save, never a generation
//
// A file being written is named FINAL.tmp-PID until it is renamed to FINAL.
// These names are part of the on-disk format.
#ifndef RECEIPT_PARITY_CHECKPOINT_GENERATION_LAYOUT_H_
#define RECEIPT_PARITY_CHECKPOINT_GENERATION_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

inline constexpr char kManifestFileName[] = "MANIFEST";

// "gen-000042". REQUIRES: 1 <= generation <= 999999.
std::string GenerationFolderName(int64_t generation);

// The N of "gen-NNNNNN" (exactly 6 digits, N >= 1); nullopt for any other
// name.
std::optional<int64_t> ParseGenerationFolderName(absl::string_view name);

// "shard-rank-00003.pt". REQUIRES: 0 <= rank <= 99999.
std::string ShardFileName(int rank);

// "ROOT/gen-NNNNNN".
std::string GenerationPath(const std::string& root, int64_t generation);

struct GenerationFolder {
  int64_t generation = 0;
  std::string path;
  bool has_manifest = false;
  // A link whose target lies outside the root (io/untrusted_file.h
  // ResolvesInside): nothing in it is trusted or touched.
  bool leaves_root = false;
};

// Every gen-NNNNNN folder directly under `root`, oldest first; other entries
// are ignored. A missing root gives an empty list. Errors name the root.
absl::StatusOr<std::vector<GenerationFolder>> ListGenerationFolders(
    const std::string& root);

// 1 + the largest generation of any gen-NNNNNN folder under `root`
// (advertised, partial or corrupt), 1 if none: a number no folder uses.
// Call once at start (after CleanUpPartialGenerations, on one rank, before
// any rank saves) and add 1 per save afterwards.
absl::StatusOr<int64_t> NextGeneration(const std::string& root);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_GENERATION_LAYOUT_H_
