// An example optimizer built as a shared library
// (libmy_rmsprop_optimizer.so): LibTorch's RMSprop, which the built-ins
// lack, selected with
//
//   plugin_library: "path/to/libmy_rmsprop_optimizer.so"
//   optimizer {
//     name: "my_rmsprop"
//     options {
//       [type.googleapis.com/receipt_parity.MyRmspropOptions] { lr: 0.01 momentum: 0.9 }
//     }
//   }
//
// An optimizer plugin (optimizers/optimizer_plugin.h) builds the LibTorch
// optimizer over the model's named parameters and turns its per-parameter
// state into named tensors ("<parameter>/<buffer>") and back, so that
// checkpoints keep it and a resumed run continues bitwise. The run's
// schedule sets each group's rate before every step; the plugin builds
// with the base rate. The library depends on header-only targets and its
// own options.
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/rmsprop.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/plugins/my_rmsprop_options.pb.h"
#include "optimizers/optimizer_plugin.h"
#include "plugins/plugin_factory.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

// The buffers of one parameter's state, by the names checkpoints use.
constexpr const char* kBuffers[] = {"square_avg", "momentum_buffer", "grad_avg"};

void* StateKey(const at::Tensor& parameter) { return parameter.unsafeGetTensorImpl(); }

at::Tensor& Buffer(torch::optim::RMSpropParamState& state, const std::string& name) {
  if (name == "square_avg") return state.square_avg();
  if (name == "momentum_buffer") return state.momentum_buffer();
  return state.grad_avg();
}

// Runs `body`; a LibTorch exception becomes `code` naming it.
template <typename Body>
auto Guarded(absl::StatusCode code, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return absl::Status(code, absl::StrCat("my_rmsprop: LibTorch: ", e.what()));
  }
}

class MyRmsprop : public OptimizerPlugin {
 public:
  explicit MyRmsprop(torch::optim::RMSpropOptions options) : options_(options) {}

  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> Build(
      const std::vector<NamedParameter>& parameters) const override {
    return Guarded(absl::StatusCode::kInvalidArgument,
                   [&]() -> absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> {
                     std::vector<at::Tensor> tensors;
                     for (const NamedParameter& p : parameters) tensors.push_back(p.tensor);
                     return std::unique_ptr<torch::optim::Optimizer>(
                         new torch::optim::RMSprop(tensors, options_));
                   });
  }

  absl::StatusOr<OptimizerState> SaveState(const std::vector<NamedParameter>& parameters,
                                           torch::optim::Optimizer& optimizer) const override {
    return Guarded(absl::StatusCode::kInternal, [&]() -> absl::StatusOr<OptimizerState> {
      OptimizerState saved;
      for (const NamedParameter& p : parameters) {
        auto it = optimizer.state().find(StateKey(p.tensor));
        if (it == optimizer.state().end()) continue;
        auto& state = static_cast<torch::optim::RMSpropParamState&>(*it->second);
        saved[p.name + "/step"] = at::tensor(std::vector<int64_t>{state.step()});
        for (const char* buffer : kBuffers) {
          const at::Tensor& t = Buffer(state, buffer);
          if (t.defined()) saved[p.name + "/" + buffer] = t.detach().clone();
        }
      }
      return saved;
    });
  }

  absl::Status RestoreState(const std::vector<NamedParameter>& parameters,
                            torch::optim::Optimizer& optimizer,
                            const OptimizerState& saved) const override {
    return Guarded(absl::StatusCode::kDataLoss, [&]() -> absl::Status {
      optimizer.state().clear();
      for (const NamedParameter& p : parameters) {
        auto step = saved.find(p.name + "/step");
        if (step == saved.end()) continue;  // no state yet
        auto state = std::make_unique<torch::optim::RMSpropParamState>();
        state->step(step->second.item<int64_t>());
        for (const char* buffer : kBuffers) {
          if (absl::Status s = RestoreBuffer(p, saved, buffer, *state); !s.ok()) return s;
        }
        optimizer.state()[StateKey(p.tensor)] = std::move(state);
      }
      return absl::OkStatus();
    });
  }

 private:
  // Whether these options step with `buffer` (RMSprop keeps a momentum
  // buffer only with momentum, a gradient average only when centered).
  bool Uses(const std::string& buffer) const {
    if (buffer == "momentum_buffer") return options_.momentum() > 0;
    if (buffer == "grad_avg") return options_.centered();
    return true;
  }

  absl::Status RestoreBuffer(const NamedParameter& p, const OptimizerState& saved,
                             const std::string& buffer,
                             torch::optim::RMSpropParamState& state) const {
    const std::string name = p.name + "/" + buffer;
    auto it = saved.find(name);
    if (it == saved.end()) {
      if (!Uses(buffer)) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": missing, and these options step with it (saved with other options?)"));
    }
    if (it->second.sizes() != p.tensor.sizes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": saved shape does not match the parameter's"));
    }
    Buffer(state, buffer) = it->second.to(p.tensor.device(), p.tensor.scalar_type()).clone();
    return absl::OkStatus();
  }

  torch::optim::RMSpropOptions options_;
};

absl::Status Refused(const std::string& option, const std::string& why, double value) {
  return absl::InvalidArgumentError(absl::StrCat(option, ": ", why, ", got ", value));
}

class MyRmspropFactory : public TypedFactory<OptimizerPlugin, MyRmspropOptions> {
 public:
  std::string name() const override { return "my_rmsprop"; }

 private:
  absl::StatusOr<std::unique_ptr<OptimizerPlugin>> CreateTyped(
      const MyRmspropOptions& o) const override {
    torch::optim::RMSpropOptions options(o.has_lr() ? o.lr() : 0.01);
    options.alpha(o.has_alpha() ? o.alpha() : 0.99)
        .eps(o.has_eps() ? o.eps() : 1e-8)
        .momentum(o.momentum())
        .weight_decay(o.weight_decay())
        .centered(o.centered());
    if (!(std::isfinite(options.lr()) && options.lr() > 0)) {
      return Refused("lr", "must be finite and > 0", options.lr());
    }
    if (!(options.alpha() >= 0 && options.alpha() < 1)) {
      return Refused("alpha", "must be in [0, 1)", options.alpha());
    }
    if (!(std::isfinite(options.eps()) && options.eps() > 0)) {
      return Refused("eps", "must be finite and > 0", options.eps());
    }
    for (auto [option, value] : {std::make_pair("momentum", options.momentum()),
                                 std::make_pair("weight_decay", options.weight_decay())}) {
      if (!(std::isfinite(value) && value >= 0)) {
        return Refused(option, "must be finite and >= 0", value);
      }
    }
    return std::unique_ptr<OptimizerPlugin>(new MyRmsprop(options));
  }
};

PluginRegistrar<MyRmspropFactory, OptimizerPlugin> registrar;

}  // namespace
}  // namespace receipt_parity
