#include "verdicts/bf16_tolerance.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "artifacts/first_step_record.h"
#include "collectives/collective_error.h"
#include "model/keyed_dropout.h"
#include "model/sync_batch_norm.h"
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
    // Each slot's micro-batch as the reference recorded it: a weighting
    // that depends on it (micro_batch_mean) weighs as the reference did.
    const int micro_batch = i < batch.micro_batch_size() ? batch.micro_batch(i) : 0;
    composition.by_rank[0].push_back(
        WeightedSlot{(*in.labels)[index], batch.valid(i), micro_batch});
  }
  out.weights = in.weighting->Weights(composition, 0);
  return out;
}

// The largest elementwise |a - b|, in double.
double LargestError(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

double LargestMagnitude(const at::Tensor& t) {
  return t.to(at::kDouble).abs().max().item<double>();
}

// One quantity's element-wise budget: rtol and atol with every |value_i -
// exact_i| <= atol + rtol |value_i| (times the safety factor, at least the
// floor), and the budget's share of the value (L2).
struct ElementBudget {
  double error = 0;
  double rtol = 0;
  double atol = 0;
  double norm = 0;  // || atol + rtol |value| ||
  double share = 0;
};

ElementBudget BudgetOfValues(const at::Tensor& value, const at::Tensor& exact,
                             const Bf16UpdateInputs& in) {
  const at::Tensor v = value.to(at::kDouble).flatten();
  const at::Tensor error = (v - exact.to(at::kDouble).flatten()).abs();
  const at::Tensor magnitude = v.abs();
  ElementBudget b;
  b.error = error.max().item<double>();
  // atol: the largest error of any element. An element's error is set by
  // the scale of the sum that made it, not by its own value (a gradient
  // that mostly cancels errs like its terms), and one update's errors are
  // one sample of them, so any element may err as much as the worst
  // measured. rtol stays the floor's: atol already covers the largest
  // elements' errors, and a derived rtol would count them twice.
  b.rtol = in.floor_rtol;
  b.atol = std::max(kBf16SafetyFactor * b.error, in.floor_atol);
  b.norm = (b.atol + b.rtol * magnitude).norm().item<double>();
  // The smallest e such that the update made (1 + e) times itself moves
  // some element past its budget: e |v_i| > atol + rtol |v_i| first at the
  // largest |v_i|.
  const double largest = magnitude.max().item<double>();
  b.share = largest > 0 ? b.rtol + b.atol / largest : std::numeric_limits<double>::infinity();
  return b;
}

// One tensor's budget from the reference's update and the fp64 one.
TensorBudget BudgetOf(const std::string& name, const at::Tensor& before,
                      const at::Tensor& gradient, const at::Tensor& after,
                      const at::Tensor& gradient64, const at::Tensor& after64,
                      const Bf16UpdateInputs& in) {
  const at::Tensor change = after.to(at::kDouble) - before.to(at::kDouble);
  const at::Tensor change64 = after64.to(at::kDouble) - before.to(at::kDouble);
  const ElementBudget g = BudgetOfValues(gradient, gradient64, in);
  const ElementBudget p = BudgetOfValues(change, change64, in);
  TensorBudget budget;
  budget.set_name(name);
  budget.set_gradient_error(g.error);
  budget.set_parameter_error(LargestError(after, after64));
  budget.set_gradient_atol(g.atol);
  budget.set_gradient_rtol(g.rtol);
  budget.set_parameter_atol(p.atol);
  budget.set_parameter_rtol(p.rtol);
  budget.set_gradient_budget_norm(g.norm);
  budget.set_parameter_budget_norm(p.norm);
  budget.set_largest_gradient(LargestMagnitude(gradient));
  budget.set_largest_parameter_change(LargestMagnitude(change));
  // NaN (a tensor that one update leaves unchanged: 0 / 0) fails the gate.
  budget.set_share_of_one_update(std::isnan(g.share) || std::isnan(p.share)
                                     ? std::numeric_limits<double>::quiet_NaN()
                                     : std::max(g.share, p.share));
  return budget;
}

// The figures over every tensor, from `derived.tensors`.
void Summarise(DerivedTolerance* derived) {
  derived->set_smallest_gradient(std::numeric_limits<double>::infinity());
  derived->set_smallest_parameter_change(std::numeric_limits<double>::infinity());
  for (const TensorBudget& t : derived->tensors()) {
    derived->set_gradient_error(std::max(derived->gradient_error(), t.gradient_error()));
    derived->set_parameter_error(std::max(derived->parameter_error(), t.parameter_error()));
    derived->set_gradient_atol(std::max(derived->gradient_atol(), t.gradient_atol()));
    derived->set_parameter_atol(std::max(derived->parameter_atol(), t.parameter_atol()));
    derived->set_smallest_gradient(std::min(derived->smallest_gradient(), t.largest_gradient()));
    derived->set_smallest_parameter_change(
        std::min(derived->smallest_parameter_change(), t.largest_parameter_change()));
    // NaN (a tensor that one update leaves unchanged) fails the gate.
    const double share = t.share_of_one_update();
    if (std::isnan(share) || share > derived->largest_share_of_one_update()) {
      derived->set_largest_share_of_one_update(share);
    }
  }
  for (TensorBudget& t : *derived->mutable_tensors()) {
    t.set_judged(t.share_of_one_update() <= kMostShareOfOneUpdate);
    if (t.judged()) {
      derived->set_judged_tensors(derived->judged_tensors() + 1);
    } else {
      derived->add_not_judged_tensors(t.name());
    }
  }
}

// The reference's update in fp64 from its recorded starting parameters:
// the gradients (clipped as the run clips) and the parameters after the
// step.
absl::Status StepInDouble(const Bf16UpdateInputs& in, const NamedTensors& before,
                          NamedTensors* gradients, NamedTensors* after, double* loss) {
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
  absl::StatusOr<ExampleTensors> selected = in.examples->Select(batch.slots);
  if (!selected.ok()) return selected.status();
  const ExampleTensors& examples = *selected;
  // A synchronized batch norm normalizes by the valid examples of the
  // update, as the reference's did.
  SyncBatchNormPass direct;
  direct.phase = BatchNormPhase::kDirect;
  std::vector<uint8_t> valid;
  for (const Slot& slot : batch.slots) valid.push_back(slot.valid ? 1 : 0);
  direct.valid = at::tensor(at::ArrayRef<uint8_t>(valid)).to(at::kBool);
  const SyncBatchNormPassScope scope(&direct);
  // first_step.json is update 0: its keyed layers draw update 0's masks.
  absl::StatusOr<WeightedBackwardResult> backward = WeightedBackward(
      model, examples.images.to(at::kCPU).to(at::kDouble), examples.labels.to(at::kCPU),
      batch.weights, GradientStart::kZero, /*bf16=*/false, UpdateKeys(examples.keys, 0));
  if (!backward.ok()) return backward.status();
  *loss = backward->weighted_loss;
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
    double loss64 = 0;
    if (absl::Status s = StepInDouble(in, *before, &gradients64, &after64, &loss64); !s.ok()) {
      return s;
    }
    derived.set_loss_relative_error(
        loss64 != 0 ? std::fabs(reference.loss() - loss64) / std::fabs(loss64) : 0);
    for (size_t i = 0; i < names.size(); ++i) {
      *derived.add_tensors() =
          BudgetOf(names[i], (*before)[i].second, (*gradients)[i].second, (*after)[i].second,
                   gradients64[i].second, after64[i].second, in);
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "bf16 tolerance: LibTorch");
  }
  derived.set_derived_for(in.derived_for);
  derived.set_safety_factor(kBf16SafetyFactor);
  derived.set_most_share_of_one_update(kMostShareOfOneUpdate);
  Summarise(&derived);
  const double share = derived.largest_share_of_one_update();
  derived.set_far_below_one_update(share <= kMostShareOfOneUpdate);
  derived.set_method(absl::StrCat(
      "the reference's first update (",
      in.derived_for == "bf16" ? "bf16 autocast"
      : in.derived_for == "fp32" ? "fp32"
                                 : "fp32, its batch norm in one pass",
      ", one worker) against the same update in fp64 (same initial parameters, batch, "
      "weights, clipping, optimizer and rate), tensor by tensor: largest error ",
      derived.gradient_error(), " in a gradient and ", derived.parameter_error(),
      " in a parameter after the step; each tensor's atol is ", kBf16SafetyFactor,
      " x its largest error (two such updates may differ by twice it), at least the "
      "config's atol ", in.floor_atol, ", its rtol the config's ", in.floor_rtol,
      ", every element within atol + rtol |ref|; a tensor is judged by numerics when the "
      "smallest relative change of "
      "its update the budget detects (rtol + atol / max |ref|) is at most ",
      kMostShareOfOneUpdate * 100, "%, so a mistake that moves its update by a tenth fails: ",
      derived.judged_tensors(), " of ",
      derived.tensors_size(), " tensors judged",
      derived.not_judged_tensors().empty()
          ? ""
          : absl::StrCat("; not judgeable by numerics, the precision's rounding too large a "
                         "share of their update (detecting no less than ",
                         share * 100, "%), left to the replay: ",
                         absl::StrJoin(derived.not_judged_tensors(), ", "))));
  return derived;
}

}  // namespace receipt_parity
