#include "checkpoint/shard_state.h"

#include <c10/util/hash.h>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <exception>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "logging/glog.h"

namespace receipt_parity {
namespace {

// Archive keys: part of the shard format.
constexpr char kVersionKey[] = "shard_state_version";
constexpr int64_t kVersion = 1;
constexpr char kOwnedKey[] = "owned_tensors";
constexpr char kRankKey[] = "rank_tensors";
constexpr char kScalarsKey[] = "scalars";

c10::IValue TensorDict(const std::map<std::string, at::Tensor>& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor.detach());
  return dict;
}

// Reads archive[key] as a dict of str -> tensor; throws on any mismatch.
std::map<std::string, at::Tensor> ReadTensorDict(
    torch::serialize::InputArchive& archive, const char* key) {
  c10::IValue value;
  archive.read(key, value);
  TORCH_CHECK(value.isGenericDict(), key, " is not a dict");
  std::map<std::string, at::Tensor> tensors;
  for (const auto& entry : value.toGenericDict()) {
    TORCH_CHECK(entry.key().isString() && entry.value().isTensor(), key,
                " holds a non-tensor entry");
    tensors.emplace(entry.key().toStringRef(), entry.value().toTensor());
  }
  return tensors;
}

}  // namespace

absl::StatusOr<std::string> SerializeShardState(const ShardState& state) {
  try {
    torch::serialize::OutputArchive archive;
    archive.write(kVersionKey, c10::IValue(kVersion));
    archive.write(kOwnedKey, TensorDict(state.owned_tensors));
    archive.write(kRankKey, TensorDict(state.rank_tensors));
    c10::Dict<std::string, int64_t> scalars;
    for (const auto& [name, value] : state.scalars) scalars.insert(name, value);
    archive.write(kScalarsKey, c10::IValue(scalars));
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("cannot serialize shard state: ", e.what()));
  }
}

std::string ReplicaHash(const ShardState& state) {
  std::string bytes;
  for (const auto& [name, tensor] : state.owned_tensors) {
    const at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    absl::StrAppend(&bytes, name, ":", c10::toString(t.scalar_type()), "[",
                    absl::StrJoin(t.sizes(), ","), "]");
    bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  for (const auto& [name, value] : state.scalars) absl::StrAppend(&bytes, name, "=", value, ";");
  return c10::sha1(bytes).str();
}

absl::StatusOr<ShardState> DeserializeShardState(absl::string_view bytes,
                                                 absl::string_view shard_name) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    c10::IValue version;
    archive.read(kVersionKey, version);
    TORCH_CHECK(version.isInt() && version.toInt() == kVersion,
                "unsupported shard_state_version");
    ShardState state;
    state.owned_tensors = ReadTensorDict(archive, kOwnedKey);
    state.rank_tensors = ReadTensorDict(archive, kRankKey);
    c10::IValue scalars;
    archive.read(kScalarsKey, scalars);
    TORCH_CHECK(scalars.isGenericDict(), "scalars is not a dict");
    for (const auto& entry : scalars.toGenericDict()) {
      TORCH_CHECK(entry.key().isString() && entry.value().isInt(),
                  "scalars holds a non-integer entry");
      state.scalars.emplace(entry.key().toStringRef(), entry.value().toInt());
    }
    return state;
  } catch (const std::exception& e) {
    // c10::Error::what() carries a C++ backtrace; the first line suffices.
    std::string message = e.what();
    message = message.substr(0, message.find('\n'));
    return absl::DataLossError(absl::StrCat(
        "shard ", shard_name, " is not a readable shard state: ", message));
  }
}

std::vector<std::string> OwnedNamesBySize(
    const std::vector<std::pair<std::string, int64_t>>& sized_names,
    int world_size, int rank) {
  CHECK(world_size >= 1 && rank >= 0 && rank < world_size)
      << "OwnedNames: rank " << rank << " outside world size " << world_size;
  std::vector<size_t> order(sized_names.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sized_names[a].second > sized_names[b].second;
  });
  std::vector<int64_t> load(static_cast<size_t>(world_size), 0);
  std::vector<int> owner(sized_names.size(), 0);
  for (size_t i : order) {
    const int least = static_cast<int>(
        std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = least;
    load[least] += sized_names[i].second;
  }
  std::vector<std::string> owned;
  for (size_t i = 0; i < sized_names.size(); ++i) {
    if (owner[i] == rank) owned.push_back(sized_names[i].first);
  }
  return owned;
}

std::vector<std::string> OwnedNames(const std::vector<std::string>& all_names,
                                    int world_size, int rank) {
  std::vector<std::pair<std::string, int64_t>> sized;
  for (const std::string& name : all_names) sized.emplace_back(name, 1);
  return OwnedNamesBySize(sized, world_size, rank);
}

absl::StatusOr<std::map<std::string, at::Tensor>> MergeOwnedTensors(
    const std::vector<ShardState>& shards,
    const std::vector<std::string>& expected_names) {
  std::map<std::string, at::Tensor> merged;
  std::map<std::string, size_t> owner;
  for (size_t rank = 0; rank < shards.size(); ++rank) {
    for (const auto& [name, tensor] : shards[rank].owned_tensors) {
      auto [it, inserted] = owner.emplace(name, rank);
      if (!inserted) {
        return absl::DataLossError(
            absl::StrCat("\"", name, "\" is in the shards of rank ", it->second,
                         " and rank ", rank));
      }
      merged.emplace(name, tensor);
    }
  }
  for (const std::string& name : expected_names) {
    if (owner.erase(name) == 0) {
      return absl::DataLossError(
          absl::StrCat("\"", name, "\" is in no shard of ", shards.size()));
    }
  }
  if (!owner.empty()) {
    return absl::DataLossError(
        absl::StrCat("shard of rank ", owner.begin()->second,
                     " holds unexpected \"", owner.begin()->first, "\""));
  }
  return merged;
}

}  // namespace receipt_parity
