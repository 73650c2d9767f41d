// Persistent flat gradient buckets (DDP's gradient_as_bucket_view).
//
// One contiguous 1-D tensor per planned bucket, allocated once; every
// gradient is a view into its bucket, so a reducer reduces the flat bucket
// in place (GradientReducer::ReduceBucket) and the gradients ARE the result:
// no concatenation, no copy back, per update.
//
// The views survive training as long as nobody replaces a parameter's
// .grad: autograd accumulates into a defined .grad in place, and zeroing
// must be in place too (WeightedBackward zeroes with zero_(); LibTorch 2.x's
// Optimizer::zero_grad() sets gradients to none by default: call
// zero_grad(false) or ZeroGradients()). GradientsAreViews() checks it.
//
// Overlap with backward: ForParameters puts a post-hook on every
// parameter's gradient accumulator. After ArmBackward(), the backward pass
// starts a bucket (GradientReducer::StartBucket) as soon as every gradient
// in it is accumulated, strictly in bucket order (bucket k starts only after
// bucket k-1), so every rank issues the same collectives in the same order
// whatever the timing. The reduced values do not depend on when a bucket
// starts, so this keeps bitwise parity. Reduce() starts what the backward
// did not (a parameter without a gradient this update, a rank with an empty
// batch) and waits for all.
//
// Ownership: holds the flat tensors and the parameters' gradient
// accumulators (so its hooks live as long as it does); removes its hooks on
// destruction. The parameters must outlive it.
// Thread safety: the hooks run on autograd's thread and take a lock;
// everything else is one caller's. Not copyable or movable.
#ifndef RECEIPT_PARITY_REDUCERS_GRADIENT_BUCKETS_H_
#define RECEIPT_PARITY_REDUCERS_GRADIENT_BUCKETS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reducers/gradient_reducer.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd

namespace receipt_parity {

class GradientBuckets {
 public:
  // Over plain tensors (a list reduced once: tests, the simulated parity
  // check): each tensor's values are copied into its bucket of `plan` and
  // tensors[i] becomes a view into it. No hooks.
  // InvalidArgument for an undefined tensor ("gradient I is undefined"),
  // tensors on different devices, a plan that does not cover the list in
  // order, or a bucket that mixes dtypes.
  static absl::StatusOr<std::unique_ptr<GradientBuckets>> ForTensors(
      std::vector<at::Tensor>& tensors, const std::vector<GradientBucket>& plan);

  // Over a model's parameters, laid out in REVERSE order (the order backward
  // produces their gradients) and planned by reducer.PlanBuckets: each
  // parameter's .grad becomes a view into its bucket (its values kept; an
  // undefined gradient becomes zeros), and its gradient accumulator gets
  // the hook described above. Errors as ForTensors; LibTorch's as Internal.
  // REQUIRES: params are leaves (one that does not require grad gets no
  // hook; its bucket starts in Reduce()).
  // `rider_elements` > 0 appends that many values after the last bucket's
  // gradients, in the same flat tensor, so that the reducer reduces them
  // with the gradients in the same collective (rider()): how the
  // every-update checks' reports cross the ranks without a collective of
  // their own (verify/update_verifier.h).
  static absl::StatusOr<std::unique_ptr<GradientBuckets>> ForParameters(
      const std::vector<at::Tensor>& params, const GradientReducer& reducer,
      int64_t rider_elements = 0);

  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;
  ~GradientBuckets();

  int size() const { return static_cast<int>(flats_.size()); }
  // The bucket's flat tensor as the reducer gets it (the last one's rider
  // included).
  const at::Tensor& flat(int bucket) const { return flats_[bucket]; }
  // The bucket's gradients: its flat tensor without the rider.
  const at::Tensor& gradients(int bucket) const { return gradients_[bucket]; }
  // Where bucket `bucket`'s gradients start when the buckets' gradients are
  // laid end to end.
  int64_t offset(int bucket) const { return offsets_[bucket]; }
  // The rider: the values after the last bucket's gradients (empty without
  // one). Write them before the last bucket starts; after Reduce() they
  // hold the reducer's result.
  const at::Tensor& rider() const { return rider_; }

