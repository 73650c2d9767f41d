// What one rank's shard holds, and how the replicated training state is
// split between ranks so each writes only its part.
//
// Bytes are LibTorch's own serialization (torch::serialize::OutputArchive::
// save_to, the format torch::save writes); the shard file's integrity is
// checked separately (checkpoint/manifest_file.h) before these are parsed.
#ifndef RECEIPT_PARITY_CHECKPOINT_SHARD_STATE_H_
#define RECEIPT_PARITY_CHECKPOINT_SHARD_STATE_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

struct ShardState {
  // The part of the replicated state (parameters, optimizer buffers) this
  // rank owns, by name: the names OwnedNames gives this rank.
  std::map<std::string, at::Tensor> owned_tensors;
  // State that differs per rank, e.g. "rng" = the generator's get_state().
  std::map<std::string, at::Tensor> rank_tensors;
  // Small integers, e.g. the sampler position.
  std::map<std::string, int64_t> scalars;
};

// The shard's bytes. Tensors are saved detached (values, dtype and shape;
// no autograd history); `state` is only read. Errors (Internal)
// carry LibTorch's message.
absl::StatusOr<std::string> SerializeShardState(const ShardState& state);

// Hex SHA-1 of what `state` holds that every replica must share: each owned
// tensor's name, dtype, shape and bytes (in name order), and the scalars;
// not the per-rank tensors (a generator state differs by rank). Two
// replicas of one update hash the same; any bit that differs changes it.
std::string ReplicaHash(const ShardState& state);

// The inverse of SerializeShardState; tensors come back on the CPU.
// `shard_name` (e.g. the file name) is only used in errors. Errors:
// DataLoss naming `shard_name` for bytes LibTorch cannot read or that do not
// hold a ShardState.
absl::StatusOr<ShardState> DeserializeShardState(absl::string_view bytes,
                                                 absl::string_view shard_name);

// The names `rank` owns, balanced by size: largest first, each to the rank
// with the fewest bytes so far (ties: the lowest rank; equal sizes keep
// their order). Every name has exactly one owner; the split depends only on
// `sized_names` (which must be the same on every rank), and no rank holds
// more than the average plus the largest entry. REQUIRES: 0 <= rank <
// world_size, sizes >= 0.
std::vector<std::string> OwnedNamesBySize(
    const std::vector<std::pair<std::string, int64_t>>& sized_names,
    int world_size, int rank);

// OwnedNamesBySize with every size equal: name i goes to rank
// i % world_size, counts differ by at most one.
std::vector<std::string> OwnedNames(const std::vector<std::string>& all_names,
                                    int world_size, int rank);

// Joins the owned_tensors of every shard (index = rank) into one map that
// must hold exactly `expected_names`. Errors (DataLoss): a name held by two
// shards (naming both ranks), a name in no shard, a name not expected.
absl::StatusOr<std::map<std::string, at::Tensor>> MergeOwnedTensors(
    const std::vector<ShardState>& shards,
    const std::vector<std::string>& expected_names);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_SHARD_STATE_H_
