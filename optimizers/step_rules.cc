#include "optimizers/step_rules.h"

#include <algorithm>

#include <torch/nn/utils/clip_grad.h>

namespace receipt_parity {

ClipOutcome ClipGradients(const std::vector<at::Tensor>& parameters, double max_norm) {
  ClipOutcome outcome;
  outcome.norm = torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  // clip_grad_norm_'s own factor (it scales only when this is below 1).
  outcome.factor = std::min(1.0, max_norm / (outcome.norm + 1e-6));
  return outcome;
}

std::vector<double> BaseRates(torch::optim::Optimizer& optimizer) {
  std::vector<double> rates;
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    rates.push_back(group.options().get_lr());
  }
  return rates;
}

double StepAtRate(torch::optim::Optimizer& optimizer, const std::vector<double>& base_rates,
                  double factor) {
  std::vector<torch::optim::OptimizerParamGroup>& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(base_rates[g] * factor);
  optimizer.step();
  return base_rates.empty() ? 0 : base_rates[0] * factor;
}

}  // namespace receipt_parity
