// One rank's share of an update through the model: the forward and
// backward passes of its micro-batches (weighting/update_shares.h), or of
// one chunk of the ordered mode, leaving the share's gradient in the
// parameters' .grad. What a rank computes (trainer/update_step.h) and what
// the update replay recomputes (replay/update_replay.h) is this one code.
//
// ShareBackward over micro-batches m = 0..M-1:
//   - a model without synchronized batch norms: micro-batch m's forward and
//     backward (model/weighted_loss.h), from zero gradients for m = 0 (even
//     an empty one), adding for later non-empty ones; `before_last` runs
//     just before the last one (where a rank arms its buckets);
//   - a model with synchronized batch norms (model/sync_batch_norm_update.h):
//     on several ranks, its micro-batches as one forward and backward,
//     their statistics added over the ranks by `sum` inside it,
//     `before_last` run before it; on one rank in one micro-batch, one
//     direct forward whose statistics leave out the masked slots, as the
//     one-worker reference computes it; on one rank in several, the passes
//     that hold one micro-batch's activations at a time.
// Every micro-batch's examples are `examples`' rows of its slots, its keys
// UpdateKeys(keys, total_update) (model/keyed_dropout.h).
//
// Thread safety: one call per model at a time.
#ifndef RECEIPT_PARITY_MODEL_SHARE_BACKWARD_H_
#define RECEIPT_PARITY_MODEL_SHARE_BACKWARD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "collectives/sum_across_ranks.h"
#include "data/example_source.h"
#include "model/classifier.h"
#include "model/weighted_loss.h"
#include "weighting/update_shares.h"

namespace receipt_parity {

struct ShareBackwardParts {
  Classifier* model = nullptr;
  const ExampleSource* examples = nullptr;
  // The run's global update (the keys' second half).
  int64_t total_update = 0;
  bool bf16 = false;
  // The update is computed by one rank (no other rank's statistics to add).
  bool one_rank = true;
  // With synchronized batch norms on more than one rank: the statistics'
  // sum across the ranks computing this update.
  RankSum sum;
  // Called with each micro-batch's share, its keys and index before its
  // backward (the every-update accounting records it); may be empty.
  std::function<void(const MicroBatchShare& part, const at::Tensor& update_keys, int m)>
      on_micro_batch;
  // Called once, before the last micro-batch's backward (with synchronized
  // batch norms on several ranks, before the share's one backward): where
  // a rank arms its buckets to reduce during it; may be empty. Not called
  // by the passes of one rank in several micro-batches.
  std::function<void()> before_last;
  // Prefixes every error ("rank 1, update 7").
  std::string where;
};

// The share's gradient in the model's .grad and its loss figures. REQUIRES:
// `share` non-empty, the model in training mode. Errors: the examples'
// (prefixed `where`), WeightedBackward's, the statistics' sum's;
// Internal for anything LibTorch throws.
absl::StatusOr<WeightedBackwardResult> ShareBackward(const std::vector<MicroBatchShare>& share,
                                                     const ShareBackwardParts& parts);

// One chunk of the ordered mode alone, from zero gradients; its gradient
// is then the parameters' .grad (FlattenGradients lays it out as a row).
// With GradientStart::kAccumulate its gradient is added to the .grad there
// (autograd's in-place add: each element the float sum of the two, as the
// tree adds a node's two rows). `on_chunk` (may be empty) is called with
// its keys before the backward; `on_micro_batch`, `before_last` and `sum`
// are not used.
using ChunkObserver = std::function<void(const ChunkShare& chunk, const at::Tensor& update_keys)>;
absl::StatusOr<WeightedBackwardResult> ChunkBackward(const ChunkShare& chunk,
                                                     const ShareBackwardParts& parts,
                                                     const ChunkObserver& on_chunk = nullptr,
                                                     GradientStart start = GradientStart::kZero);

// Copies every parameter's gradient, in registration order, into `row`
// (1-D, as many elements as the parameters); a parameter without a
// gradient leaves its part as it was. Throws what LibTorch throws.
void FlattenGradients(Classifier& model, at::Tensor& row);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_SHARE_BACKWARD_H_
