// The built-in optimizer plugins (optimizers/optimizer_plugin.h): LibTorch's
// SGD, Adam and AdamW with PyTorch's defaults and meanings
// (optimizers/optimizer_options.proto).
//
// State buffers, by "<parameter>/<buffer>": momentum_buffer (sgd, once a
// step with momentum ran); step, exp_avg, exp_avg_sq and, with amsgrad,
// max_exp_avg_sq (adam, adamw). These are the names checkpoints have always
// used, so generations saved before the optimizer became a plugin resume.
//
// Parameter groups: with weight_decay_excludes_biases_and_norms, parameters
// of at most one dimension (biases, norm layers' weights and biases) form a
// second group without weight decay; the first keeps the rest.
//
// Thread safety: immutable after Create.
#ifndef RECEIPT_PARITY_OPTIMIZERS_BUILTIN_OPTIMIZERS_H_
#define RECEIPT_PARITY_OPTIMIZERS_BUILTIN_OPTIMIZERS_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizers/optimizer_options.pb.h"
#include "optimizers/optimizer_plugin.h"

namespace receipt_parity {

// `parameters` split for weight decay: (with decay, without), in order.
// Without `exclude_biases_and_norms` every parameter has decay.
std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> WeightDecayGroups(
    const std::vector<NamedParameter>& parameters, bool exclude_biases_and_norms);

class SgdOptimizer : public OptimizerPlugin {
 public:
  static constexpr char kName[] = "sgd";

  // `options` with PyTorch's defaults for the fields left out. Errors:
  // InvalidArgument starting with the option's name for a value that is
  // not finite or out of range, and for nesterov without momentum > 0 and
  // dampening 0.
  static absl::StatusOr<std::unique_ptr<SgdOptimizer>> Create(const SgdOptions& options);

  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> Build(
      const std::vector<NamedParameter>& parameters) const override;
  absl::StatusOr<OptimizerState> SaveState(const std::vector<NamedParameter>& parameters,
                                           torch::optim::Optimizer& optimizer) const override;
  absl::Status RestoreState(const std::vector<NamedParameter>& parameters,
                            torch::optim::Optimizer& optimizer,
                            const OptimizerState& state) const override;

  // The options as used: every field set.
  const SgdOptions& options() const { return options_; }

 private:
  explicit SgdOptimizer(SgdOptions options) : options_(std::move(options)) {}

  SgdOptions options_;
};

// adam (weight decay as an L2 penalty) and adamw (decoupled weight decay).
class AdamOptimizer : public OptimizerPlugin {
 public:
  static constexpr char kAdamName[] = "adam";
  static constexpr char kAdamWName[] = "adamw";

  // With PyTorch's defaults for the fields left out (AdamW's weight decay
  // 0.01). Errors: InvalidArgument starting with the option's name.
  static absl::StatusOr<std::unique_ptr<AdamOptimizer>> Create(const AdamOptions& options);
  static absl::StatusOr<std::unique_ptr<AdamOptimizer>> Create(const AdamWOptions& options);

  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> Build(
      const std::vector<NamedParameter>& parameters) const override;
  absl::StatusOr<OptimizerState> SaveState(const std::vector<NamedParameter>& parameters,
                                           torch::optim::Optimizer& optimizer) const override;
  absl::Status RestoreState(const std::vector<NamedParameter>& parameters,
                            torch::optim::Optimizer& optimizer,
                            const OptimizerState& state) const override;

  // The options as used, every field set (AdamW's are AdamOptions too).
  const AdamOptions& options() const { return options_; }
  // adamw's decoupled weight decay.
  bool decoupled() const { return decoupled_; }

 private:
  AdamOptimizer(AdamOptions options, bool decoupled)
      : options_(std::move(options)), decoupled_(decoupled) {}

  AdamOptions options_;
  bool decoupled_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_OPTIMIZERS_BUILTIN_OPTIMIZERS_H_
