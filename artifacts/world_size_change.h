// What resuming with another world size does to the rest of an epoch.
//
// The checkpoint's cursor is (epoch, updates done in it). Each update
// covers the next global-batch block of the epoch's permutation, so with
// the same global batch the new run resumes at the same position of the
// same permutation; what changes is which rank gets which slot and the
// padding of the tail (DistributedSampler pads to a multiple of the world
// size), hence which ids are skipped or trained twice.
#ifndef RECEIPT_PARITY_ARTIFACTS_WORLD_SIZE_CHANGE_H_
#define RECEIPT_PARITY_ARTIFACTS_WORLD_SIZE_CHANGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "samplers/sampler_policy.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/world_size_change.pb.h"

namespace receipt_parity {

struct WorldSizeChange {
  // The run and attempt the report names (artifacts/artifact_stamp.h).
  ArtifactStamp stamp;
  const SamplerPolicy* policy = nullptr;
  std::string policy_name;
  // By dataset index.
  std::vector<std::string> receipt_ids;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t updates_done = 0;
  std::vector<int> old_local_batch;
  std::vector<int> new_local_batch;
};

// InvalidArgument when the two splits have different global batches (the
// cursor would not mean the same position).
absl::StatusOr<WorldSizeChangeReport> CompareDataOrder(const WorldSizeChange& change);

// CompareDataOrder, logged as a warning and written to `path` as JSON.
absl::Status WriteWorldSizeChangeReport(const WorldSizeChange& change,
                                        const std::string& path);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_WORLD_SIZE_CHANGE_H_