  // Called with each non-empty bucket, its gradients (gradients(b)) and
  // their offset, just before the reducer is given it (from the backward
  // pass's hook, or in Reduce()): what the bucket holds then is this rank's
  // contribution. An error is the start's error. Kept until replaced;
  // nullptr for none.
  using StartObserver =
      std::function<absl::Status(int bucket, const at::Tensor& flat, int64_t offset)>;
  void ObserveStarts(StartObserver observer);

  // Whether every parameter's .grad (ForParameters) is still its view into
  // the buckets (same memory, same shape). False after a zero_grad() that
  // set gradients to none, or anything else that replaced a .grad.
  bool GradientsAreViews() const;

  // Zeroes every bucket's gradients in place (the rider kept), one fill per
  // bucket.
  absl::Status ZeroGradients();

  // The next backward pass starts each bucket on `reducer` and `group` as
  // soon as it is ready, in bucket order. Does nothing unless
  // reducer.overlaps_backward() and the buckets have hooks. The next
  // Reduce() must name the same reducer and group.
  void ArmBackward(GradientReducer& reducer, c10d::ProcessGroup& group);

  // The gradients (views into the buckets) of the parameters whose
  // accumulator has not run since ArmBackward: those the armed backward
  // gave no gradient, whose values it left as they were. Call it after that
  // backward, before Reduce(). FailedPrecondition unless armed (a reducer
  // that overlaps the backward, buckets with hooks).
  absl::StatusOr<std::vector<at::Tensor>> NotAccumulated();

  // Every bucket reduced in place: starts, in order, those the backward pass
  // did not, then reducer.FinishBuckets(). Disarms. Returns the first
  // error: of a start during the backward, of a start here, of the finish.
  absl::Status Reduce(GradientReducer& reducer, c10d::ProcessGroup& group);

 private:
  class ReadyHook;
  GradientBuckets() = default;

  static absl::StatusOr<std::unique_ptr<GradientBuckets>> Allocate(
      const std::vector<at::Tensor>& tensors, const std::vector<GradientBucket>& plan,
      int64_t rider_elements = 0);
  absl::Status AttachHooks(const std::vector<at::Tensor>& params);
  void ResetReadiness();
  // A hook's call: tensor `index` of the layout is accumulated.
  void OnAccumulated(int index);
  // Starts the ready buckets from next_bucket_ on; under mutex_.
  void StartReadyBuckets();
  absl::Status StartBucket(int bucket);

  std::vector<at::Tensor> flats_;
  std::vector<at::Tensor> gradients_;
  std::vector<int64_t> offsets_;
  at::Tensor rider_;
  StartObserver start_observer_;
  // By layout index: the view, and the bucket that holds it.
  std::vector<at::Tensor> views_;
  std::vector<int> bucket_of_;
  std::vector<int> bucket_sizes_;
  // ForParameters only: the parameters in layout order, their
  // accumulators and hook keys.
  std::vector<at::Tensor> params_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hook_keys_;

  std::mutex mutex_;
  GradientReducer* armed_reducer_ = nullptr;
  c10d::ProcessGroup* armed_group_ = nullptr;
  std::vector<int> pending_;  // gradients not yet accumulated, by bucket
  std::vector<bool> accumulated_;  // by layout index, since ArmBackward
  int next_bucket_ = 0;       // the first bucket not started
  absl::Status start_error_;
};

// One-off: plans reducer.PlanBuckets(tensors), moves the tensors into flat
// buckets (ForTensors: tensors[i] become views) and reduces them in place.
// Errors as ForTensors and GradientBuckets::Reduce.
absl::Status ReduceInBuckets(GradientReducer& reducer, std::vector<at::Tensor>& tensors,
                             c10d::ProcessGroup& group);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_GRADIENT_BUCKETS_H_
