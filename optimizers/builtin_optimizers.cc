#include "optimizers/builtin_optimizers.h"

#include <cmath>
#include <exception>
#include <string>

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {
namespace {

// PyTorch's defaults (torch.optim, 2.x).
constexpr double kDefaultLr = 1e-3;
constexpr double kDefaultBeta1 = 0.9;
constexpr double kDefaultBeta2 = 0.999;
constexpr double kDefaultEps = 1e-8;
constexpr double kAdamWDefaultWeightDecay = 0.01;

absl::Status Refused(const std::string& option, const std::string& why, double value) {
  return absl::InvalidArgumentError(absl::StrCat(option, ": ", why, ", got ", value));
}

absl::Status CheckPositive(const std::string& option, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return Refused(option, "must be finite and > 0", value);
}

absl::Status CheckNonNegative(const std::string& option, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return Refused(option, "must be finite and >= 0", value);
}

absl::Status CheckBeta(const std::string& option, double value) {
  if (std::isfinite(value) && value >= 0 && value < 1) return absl::OkStatus();
  return Refused(option, "must be in [0, 1)", value);
}

// The key LibTorch's optimizers use for a parameter's state (its
// TensorImpl's address).
void* StateKey(const at::Tensor& parameter) { return parameter.unsafeGetTensorImpl(); }

const at::Tensor* Find(const OptimizerState& state, const std::string& name) {
  auto it = state.find(name);
  return it == state.end() ? nullptr : &it->second;
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

// `Torch` over `parameters` in one group, or in two (with and without
// weight decay) when biases and norms are excluded.
template <typename Torch, typename TorchOptions>
absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildGroups(
    const std::vector<NamedParameter>& parameters, const TorchOptions& options,
    bool exclude_biases_and_norms) {
  try {
    auto [decay, no_decay] = WeightDecayGroups(parameters, exclude_biases_and_norms);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!decay.empty()) {
      groups.emplace_back(decay, std::make_unique<TorchOptions>(options));
    }
    if (!no_decay.empty()) {
      auto without = std::make_unique<TorchOptions>(options);
      without->weight_decay(0);
      groups.emplace_back(no_decay, std::move(without));
    }
    return std::unique_ptr<torch::optim::Optimizer>(std::make_unique<Torch>(groups, options));
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "optimizer: LibTorch", absl::StatusCode::kInvalidArgument);
  }
}

// Adam's and AdamW's state (their ParamState types have the same fields).
template <typename ParamState>
OptimizerState SaveAdamState(const std::vector<NamedParameter>& parameters,
                             torch::optim::Optimizer& optimizer) {
  OptimizerState out;
  auto& state = optimizer.state();
  for (const NamedParameter& p : parameters) {
    auto it = state.find(StateKey(p.tensor));
    if (it == state.end()) continue;
    auto& s = static_cast<ParamState&>(*it->second);
    const std::string base = p.name + "/";
    out[base + "step"] = at::tensor(std::vector<int64_t>{s.step()});
    out[base + "exp_avg"] = s.exp_avg().detach().clone();
    out[base + "exp_avg_sq"] = s.exp_avg_sq().detach().clone();
    if (s.max_exp_avg_sq().defined()) {
      out[base + "max_exp_avg_sq"] = s.max_exp_avg_sq().detach().clone();
    }
  }
  return out;
}

// InvalidArgument when `amsgrad` needs the running maximum that a state
// saved without amsgrad lacks (LibTorch's step would fail on it).
template <typename ParamState>
absl::Status RestoreAdamState(const std::vector<NamedParameter>& parameters,
                              torch::optim::Optimizer& optimizer,
                              const OptimizerState& saved, bool amsgrad) {
  auto& state = optimizer.state();
  state.clear();
  for (const NamedParameter& p : parameters) {
    const std::string base = p.name + "/";
    const at::Tensor* step = Find(saved, base + "step");
    const at::Tensor* exp_avg = Find(saved, base + "exp_avg");
    const at::Tensor* exp_avg_sq = Find(saved, base + "exp_avg_sq");
    if (step == nullptr || exp_avg == nullptr || exp_avg_sq == nullptr) continue;
    for (auto [name, t] : {std::make_pair("exp_avg", exp_avg),
                           std::make_pair("exp_avg_sq", exp_avg_sq)}) {
      if (absl::Status s = CheckShape(base + name, *t, p.tensor); !s.ok()) return s;
    }
    auto s = std::make_unique<ParamState>();
    s->step(step->item<int64_t>());
    s->exp_avg(OnParameterDevice(*exp_avg, p.tensor));
    s->exp_avg_sq(OnParameterDevice(*exp_avg_sq, p.tensor));
    if (const at::Tensor* max_sq = Find(saved, base + "max_exp_avg_sq")) {
      if (absl::Status c = CheckShape(base + "max_exp_avg_sq", *max_sq, p.tensor); !c.ok()) {
        return c;
      }
      s->max_exp_avg_sq(OnParameterDevice(*max_sq, p.tensor));
    } else if (amsgrad) {
      return absl::InvalidArgumentError(absl::StrCat(
          base, "max_exp_avg_sq: missing; amsgrad needs the running maximum of "
          "exp_avg_sq, and this state was saved without amsgrad"));
    }
    state[StateKey(p.tensor)] = std::move(s);
  }
  return absl::OkStatus();
}

// Runs `body`, LibTorch's exceptions as a Status of `code`.
template <typename Body>
auto Guarded(absl::StatusCode code, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "optimizer state: LibTorch", code);
  }
}

