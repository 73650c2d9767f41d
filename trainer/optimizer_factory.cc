#include "trainer/optimizer_factory.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "absl/strings/str_cat.h"

namespace receipt_parity {

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<at::Tensor> parameters) {
  try {
    if (config.has_sgd()) {
      const SgdConfig& sgd = config.sgd();
      return std::unique_ptr<torch::optim::Optimizer>(
          std::make_unique<torch::optim::SGD>(
              parameters, torch::optim::SGDOptions(sgd.learning_rate())
                              .momentum(sgd.momentum())
                              .weight_decay(sgd.weight_decay())
                              .nesterov(sgd.nesterov())));
    }
    if (config.has_adamw()) {
      const AdamWConfig& adamw = config.adamw();
      return std::unique_ptr<torch::optim::Optimizer>(
          std::make_unique<torch::optim::AdamW>(
              parameters,
              torch::optim::AdamWOptions(adamw.learning_rate())
                  .betas({adamw.beta1() == 0 ? 0.9 : adamw.beta1(),
                          adamw.beta2() == 0 ? 0.999 : adamw.beta2()})
                  .eps(adamw.eps() == 0 ? 1e-8 : adamw.eps())
                  .weight_decay(adamw.weight_decay())));
    }
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer: ", e.what_without_backtrace()));
  }
  return absl::InvalidArgumentError("optimizer: choose sgd or adamw");
}

}  // namespace receipt_parity
