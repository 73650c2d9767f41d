// After a kill, before anything restarts: every generation a reader of the
// checkpoint folder finds advertised, checked as a restart would restore
// it. "Nothing advertised fails to restore" is this list with no failure.
#ifndef RECEIPT_PARITY_DRILL_GENERATION_AUDIT_H_
#define RECEIPT_PARITY_DRILL_GENERATION_AUDIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

struct AdvertisedGeneration {
  int64_t generation = 0;
  // The MANIFEST's update (0 if the MANIFEST does not verify).
  int64_t update = 0;
  bool restores = false;
  // "gen-000003 (update 6): MANIFEST and 2 shards verify and deserialise"
  // or "gen-000003: <what failed>".
  std::string line;
};

// Every gen-NNNNNN folder under `root` with a MANIFEST, oldest first: the
// MANIFEST verifies (checkpoint/manifest_file.h), every shard it lists
// verifies (size, checksum: checkpoint/recovery.h's ReadShardBytes) and
// deserialises (checkpoint/shard_state.h) with the cursor the MANIFEST
// names. Reads only. Errors: Internal when `root` cannot be listed (a
// missing root is no generation).
absl::StatusOr<std::vector<AdvertisedGeneration>> CheckAdvertisedGenerations(
    const std::string& root);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DRILL_GENERATION_AUDIT_H_
