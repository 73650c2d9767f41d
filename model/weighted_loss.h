// One rank's share of an update: forward, per-example cross-entropy,
// weighted sum, backward.
//
// The weights come from a loss weighting plugin (weighting/), so with
// `global_count` the loss is sum_i loss_i / |A| where A is the update's
// accepted examples on ALL ranks.
#ifndef RECEIPT_PARITY_MODEL_WEIGHTED_LOSS_H_
#define RECEIPT_PARITY_MODEL_WEIGHTED_LOSS_H_

#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "model/classifier.h"

namespace receipt_parity {

struct WeightedBackwardResult {
  // sum_i w_i * loss_i (this rank's contribution to the update's loss).
  double weighted_loss = 0;
  // sum_i loss_i over the examples with a non-zero weight (the accepted
  // ones: a masked slot weighs zero), whatever the weighting: with the
  // update's accepted count, the update's mean loss, the one quantity every
  // weighting and reducer agree on.
  double accepted_loss_sum = 0;
};

// Where a backward starts: from zero gradients (in place), or adding to the
// gradients there (the micro-batches of an update after its first).
enum class GradientStart { kZero, kAccumulate };

// Sets every parameter's gradient to the gradient of sum_i w_i * loss_i
// (kZero), or adds that gradient to it (kAccumulate). Afterwards every
// parameter has a defined gradient (zeros for an empty batch or all-zero
// weights), as a reducer requires. With `bf16`, the forward pass and the
// loss run under bfloat16 autocast (model/autocast_scope.h) and the
// backward outside it: the weights and gradients stay fp32. The forward is
// the model's ForwardForUpdate with `update_keys` (model/keyed_dropout.h:
// UpdateKeys of the examples' keys and the update), undefined for a
// forward whose keyed layers should not act.
// images: [N, ...]; labels: [N] int64; weights: N values; update_keys
// undefined or [N] int64 on the CPU.
// InvalidArgument if the sizes disagree; LibTorch errors -> Internal.
absl::StatusOr<WeightedBackwardResult> WeightedBackward(
    Classifier& model, const at::Tensor& images, const at::Tensor& labels,
    const std::vector<double>& weights, GradientStart start = GradientStart::kZero,
    bool bf16 = false, const at::Tensor& update_keys = at::Tensor());

// What WeightedBackward starts with: every parameter's gradient defined,
// zeroed for kZero. Throws what LibTorch throws.
void PrepareGradients(Classifier& model, GradientStart start);

// One forward's loss: sum_i w_i * loss_i in fp32, a scalar with its graph
// (the backward is the caller's), and WeightedBackwardResult's
// accepted_loss_sum.
struct WeightedLoss {
  at::Tensor weighted;
  double accepted_loss_sum = 0;
};

// The forward pass (ForwardForUpdate with `update_keys`, under bfloat16
// autocast with `bf16`) and its WeightedLoss. REQUIRES: sizes as
// WeightedBackward checks them, at least one example. Throws what LibTorch
// throws.
WeightedLoss WeightedLossOf(Classifier& model, const at::Tensor& images, const at::Tensor& labels,
                            const std::vector<double>& weights, bool bf16,
                            const at::Tensor& update_keys);

// The parameters' gradients in registration order (not copies).
std::vector<at::Tensor> Gradients(Classifier& model);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_WEIGHTED_LOSS_H_
