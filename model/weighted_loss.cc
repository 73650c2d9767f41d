#include "model/weighted_loss.h"

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "model/autocast_scope.h"

namespace receipt_parity {

absl::StatusOr<WeightedBackwardResult> WeightedBackward(
    Classifier& model, const at::Tensor& images, const at::Tensor& labels,
    const std::vector<double>& weights, GradientStart start, bool bf16,
    const at::Tensor& update_keys) {
  const int64_t n = images.size(0);
  if (labels.dim() != 1 || labels.size(0) != n ||
      static_cast<int64_t>(weights.size()) != n ||
      (update_keys.defined() && (update_keys.dim() != 1 || update_keys.size(0) != n))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weighted backward: ", n, " images, ",
        labels.dim() == 1 ? labels.size(0) : -1, " labels, ", weights.size(),
        " weights", update_keys.defined() ? absl::StrCat(", ", update_keys.numel(), " keys")
                                          : ""));
  }
  WeightedBackwardResult result;
  try {
    PrepareGradients(model, start);
    if (n == 0) return result;
    WeightedLoss loss = WeightedLossOf(model, images, labels, weights, bf16, update_keys);
    loss.weighted.backward();
    result.weighted_loss = loss.weighted.item<double>();
    result.accepted_loss_sum = loss.accepted_loss_sum;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("weighted backward: ",
                                            e.what_without_backtrace()));
  }
  return result;
}

void PrepareGradients(Classifier& model, GradientStart start) {
  for (at::Tensor& p : model.parameters()) {
    if (!p.grad().defined()) {
      p.mutable_grad() = at::zeros_like(p);
    } else if (start == GradientStart::kZero) {
      p.mutable_grad().zero_();
    }
  }
}

WeightedLoss WeightedLossOf(Classifier& model, const at::Tensor& images, const at::Tensor& labels,
                            const std::vector<double>& weights, bool bf16,
                            const at::Tensor& update_keys) {
  // The weights rounded to float here, as .to(at::kFloat) rounds them: one
  // tensor made instead of a double one and its float copy.
  const std::vector<float> weights_as_float(weights.begin(), weights.end());
  at::Tensor w = at::tensor(at::ArrayRef<float>(weights_as_float));
  if (w.device() != images.device()) w = w.to(images.device());
  const AutocastScope autocast(images.device().type(), bf16);
  at::Tensor logits = model.ForwardForUpdate(images, update_keys);
  // Under autocast the logits may be bfloat16: the loss in fp32.
  if (logits.scalar_type() == at::kBFloat16) logits = logits.to(at::kFloat);
  at::Tensor per_example =
      at::cross_entropy_loss(logits, labels, /*weight=*/{}, at::Reduction::None);
  WeightedLoss loss;
  loss.weighted = (per_example * w).sum();
  // Read where the values are (no op on the CPU): no update pays a tensor
  // op for a figure.
  const at::Tensor values = per_example.detach().to(at::kCPU).contiguous();
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0) continue;
    loss.accepted_loss_sum += values.scalar_type() == at::kDouble
                                  ? values.data_ptr<double>()[i]
                                  : static_cast<double>(values.data_ptr<float>()[i]);
  }
  return loss;
}

std::vector<at::Tensor> Gradients(Classifier& model) {
  std::vector<at::Tensor> grads;
  for (at::Tensor& p : model.parameters()) grads.push_back(p.mutable_grad());
  return grads;
}

}  // namespace receipt_parity
