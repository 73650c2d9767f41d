#include "trainer/optimizer_state.h"

#include <exception>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {
namespace {

constexpr char kPrefix[] = "optimizer/";

// The key LibTorch's optimizers use for a parameter's state (its
// TensorImpl's address).
void* StateKey(const at::Tensor& parameter) {
  return parameter.unsafeGetTensorImpl();
}

const at::Tensor* Find(const std::map<std::string, at::Tensor>& tensors,
                       const std::string& name) {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

absl::Status CheckShape(const std::string& name, const at::Tensor& saved,
                        const at::Tensor& parameter) {
  if (saved.sizes() != parameter.sizes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": saved shape does not match the parameter's"));
  }
  return absl::OkStatus();
}

// A copy of saved state (read on the CPU) where `parameter` lives.
at::Tensor OnParameterDevice(const at::Tensor& saved, const at::Tensor& parameter) {
  return saved.to(parameter.options(), /*non_blocking=*/false, /*copy=*/true);
}

// RestoreOptimizerState without the conversion of LibTorch's exceptions.
absl::Status RestoreOrThrow(const torch::nn::Module& model,
                            torch::optim::Optimizer& optimizer,
                            const std::map<std::string, at::Tensor>& tensors) {
  auto& state = optimizer.state();
  state.clear();
  const bool sgd = dynamic_cast<torch::optim::SGD*>(&optimizer) != nullptr;
  for (const auto& item : model.named_parameters()) {
    const at::Tensor& p = item.value();
    const std::string base = absl::StrCat(kPrefix, item.key(), "/");
    if (sgd) {
      const at::Tensor* momentum = Find(tensors, base + "momentum_buffer");
      if (momentum == nullptr) continue;
      if (absl::Status s = CheckShape(base + "momentum_buffer", *momentum, p); !s.ok()) {
        return s;
      }
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(OnParameterDevice(*momentum, p));
      state[StateKey(p)] = std::move(s);
      continue;
    }
    const at::Tensor* step = Find(tensors, base + "step");
    const at::Tensor* exp_avg = Find(tensors, base + "exp_avg");
    const at::Tensor* exp_avg_sq = Find(tensors, base + "exp_avg_sq");
    if (step == nullptr || exp_avg == nullptr || exp_avg_sq == nullptr) continue;
    for (auto [name, t] : {std::make_pair("exp_avg", exp_avg),
                           std::make_pair("exp_avg_sq", exp_avg_sq)}) {
      if (absl::Status s = CheckShape(base + name, *t, p); !s.ok()) return s;
    }
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(step->item<int64_t>());
    s->exp_avg(OnParameterDevice(*exp_avg, p));
    s->exp_avg_sq(OnParameterDevice(*exp_avg_sq, p));
    if (const at::Tensor* max_sq = Find(tensors, base + "max_exp_avg_sq")) {
      s->max_exp_avg_sq(OnParameterDevice(*max_sq, p));
    }
    state[StateKey(p)] = std::move(s);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, at::Tensor>> OptimizerStateTensors(
    const torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  std::map<std::string, at::Tensor> out;
  auto& state = optimizer.state();
  const bool sgd = dynamic_cast<torch::optim::SGD*>(&optimizer) != nullptr;
  const bool adamw = dynamic_cast<torch::optim::AdamW*>(&optimizer) != nullptr;
  if (!sgd && !adamw) {
    return absl::UnimplementedError("checkpoint: only SGD and AdamW state is saved");
  }
  try {
    for (const auto& item : model.named_parameters()) {
      auto it = state.find(StateKey(item.value()));
      if (it == state.end()) continue;
      const std::string base = absl::StrCat(kPrefix, item.key(), "/");
      if (sgd) {
        auto& s = static_cast<torch::optim::SGDParamState&>(*it->second);
        if (s.momentum_buffer().defined()) {
          out[base + "momentum_buffer"] = s.momentum_buffer().detach().clone();
        }
      } else {
        auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
        out[base + "step"] = at::tensor(std::vector<int64_t>{s.step()});
        out[base + "exp_avg"] = s.exp_avg().detach().clone();
        out[base + "exp_avg_sq"] = s.exp_avg_sq().detach().clone();
        if (s.max_exp_avg_sq().defined()) {
          out[base + "max_exp_avg_sq"] = s.max_exp_avg_sq().detach().clone();
        }
      }
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "optimizer state: LibTorch");
  }
  return out;
}

absl::Status RestoreOptimizerState(
    const torch::nn::Module& model, torch::optim::Optimizer& optimizer,
    const std::map<std::string, at::Tensor>& tensors) {
  try {
    return RestoreOrThrow(model, optimizer, tensors);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "optimizer state: LibTorch",
                                 absl::StatusCode::kDataLoss);
  }
}

}  // namespace receipt_parity
