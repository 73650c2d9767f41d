// What one rank of a conformance scenario writes for the suite to judge:
// tensors (bitwise, in LibTorch's own serialization through
// checkpoint/shard_state.h), small integers and a message (the error a
// plugin returned), as <folder>/rank-<r>.result.
#ifndef RECEIPT_PARITY_CONFORMANCE_RANK_RESULT_H_
#define RECEIPT_PARITY_CONFORMANCE_RANK_RESULT_H_

#include <cstdint>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

struct RankResult {
  std::map<std::string, at::Tensor> tensors;
  std::map<std::string, int64_t> scalars;
  // Empty when the rank's calls all succeeded.
  std::string message;
};

// Written atomically (io/atomic_file.h). Errors: Internal.
absl::Status WriteRankResult(const std::string& folder, int rank, const RankResult& result);

// NotFound when the rank wrote nothing; DataLoss when it does not parse.
absl::StatusOr<RankResult> ReadRankResult(const std::string& folder, int rank);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_RANK_RESULT_H_
