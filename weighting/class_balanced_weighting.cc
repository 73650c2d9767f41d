#include "weighting/class_balanced_weighting.h"

#include <cmath>

#include "logging/glog.h"

#include "absl/strings/str_cat.h"

namespace receipt_parity {

absl::StatusOr<ClassBalancedWeighting> ClassBalancedWeighting::Create(
    double power, double smoothing) {
  if (!std::isfinite(power) || power < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "class_balanced.power: must be finite and >= 0 (0 = uniform, 1 = "
        "inverse frequency), got ",
        power));
  }
  if (!std::isfinite(smoothing) || smoothing < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "class_balanced.smoothing: must be finite and >= 0, got ", smoothing));
  }
  return ClassBalancedWeighting(power, smoothing);
}

std::vector<double> ClassBalancedWeighting::ClassWeights(
    const std::vector<int64_t>& class_counts) const {
  std::vector<double> weights;
  weights.reserve(class_counts.size());
  for (int64_t count : class_counts) {
    const double smoothed = static_cast<double>(count) + smoothing_;
    // A class that cannot be weighed (no examples, no smoothing) gets an
    // infinite weight; Weights() refuses it only if it appears.
    weights.push_back(power_ == 0 ? 1.0 : std::pow(smoothed, -power_));
  }
  return weights;
}

std::vector<double> ClassBalancedWeighting::Weights(
    const UpdateComposition& update, int rank) const {
  CHECK(rank >= 0 && rank < static_cast<int>(update.by_rank.size()))
      << "class_balanced: rank " << rank << " of " << update.by_rank.size();
  const std::vector<double> class_weights = ClassWeights(update.class_counts);
  auto weight_of = [&](const WeightedSlot& slot) {
    CHECK(slot.label >= 0 &&
          slot.label < static_cast<int>(class_weights.size()))
        << "class_balanced: label " << slot.label << " outside the "
        << class_weights.size() << " classes of class_counts";
    const double c = class_weights[slot.label];
    CHECK(std::isfinite(c) && c > 0)
        << "class_balanced: class " << slot.label << " has training count "
        << update.class_counts[slot.label] << " and smoothing " << smoothing_
        << ": it cannot be weighed";
    return c;
  };
  double total = 0;
  for (const auto& slots : update.by_rank) {
    for (const WeightedSlot& slot : slots) {
      if (slot.valid) total += weight_of(slot);
    }
  }
  const std::vector<WeightedSlot>& slots = update.by_rank[rank];
  std::vector<double> weights(slots.size(), 0.0);
  if (total == 0) return weights;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].valid) weights[i] = weight_of(slots[i]) / total;
  }
  return weights;
}

}  // namespace receipt_parity
