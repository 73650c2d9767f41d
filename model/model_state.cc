#include "model/model_state.h"

#include <exception>

#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {
namespace {

// Copies each of `tensors` ("parameter" or "buffer" in errors) from
// state[prefix + name], in place.
absl::Status LoadNamed(const torch::OrderedDict<std::string, at::Tensor>& tensors,
                       const std::string& prefix, const char* what,
                       const std::map<std::string, at::Tensor>& state) {
  torch::NoGradGuard no_grad;
  for (const auto& item : tensors) {
    auto it = state.find(prefix + item.key());
    if (it == state.end()) {
      return absl::DataLossError(absl::StrCat("checkpoint lacks ", what, " ", item.key()));
    }
    if (it->second.sizes() != item.value().sizes()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", what, " ", item.key(), " has another shape"));
    }
    item.value().copy_(it->second);
  }
  return absl::OkStatus();
}

}  // namespace

std::map<std::string, at::Tensor> ModelStateByName(Classifier& model) {
  std::map<std::string, at::Tensor> state;
  for (const auto& item : model.named_parameters()) {
    state[kModelParameterPrefix + item.key()] = item.value().detach();
  }
  for (const auto& item : model.named_buffers()) {
    state[kModelBufferPrefix + item.key()] = item.value().detach();
  }
  return state;
}

absl::Status LoadModelState(Classifier& model,
                            const std::map<std::string, at::Tensor>& state) {
  try {
    if (absl::Status s =
            LoadNamed(model.named_parameters(), kModelParameterPrefix, "parameter", state);
        !s.ok()) {
      return s;
    }
    return LoadNamed(model.named_buffers(), kModelBufferPrefix, "buffer", state);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "checkpoint parameters: LibTorch",
                                 absl::StatusCode::kDataLoss);
  }
}

}  // namespace receipt_parity
