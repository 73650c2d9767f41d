// The optimizer's per-parameter state as named tensors, so a checkpoint can
// split it over ranks like the parameters, and load it back.
//
// Names: "optimizer/<parameter name>/<buffer>": momentum_buffer (SGD);
// step, exp_avg, exp_avg_sq, max_exp_avg_sq (AdamW). A parameter without
// state yet (before the first step) has no entries.
#ifndef RECEIPT_PARITY_TRAINER_OPTIMIZER_STATE_H_
#define RECEIPT_PARITY_TRAINER_OPTIMIZER_STATE_H_

#include <map>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

// Detached copies. Unimplemented for optimizers other than SGD and AdamW;
// Internal when LibTorch fails.
absl::StatusOr<std::map<std::string, at::Tensor>> OptimizerStateTensors(
    const torch::nn::Module& model, torch::optim::Optimizer& optimizer);

// Replaces the optimizer's state with `tensors` (entries of other prefixes
// are ignored). InvalidArgument naming the entry when a shape differs;
// DataLoss when LibTorch cannot use a saved tensor (e.g. an empty step).
absl::Status RestoreOptimizerState(
    const torch::nn::Module& model, torch::optim::Optimizer& optimizer,
    const std::map<std::string, at::Tensor>& tensors);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_OPTIMIZER_STATE_H_
