// Gradient accumulation's micro-batches: how one rank's slots of an update
// are cut into `micro_batches` consecutive micro-batches, each computed
// alone and their gradients added before the one reduction of the update.
//
// Micro-batch m of a rank whose local batch is b holds the update's slots
// [m * b / k, (m + 1) * b / k) (k = micro_batches): every micro-batch has
// b / k slots, in slot order. In an epoch's last update a rank may hold
// fewer than b slots: the rule is the same, so its last micro-batches hold
// fewer slots, or none. The trainer, the loss weighting, the sampler audit
// and first_step.json all use this one rule.
//
// REQUIRES everywhere: micro_batches >= 1 and local_batch % micro_batches
// == 0 (the config refuses anything else), slot_index >= 0.
#ifndef RECEIPT_PARITY_SAMPLERS_MICRO_BATCHES_H_
#define RECEIPT_PARITY_SAMPLERS_MICRO_BATCHES_H_

#include <cstdint>
#include <utility>

namespace receipt_parity {

// The micro-batch of the rank's `slot_index`-th slot of an update.
int MicroBatchOf(int64_t slot_index, int local_batch, int micro_batches);

// [begin, end) of micro-batch `micro_batch` among the rank's
// `slots_in_update` slots of an update (empty: begin == end).
std::pair<int64_t, int64_t> MicroBatchRange(int micro_batch, int64_t slots_in_update,
                                            int local_batch, int micro_batches);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_MICRO_BATCHES_H_
