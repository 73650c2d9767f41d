// The optimizer plugin kind: how the reduced gradient updates the
// parameters, and the per-parameter state a checkpoint keeps.
//
// A plugin builds a LibTorch optimizer over the model's named parameters
// (in registration order) and turns that optimizer's per-parameter state
// into named tensors and back: "<parameter name>/<buffer>". A checkpoint
// splits those tensors over ranks like the parameters (prefixed
// "optimizer/", checkpointing/run_checkpoints.h) and a resumed run restores them,
// so it continues bitwise where the uninterrupted run would be.
//
// The learning rate a plugin builds with is each parameter group's base
// rate; the run's schedule (schedules/lr_schedule.h) sets every group's
// rate to base * factor(update) before each step, so nothing else may
// change a group's rate.
//
// Built-ins (optimizers/builtin_optimizers.h): sgd, adam, adamw, with
// PyTorch's defaults and meanings. A team's optimizer can be a shared
// library (plugins/plugin_library.h) implementing this interface.
//
// Thread safety: a plugin is immutable; its methods may be called
// concurrently on different optimizers.
#ifndef RECEIPT_PARITY_OPTIMIZERS_OPTIMIZER_PLUGIN_H_
#define RECEIPT_PARITY_OPTIMIZERS_OPTIMIZER_PLUGIN_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

struct NamedParameter {
  std::string name;
  at::Tensor tensor;
};

// "<parameter name>/<buffer>" -> the buffer (detached copies when saved).
using OptimizerState = std::map<std::string, at::Tensor>;

// `module`'s parameters by name, in registration order (the same tensors,
// not copies).
inline std::vector<NamedParameter> NamedParametersOf(const torch::nn::Module& module) {
  std::vector<NamedParameter> parameters;
  for (const auto& item : module.named_parameters()) {
    parameters.push_back({item.key(), item.value()});
  }
  return parameters;
}

class OptimizerPlugin {
 public:
  static constexpr char kKind[] = "optimizer";

  virtual ~OptimizerPlugin() = default;

  // A new optimizer over `parameters` (leaves of one model, in its
  // registration order), without state. Errors: InvalidArgument for what
  // LibTorch refuses.
  virtual absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> Build(
      const std::vector<NamedParameter>& parameters) const = 0;

  // `optimizer`'s per-parameter state (a parameter without state yet has no
  // entries). REQUIRES: `optimizer` was built by this plugin over
  // `parameters`. Errors: Internal when LibTorch fails.
  virtual absl::StatusOr<OptimizerState> SaveState(
      const std::vector<NamedParameter>& parameters,
      torch::optim::Optimizer& optimizer) const = 0;

  // Replaces `optimizer`'s state with `state` (what SaveState gave, perhaps
  // from another process). InvalidArgument naming the entry when a buffer's
  // shape is not its parameter's; DataLoss when LibTorch cannot use a saved
  // tensor. REQUIRES: as SaveState.
  virtual absl::Status RestoreState(const std::vector<NamedParameter>& parameters,
                                    torch::optim::Optimizer& optimizer,
                                    const OptimizerState& state) const = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_OPTIMIZERS_OPTIMIZER_PLUGIN_H_
