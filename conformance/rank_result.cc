#include "conformance/rank_result.h"

#include <filesystem>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "checkpoint/shard_state.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

constexpr char kMessage[] = "message";

std::string ResultPath(const std::string& folder, int rank) {
  return absl::StrCat(folder, "/rank-", rank, ".result");
}

}  // namespace

absl::Status WriteRankResult(const std::string& folder, int rank, const RankResult& result) {
  ShardState state;
  state.owned_tensors = result.tensors;
  state.scalars = result.scalars;
  state.rank_tensors[kMessage] =
      at::tensor(std::vector<uint8_t>(result.message.begin(), result.message.end()),
                 at::kByte);
  absl::StatusOr<std::string> bytes = SerializeShardState(state);
  if (!bytes.ok()) return bytes.status();
  return WriteFileAtomically(ResultPath(folder, rank), *bytes);
}

absl::StatusOr<RankResult> ReadRankResult(const std::string& folder, int rank) {
  const std::string path = ResultPath(folder, rank);
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat("rank ", rank, " wrote no result"));
  }
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<ShardState> state = DeserializeShardState(*bytes, path);
  if (!state.ok()) return state.status();
  RankResult result;
  result.tensors = std::move(state->owned_tensors);
  result.scalars = std::move(state->scalars);
  auto message = state->rank_tensors.find(kMessage);
  if (message != state->rank_tensors.end() && message->second.numel() > 0) {
    const at::Tensor bytes_tensor = message->second.contiguous();
    const auto* data = bytes_tensor.data_ptr<uint8_t>();
    result.message.assign(data, data + bytes_tensor.numel());
  }
  return result;
}

}  // namespace receipt_parity