absl::StatusOr<AdamOptions> CheckedAdam(AdamOptions o, double default_weight_decay) {
  if (!o.has_lr()) o.set_lr(kDefaultLr);
  if (!o.has_beta1()) o.set_beta1(kDefaultBeta1);
  if (!o.has_beta2()) o.set_beta2(kDefaultBeta2);
  if (!o.has_eps()) o.set_eps(kDefaultEps);
  if (!o.has_weight_decay()) o.set_weight_decay(default_weight_decay);
  if (!o.has_amsgrad()) o.set_amsgrad(false);
  for (absl::Status s : {CheckPositive("lr", o.lr()), CheckBeta("beta1", o.beta1()),
                         CheckBeta("beta2", o.beta2()), CheckPositive("eps", o.eps()),
                         CheckNonNegative("weight_decay", o.weight_decay())}) {
    if (!s.ok()) return s;
  }
  return o;
}

}  // namespace

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> WeightDecayGroups(
    const std::vector<NamedParameter>& parameters, bool exclude_biases_and_norms) {
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> groups;
  for (const NamedParameter& p : parameters) {
    const bool no_decay = exclude_biases_and_norms && p.tensor.dim() <= 1;
    (no_decay ? groups.second : groups.first).push_back(p.tensor);
  }
  return groups;
}

absl::StatusOr<std::unique_ptr<SgdOptimizer>> SgdOptimizer::Create(const SgdOptions& options) {
  SgdOptions o = options;
  if (!o.has_lr()) o.set_lr(kDefaultLr);
  if (!o.has_momentum()) o.set_momentum(0);
  if (!o.has_dampening()) o.set_dampening(0);
  if (!o.has_weight_decay()) o.set_weight_decay(0);
  if (!o.has_nesterov()) o.set_nesterov(false);
  for (absl::Status s : {CheckPositive("lr", o.lr()), CheckNonNegative("momentum", o.momentum()),
                         CheckNonNegative("dampening", o.dampening()),
                         CheckNonNegative("weight_decay", o.weight_decay())}) {
    if (!s.ok()) return s;
  }
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nesterov: needs momentum > 0 and dampening 0, got momentum ", o.momentum(),
        " and dampening ", o.dampening()));
  }
  return std::unique_ptr<SgdOptimizer>(new SgdOptimizer(std::move(o)));
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> SgdOptimizer::Build(
    const std::vector<NamedParameter>& parameters) const {
  const torch::optim::SGDOptions torch_options =
      torch::optim::SGDOptions(options_.lr())
          .momentum(options_.momentum())
          .dampening(options_.dampening())
          .weight_decay(options_.weight_decay())
          .nesterov(options_.nesterov());
  return BuildGroups<torch::optim::SGD>(parameters, torch_options,
                                        options_.weight_decay_excludes_biases_and_norms());
}

