// The configured optimizer over a model's parameters.
#ifndef RECEIPT_PARITY_TRAINER_OPTIMIZER_FACTORY_H_
#define RECEIPT_PARITY_TRAINER_OPTIMIZER_FACTORY_H_

#include <memory>
#include <vector>

#include <torch/optim/optimizer.h>

#include "absl/status/statusor.h"
#include "config/config.pb.h"

namespace receipt_parity {

// SGD (momentum, weight decay, nesterov) or AdamW (betas default 0.9 and
// 0.999, eps 1e-8 when left at 0). REQUIRES: a validated config.
absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<at::Tensor> parameters);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_OPTIMIZER_FACTORY_H_
