// One rank's forward and backward passes of a training update of a model
// with synchronized batch norms (model/sync_batch_norm.h): every layer
// normalizes by the statistics of the whole update's valid examples, and
// the gradient is the one of the whole update's loss through those
// statistics, as the one-worker reference's single backward gives it. Two
// ways, one activation memory each:
//
// SyncBatchNormBackward: the rank's micro-batches as one forward and one
// backward over their rows in order (a layer's statistics need every
// micro-batch's input to the layer before any is normalized, and its
// backward every micro-batch's gradient above it, so a forward layer by
// layer over the micro-batches would hold every micro-batch's graph at
// once anyway): the activation memory of the rank's whole share.
//   - no `sum`: one direct forward whose statistics are its valid rows'
//     (kDirect), the reference itself;
//   - a `sum`: each layer adds its 3C + 1 moments over the ranks in the
//     forward and the 2C sums of its statistics' gradient in the backward
//     (kSynchronized), inside autograd, in the order the graph reaches
//     the layers, the same on every rank: torch's SyncBatchNorm's cost.
//
// SyncBatchNormPassesBackward: one micro-batch's activations at a time,
// with layers 0..S-1 and the update's micro-batches M on this rank:
//   collect   for t = 0..S-1: a forward (no graph) of every micro-batch, layers
//             below t normalizing by their update statistics, layer t
//             summing its valid elements; the sums added over the ranks
//             (`sum`), giving layer t's update mean and variance (and its
//             running statistics' step)
//   apply     a forward and backward of every micro-batch with the
//             statistics as leaves: the parameters' gradient with the
//             statistics held, and the loss's gradient with respect to the
//             statistics, added over the ranks
//   surrogate for t = S-1..0: a forward and backward of every micro-batch
//             of the surrogate sum_i (g_mean_t x_i + g_var_t (x_i - mean_t)^2)
//             / count over layer t's input, which carries the statistics'
//             gradient back to the parameters below t and to the earlier
//             layers' statistics (added over the ranks)
// so an update costs about 2S + 1 forwards and S + 1 backwards, and 2S
// small sums across ranks, all between passes (none inside autograd); the
// parameters' gradient is added up over the micro-batches, as a plain
// model's is.
//
// Either way the parameters' gradients are left for the reducer as usual:
// every rank's hold its own examples' share.
//
// Thread safety: one call per thread; `sum` must be a collective over the
// same ranks running this update.
#ifndef RECEIPT_PARITY_MODEL_SYNC_BATCH_NORM_UPDATE_H_
#define RECEIPT_PARITY_MODEL_SYNC_BATCH_NORM_UPDATE_H_

#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "collectives/sum_across_ranks.h"
#include "model/classifier.h"
#include "model/weighted_loss.h"

namespace receipt_parity {

// One micro-batch of this rank's share of an update (n >= 0 examples).
struct UpdateMicroBatch {
  at::Tensor images;       // [n, ...]
  at::Tensor labels;       // [n] int64
  at::Tensor update_keys;  // [n] int64 on the CPU, or undefined
  at::Tensor valid;        // [n] bool on the images' device: false for a masked slot
  std::vector<double> weights;  // n loss weights
};

// Both set every parameter's gradient to this rank's share of the update's
// gradient (zeroing what was there) and return this rank's share of the
// loss, sum_i w_i * loss_i, and its accepted examples' loss sum
// (model/weighted_loss.h). With `bf16`, forwards under bfloat16 autocast.
// A rank whose share has no rows still takes part in every sum. REQUIRES:
// the model has synchronized batch norms (SyncBatchNorms), is in training
// mode; every rank calls the same one with the same model (and, for the
// passes, the same micro-batch count). Errors: `sum`'s; InvalidArgument for
// a layer that saw no valid example in the update; Internal "synchronized
// batch norm: ..." for what LibTorch throws.
absl::StatusOr<WeightedBackwardResult> SyncBatchNormBackward(
    Classifier& model, const std::vector<UpdateMicroBatch>& micro_batches, bool bf16,
    const RankSum& sum);
absl::StatusOr<WeightedBackwardResult> SyncBatchNormPassesBackward(
    Classifier& model, const std::vector<UpdateMicroBatch>& micro_batches, bool bf16,
    const RankSum& sum);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_SYNC_BATCH_NORM_UPDATE_H_
