#include "artifacts/first_step_record.h"

#include <exception>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "samplers/micro_batches.h"

namespace receipt_parity {
namespace {

NamedTensors Snapshot(const torch::nn::Module& model, bool gradients) {
  NamedTensors out;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const at::Tensor& source =
        gradients ? item.value().grad() : item.value();
    out.emplace_back(item.key(), source.detach().clone());
  }
  return out;
}

}  // namespace

void RecordBatch(const EpochPlan& plan, int64_t update,
                 const std::vector<std::string>& receipt_ids, int micro_batches,
                 FirstStep* record) {
  for (int r = 0; r < plan.world_size(); ++r) {
    RankBatch* batch = record->add_batch();
    batch->set_rank(r);
    const DealtSlots slots = plan.UpdateSlots(r, update);
    for (size_t i = 0; i < slots.size(); ++i) {
      batch->add_receipt_ids(receipt_ids[slots[i].dataset_index]);
      batch->add_dataset_indices(static_cast<int32_t>(slots[i].dataset_index));
      batch->add_valid(slots[i].valid);
      batch->add_micro_batch(MicroBatchOf(static_cast<int64_t>(i), plan.local_batch()[r],
                                          micro_batches));
    }
  }
}

NamedTensors SnapshotParameters(const torch::nn::Module& model) {
  return Snapshot(model, /*gradients=*/false);
}

NamedTensors SnapshotGradients(const torch::nn::Module& model) {
  return Snapshot(model, /*gradients=*/true);
}

void StoreNamedTensors(const NamedTensors& tensors,
                       google::protobuf::Map<std::string, NamedTensor>* out) {
  for (const auto& [name, tensor] : tensors) {
    NamedTensor& entry = (*out)[name];
    entry.clear_shape();
    entry.clear_values();
    for (int64_t d : tensor.sizes()) entry.add_shape(static_cast<int32_t>(d));
    at::Tensor flat = tensor.to(at::kCPU, at::kFloat).contiguous().view(-1);
    const float* data = flat.data_ptr<float>();
    entry.mutable_values()->Add(data, data + flat.numel());
  }
}

absl::StatusOr<NamedTensors> LoadNamedTensors(
    const google::protobuf::Map<std::string, NamedTensor>& map,
    const std::vector<std::string>& names) {
  NamedTensors out;
  for (const std::string& name : names) {
    auto it = map.find(name);
    if (it == map.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", name, "' is missing"));
    }
    std::vector<int64_t> shape(it->second.shape().begin(),
                               it->second.shape().end());
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (numel != it->second.values_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", name, "' has ", it->second.values_size(),
          " values for a shape of ", numel));
    }
    try {
      at::Tensor t = at::empty(shape, at::kFloat);
      std::copy(it->second.values().begin(), it->second.values().end(),
                t.data_ptr<float>());
      out.emplace_back(name, t);
    } catch (const std::exception& e) {
      return LibTorchErrorToStatus(
          e, absl::StrCat("parameter '", name, "': LibTorch"),
          absl::StatusCode::kInvalidArgument);
    }
  }
  return out;
}

}  // namespace receipt_parity
