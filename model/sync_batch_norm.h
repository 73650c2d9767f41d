// Synchronized batch norm that keeps parity (issue 25, item 2): in a
// training update its statistics are those of the update's accepted
// examples on every rank and in every micro-batch (masked slots left out),
// so its forward, its gradient and its running statistics are the
// one-worker reference's, and equal on every rank.
//
// A SyncBatchNorm2d layer normalizes [N, C, H, W] per channel:
//   y = (x - mean) * weight / sqrt(var + eps) + bias
// with, in training mode, mean and var (biased) over the valid examples'
// H x W elements of the update, and, in eval mode, its running statistics
// (running_mean, running_var, momentum 0.1, the unbiased variance; named as
// torch's BatchNorm2d names them, so checkpoints hold them as buffers).
//
// How a training forward gets the update's statistics is the pass it runs
// in (SyncBatchNormPass, set for the calling thread by a
// SyncBatchNormPassScope; model/sync_batch_norm_update.h runs the update):
//   no pass        the statistics of its own input, all rows (a forward
//                  outside an update: the load-time shape check, the bf16
//                  tolerance's derivation); running statistics unchanged
//   kDirect        the statistics of the valid rows of its input, as one
//                  differentiable graph, running statistics updated: the
//                  whole update in one forward (one rank, one micro-batch:
//                  the reference)
//   kSynchronized  this rank's share of the update in one forward: the
//                  layer adds its valid rows' moments (double) over the
//                  ranks (`sum`), normalizes by the update's statistics and moves
//                  its running statistics; its backward adds the loss's
//                  gradient with respect to those statistics over the ranks
//                  and carries it to its input's valid rows, so the input's
//                  gradient is the whole update's (torch's SyncBatchNorm,
//                  with masked rows left out). One sum of 3C + 1 numbers in
//                  the forward, one of 2C in the backward, per layer.
// The passes of an update cut into micro-batches whose activations are
// held one at a time (model/sync_batch_norm_update.h):
//   kCollect       layer `target` adds its valid rows' sums to the pass;
//                  earlier layers normalize by their update statistics,
//                  later ones pass their input on
//   kApply         every layer normalizes by its update statistics, held as
//                  leaf tensors that collect the loss's gradient
//   kSurrogate     earlier layers as in kApply; layer `target` adds the
//                  surrogate whose gradient carries its statistics'
//                  gradient back to its input; later ones pass on
//
// Thread safety: a module is used by one thread; the pass is per thread.
// The backward of a kSynchronized forward may run on another thread (the
// autograd engine's): it holds what it needs, not the pass.
#ifndef RECEIPT_PARITY_MODEL_SYNC_BATCH_NORM_H_
#define RECEIPT_PARITY_MODEL_SYNC_BATCH_NORM_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "absl/status/status.h"
#include "collectives/sum_across_ranks.h"

namespace receipt_parity {

enum class BatchNormPhase { kDirect, kSynchronized, kCollect, kApply, kSurrogate };

// One layer's share of a pass. Tensors are per channel, [C].
struct BatchNormLayerPass {
  // The update's statistics (double), once collected.
  at::Tensor mean;
  at::Tensor var;
  // Elements per channel over the update (every rank, valid rows only).
  int64_t count = 0;
  // kCollect: this rank's sums (double) over its valid rows so far.
  at::Tensor local_sum;
  at::Tensor local_sum_of_squares;
  int64_t local_count = 0;
  // kApply, kSurrogate: the statistics as leaves in the layer's dtype.
  at::Tensor mean_leaf;
  at::Tensor var_leaf;
  // kSurrogate: the gradient (double) of the update's loss with respect to
  // this layer's statistics, every rank's added.
  at::Tensor mean_adjoint;
  at::Tensor var_adjoint;
};

// The sum across the ranks computing one update, shared by the forward and
// the backward of every layer of a kSynchronized pass, and the first error
// it gave (a layer that meets one throws; the caller reports the status).
class StatisticsSum {
 public:
  explicit StatisticsSum(RankSum sum) : sum_(std::move(sum)) {}
  // Replaces `tensor` by its sum over the ranks; on an error records it (the
  // first one) and throws std::runtime_error with its message.
  void Add(at::Tensor& tensor);
  // Records `status` (if none is yet) and throws as Add does.
  [[noreturn]] void Fail(const absl::Status& status);
  absl::Status first_error() const;