absl::StatusOr<OptimizerState> SgdOptimizer::SaveState(
    const std::vector<NamedParameter>& parameters, torch::optim::Optimizer& optimizer) const {
  return Guarded(absl::StatusCode::kInternal, [&]() -> absl::StatusOr<OptimizerState> {
    OptimizerState out;
    auto& state = optimizer.state();
    for (const NamedParameter& p : parameters) {
      auto it = state.find(StateKey(p.tensor));
      if (it == state.end()) continue;
      auto& s = static_cast<torch::optim::SGDParamState&>(*it->second);
      if (s.momentum_buffer().defined()) {
        out[p.name + "/momentum_buffer"] = s.momentum_buffer().detach().clone();
      }
    }
    return out;
  });
}

absl::Status SgdOptimizer::RestoreState(const std::vector<NamedParameter>& parameters,
                                        torch::optim::Optimizer& optimizer,
                                        const OptimizerState& saved) const {
  return Guarded(absl::StatusCode::kDataLoss, [&]() -> absl::Status {
    auto& state = optimizer.state();
    state.clear();
    for (const NamedParameter& p : parameters) {
      const std::string name = p.name + "/momentum_buffer";
      const at::Tensor* momentum = Find(saved, name);
      if (momentum == nullptr) continue;
      if (absl::Status s = CheckShape(name, *momentum, p.tensor); !s.ok()) return s;
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(OnParameterDevice(*momentum, p.tensor));
      state[StateKey(p.tensor)] = std::move(s);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::unique_ptr<AdamOptimizer>> AdamOptimizer::Create(
    const AdamOptions& options) {
  absl::StatusOr<AdamOptions> checked = CheckedAdam(options, /*default_weight_decay=*/0);
  if (!checked.ok()) return checked.status();
  return std::unique_ptr<AdamOptimizer>(new AdamOptimizer(*std::move(checked), false));
}

absl::StatusOr<std::unique_ptr<AdamOptimizer>> AdamOptimizer::Create(
    const AdamWOptions& options) {
  AdamOptions same;
  // The two messages have the same fields, by number.
  same.ParseFromString(options.SerializeAsString());
  absl::StatusOr<AdamOptions> checked = CheckedAdam(same, kAdamWDefaultWeightDecay);
  if (!checked.ok()) return checked.status();
  return std::unique_ptr<AdamOptimizer>(new AdamOptimizer(*std::move(checked), true));
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> AdamOptimizer::Build(
    const std::vector<NamedParameter>& parameters) const {
  const bool exclude = options_.weight_decay_excludes_biases_and_norms();
  if (decoupled_) {
    return BuildGroups<torch::optim::AdamW>(
        parameters,
        torch::optim::AdamWOptions(options_.lr())
            .betas({options_.beta1(), options_.beta2()})
            .eps(options_.eps())
            .weight_decay(options_.weight_decay())
            .amsgrad(options_.amsgrad()),
        exclude);
  }
  return BuildGroups<torch::optim::Adam>(parameters,
                                         torch::optim::AdamOptions(options_.lr())
                                             .betas({options_.beta1(), options_.beta2()})
                                             .eps(options_.eps())
                                             .weight_decay(options_.weight_decay())
                                             .amsgrad(options_.amsgrad()),
                                         exclude);
}

absl::StatusOr<OptimizerState> AdamOptimizer::SaveState(
    const std::vector<NamedParameter>& parameters, torch::optim::Optimizer& optimizer) const {
  return Guarded(absl::StatusCode::kInternal, [&]() -> absl::StatusOr<OptimizerState> {
    return decoupled_ ? SaveAdamState<torch::optim::AdamWParamState>(parameters, optimizer)
                      : SaveAdamState<torch::optim::AdamParamState>(parameters, optimizer);
  });
}

absl::Status AdamOptimizer::RestoreState(const std::vector<NamedParameter>& parameters,
                                         torch::optim::Optimizer& optimizer,
                                         const OptimizerState& saved) const {
  return Guarded(absl::StatusCode::kDataLoss, [&]() -> absl::Status {
    return decoupled_
               ? RestoreAdamState<torch::optim::AdamWParamState>(parameters, optimizer, saved,
                                                                 options_.amsgrad())
               : RestoreAdamState<torch::optim::AdamParamState>(parameters, optimizer, saved,
                                                                options_.amsgrad());
  });
}

}  // namespace receipt_parity
