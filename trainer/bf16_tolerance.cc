#include "trainer/bf16_tolerance.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>

#include "absl/strings/str_cat.h"
#include "artifacts/first_step_record.h"
#include "collectives/collective_error.h"
#include "model/weighted_loss.h"
#include "optimizers/optimizer_plugin.h"

namespace receipt_parity {
namespace {

// The reference's update 0 batch (one rank): its slots and its weights.
struct ReferenceBatch {
  std::vector<Slot> slots;
  std::vector<double> weights;
};

ReferenceBatch BatchOf(const Bf16UpdateInputs& in) {
  const RankBatch& batch = in.reference->batch(0);
  ReferenceBatch out;
  UpdateComposition composition;
  composition.class_counts = *in.class_counts;
  composition.by_rank.resize(1);
  for (int i = 0; i < batch.dataset_indices_size(); ++i) {
    const int64_t index = batch.dataset_indices(i);
    out.slots.push_back(Slot{index, batch.valid(i)});
    composition.by_rank[0].push_back(WeightedSlot{(*in.labels)[index], batch.valid(i), 0});
  }
  out.weights = in.weighting->Weights(composition, 0);
  return out;
}

// The largest elementwise |a - b| over the tensors, in double.
double LargestError(const NamedTensors& a, const NamedTensors& b) {
  double largest = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, (a[i].second.to(at::kDouble) - b[i].second.to(at::kDouble))
                                    .abs()
                                    .max()
                                    .item<double>());
  }
  return largest;
}

// Over the tensors, the smallest of each one's largest |value|.
double SmallestLargest(const NamedTensors& tensors) {
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& [name, tensor] : tensors) {
    smallest = std::min(smallest, tensor.to(at::kDouble).abs().max().item<double>());
  }
  return smallest;
}

// The reference's update in fp64 from its recorded starting parameters:
// the gradients (clipped as the run clips) and the parameters after the
// step.
absl::Status StepInDouble(const Bf16UpdateInputs& in, const NamedTensors& before,
                          NamedTensors* gradients, NamedTensors* after) {
  absl::StatusOr<std::shared_ptr<Classifier>> built = in.loaded->model.Build();
  if (!built.ok()) return built.status();
  Classifier& model = **built;
  {
    torch::NoGradGuard no_grad;
    auto params = model.named_parameters();
    for (const auto& [name, tensor] : before) params[name].copy_(tensor);
  }
  model.to(at::kDouble);
  const ReferenceBatch batch = BatchOf(in);
  const ExampleTensors examples = SelectSlots(*in.examples, batch.slots);
  absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
      model, examples.images.to(at::kCPU).to(at::kDouble), examples.labels.to(at::kCPU),
      batch.weights);
  if (!backward.ok()) return backward.status();
  const TrainingConfig& config = in.loaded->config;
  if (config.has_clip_grad_norm()) {
    torch::nn::utils::clip_grad_norm_(model.parameters(), config.clip_grad_norm().max_norm());
  }
  *gradients = SnapshotGradients(model);
  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      in.loaded->optimizer.plugin->Build(NamedParametersOf(model));
  if (!optimizer.ok()) return optimizer.status();
  for (torch::optim::OptimizerParamGroup& group : (*optimizer)->param_groups()) {
    group.options().set_lr(group.options().get_lr() * in.schedule->Factor(0));
  }
  (*optimizer)->step();
  *after = SnapshotParameters(model);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DerivedTolerance> DeriveBf16Tolerance(const Bf16UpdateInputs& in) {
  const FirstStep& reference = *in.reference;
  const std::vector<std::string> names(reference.parameter_order().begin(),
                                       reference.parameter_order().end());
  absl::StatusOr<NamedTensors> before = LoadNamedTensors(reference.parameters_before(), names);
  absl::StatusOr<NamedTensors> gradients = LoadNamedTensors(reference.gradients(), names);
  absl::StatusOr<NamedTensors> after = LoadNamedTensors(reference.parameters_after(), names);
  for (const auto* loaded : {&before, &gradients, &after}) {
    if (!loaded->ok()) return loaded->status();
  }
  DerivedTolerance derived;
  try {
    NamedTensors gradients64, after64;
    if (absl::Status s = StepInDouble(in, *before, &gradients64, &after64); !s.ok()) return s;
    derived.set_gradient_error(LargestError(*gradients, gradients64));
    derived.set_parameter_error(LargestError(*after, after64));
    NamedTensors change;
    for (size_t i = 0; i < after->size(); ++i) {
      change.emplace_back((*after)[i].first, (*after)[i].second - (*before)[i].second);
    }
    derived.set_smallest_gradient(SmallestLargest(*gradients));
    derived.set_smallest_parameter_change(SmallestLargest(change));
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "bf16 tolerance: LibTorch");
  }
  derived.set_safety_factor(kBf16SafetyFactor);
  derived.set_gradient_atol(kBf16SafetyFactor * derived.gradient_error());
  derived.set_parameter_atol(kBf16SafetyFactor * derived.parameter_error());
  derived.set_far_below_one_update(
      derived.gradient_atol() < kMostShareOfOneUpdate * derived.smallest_gradient() &&
      derived.parameter_atol() < kMostShareOfOneUpdate * derived.smallest_parameter_change());
  derived.set_method(absl::StrCat(
      "the reference's first update (bf16 autocast, one worker) against the same update "
      "in fp64 (same initial parameters, batch, weights, clipping, optimizer and rate): "
      "largest error ", derived.gradient_error(), " in the gradients and ",
      derived.parameter_error(), " in the parameters after the step; budget ",
      kBf16SafetyFactor, " x error (two bf16 updates may differ by twice it); each "
      "below a tenth of what one update changes (smallest per-tensor largest gradient ",
      derived.smallest_gradient(), ", parameter change ", derived.smallest_parameter_change(),
      "): ", derived.far_below_one_update() ? "yes" : "NO"));
  return derived;
}

}  // namespace receipt_parity