 private:
  RankSum sum_;
  mutable std::mutex mutex_;
  absl::Status first_error_;
};

// What the synchronized batch norms of one model do in the forwards of one
// update, and what they leave.
struct SyncBatchNormPass {
  BatchNormPhase phase = BatchNormPhase::kDirect;
  // kCollect, kSurrogate: the layer that collects.
  int target = 0;
  // The valid rows (bool [N], the input's device) of the micro-batch the
  // next forward runs; undefined: every row.
  at::Tensor valid;
  // kSynchronized: the sum across the ranks.
  std::shared_ptr<StatisticsSum> sum;
  // kCollect, kApply, kSurrogate: by layer index.
  std::vector<BatchNormLayerPass> layers;
  // kSurrogate: the sum of the target layer's surrogates over the forwards
  // (a scalar with its graph); undefined until one is added.
  at::Tensor surrogate;
};

// Sets `pass` as the calling thread's for its lifetime (restoring the one
// before). Not owned; must outlive the scope.
class SyncBatchNormPassScope {
 public:
  explicit SyncBatchNormPassScope(SyncBatchNormPass* pass);
  ~SyncBatchNormPassScope();
  SyncBatchNormPassScope(const SyncBatchNormPassScope&) = delete;
  SyncBatchNormPassScope& operator=(const SyncBatchNormPassScope&) = delete;

 private:
  SyncBatchNormPass* previous_;
};

// The calling thread's pass, or nullptr.
SyncBatchNormPass* CurrentSyncBatchNormPass();

// The state of one synchronized batch norm, named as torch's BatchNorm2d
// names it: weight and bias (parameters), running_mean and running_var
// ([C] each) and num_batches_tracked (an int64 scalar).
struct SyncBatchNormTensors {
  at::Tensor weight;
  at::Tensor bias;
  at::Tensor running_mean;
  at::Tensor running_var;
  at::Tensor num_batches_tracked;
};

class SyncBatchNorm2dImpl : public torch::nn::Module {
 public:
  static constexpr double kEps = 1e-5;
  static constexpr double kMomentum = 0.1;

  // `layer`: this layer's index among the model's synchronized batch norms,
  // in the order a forward reaches them (0 first).
  SyncBatchNorm2dImpl(int64_t channels, int layer);

  // A layer over `tensors` themselves, not copies: a Python module's
  // receipt_parity_layers.SyncBatchNorm2d (model/python_support.h), whose
  // forward calls this one. REQUIRES: shapes as SyncBatchNormTensors says.
  SyncBatchNorm2dImpl(int layer, const SyncBatchNormTensors& tensors);

  // x: [N, C, H, W]. See above.
  at::Tensor forward(const at::Tensor& x);

  int layer() const { return layer_; }
  int64_t channels() const { return channels_; }
  // The dtype it normalizes in (its weight's).
  at::ScalarType dtype() const { return weight_.scalar_type(); }

  // running_mean, running_var (and num_batches_tracked) move towards the
  // update statistics `mean` and biased `var` of `count` elements per
  // channel (double [C]), as torch's batch norm moves them.
  void UpdateRunningStatistics(const at::Tensor& mean, const at::Tensor& var, int64_t count);

 private:
  at::Tensor Normalize(const at::Tensor& x, const at::Tensor& mean, const at::Tensor& var);
  at::Tensor Direct(const at::Tensor& x, const at::Tensor& valid, bool update_running);
  at::Tensor Synchronized(const at::Tensor& x, const SyncBatchNormPass& pass);
  void Collect(const at::Tensor& x, SyncBatchNormPass& pass);
  void AddSurrogate(const at::Tensor& x, SyncBatchNormPass& pass);

  int64_t channels_;
  int layer_;
  at::Tensor weight_;
  at::Tensor bias_;
  at::Tensor running_mean_;
  at::Tensor running_var_;
  at::Tensor num_batches_tracked_;
};
TORCH_MODULE(SyncBatchNorm2d);

// The model's synchronized batch norms by layer index (empty when it has
// none). REQUIRES: their indices are 0..n-1, each once.
std::vector<SyncBatchNorm2dImpl*> SyncBatchNorms(torch::nn::Module& model);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_SYNC_BATCH_NORM_H_
