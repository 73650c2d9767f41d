// What an update's step does around the optimizer's own rule: clipping the
// gradient by its norm, and the learning-rate schedule's factor applied to
// each parameter group's base rate. The ranks' step (trainer/update_step.h)
// and the update replay (replay/update_replay.h) both step through these.
//
// Thread safety: functions over the caller's parameters and optimizer.
#ifndef RECEIPT_PARITY_OPTIMIZERS_STEP_RULES_H_
#define RECEIPT_PARITY_OPTIMIZERS_STEP_RULES_H_

#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

namespace receipt_parity {

// Clipping by the gradient's norm (config.proto, ClipGradNormConfig).
struct GradientClipping {
  double max_norm = 0;
  // The reduced gradient's norm (true) or each rank's own before the
  // reduction (false: the mistake kept to show it).
  bool global = true;
};

struct ClipOutcome {
  // The L2 norm of every gradient together, and the factor applied
  // (min(1, max_norm / (norm + 1e-6)); 1: not scaled).
  double norm = 0;
  double factor = 1;
};

// torch::nn::utils::clip_grad_norm_ over `parameters`' gradients, in
// place, with its own factor. Throws what LibTorch throws.
ClipOutcome ClipGradients(const std::vector<at::Tensor>& parameters, double max_norm);

// Each parameter group's rate as `optimizer` holds it now: call it on an
// optimizer as it was built, before any rate is set.
std::vector<double> BaseRates(torch::optim::Optimizer& optimizer);

// Sets every group's rate to its base rate times `factor`
// (LearningRateSchedule::Factor of the update) and steps; returns the first
// group's rate. REQUIRES: base_rates from BaseRates of this optimizer.
// Throws what LibTorch throws.
double StepAtRate(torch::optim::Optimizer& optimizer, const std::vector<double>& base_rates,
                  double factor);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_OPTIMIZERS_STEP_RULES_H_
