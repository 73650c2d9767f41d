// `class_balanced`: per-class weights from the training set's class counts,
// normalised over the whole update so the rare receipt class counts.
//
//   c_k = (class_counts[k] + smoothing) ^ (-power)
//   w_i = valid_i * c_{y_i} / sum_{j in A} c_{y_j}
//
// with A the update's valid slots on ALL ranks: the weights of the update
// sum to 1, so with a SUM reducer the update's gradient equals the
// one-worker gradient of the same class-weighted loss. The denominator is
// summed over ranks and slots in order, so every rank computes the same
// value.
//
// Thread safety: immutable; Weights() is safe to call concurrently.
#ifndef RECEIPT_PARITY_WEIGHTING_CLASS_BALANCED_WEIGHTING_H_
#define RECEIPT_PARITY_WEIGHTING_CLASS_BALANCED_WEIGHTING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

class ClassBalancedWeighting : public LossWeighting {
 public:
  static constexpr char kName[] = "class_balanced";

  // InvalidArgument (naming the field) unless power and smoothing are
  // finite and >= 0.
  static absl::StatusOr<ClassBalancedWeighting> Create(double power,
                                                       double smoothing);

  // REQUIRES (programmer errors, CHECKed): every valid slot's label is in
  // [0, class_counts.size()); with power > 0, class_counts[label] +
  // smoothing > 0 for every valid slot's label. All zeros when the update
  // has no valid slot.
  std::vector<double> Weights(const UpdateComposition& update,
                              int rank) const override;
  bool split_independent() const override { return true; }

  // c_k for every class of `class_counts`.
  std::vector<double> ClassWeights(
      const std::vector<int64_t>& class_counts) const;

  double power() const { return power_; }
  double smoothing() const { return smoothing_; }

 private:
  ClassBalancedWeighting(double power, double smoothing)
      : power_(power), smoothing_(smoothing) {}

  double power_;
  double smoothing_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_CLASS_BALANCED_WEIGHTING_H_
