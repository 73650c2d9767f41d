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

// The parameters' gradients in registration order (not copies).
std::vector<at::Tensor> Gradients(Classifier& model);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_WEIGHTED_LOSS_H_
