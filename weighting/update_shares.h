// Who computes what of an update, and with which weights: the one rule the
// ranks' forward and backward passes (trainer/update_step.h), the update
// replay (replay/update_replay.h) and the rank reports follow, so that what
// a replay recomputes is what a rank computed.
//
//   ComposeUpdate   every rank's slots as the loss weighting sees them
//                   (label, valid, micro-batch)
//   RankShare       one rank's slots of an update cut into its
//                   micro-batches (samplers/micro_batches.h), each with the
//                   weighting's weights of its slots
//   OrderedChunks   the ordered mode (reducers/ordered_sum_reducer.h): the
//                   update's global order cut into chunks of C slots, each
//                   with the rank that computes it and its weights
//
// Pure functions of the plan and the weighting; no LibTorch.
#ifndef RECEIPT_PARITY_WEIGHTING_UPDATE_SHARES_H_
#define RECEIPT_PARITY_WEIGHTING_UPDATE_SHARES_H_

#include <cstdint>
#include <vector>

#include "samplers/epoch_plan.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

// The update as the loss weighting sees it: every rank's (label, valid,
// micro-batch), cut into `micro_batches` micro-batches per rank
// (samplers/micro_batches.h). labels: by dataset index.
UpdateComposition ComposeUpdate(const EpochPlan& plan, int64_t update,
                                const std::vector<int>& labels,
                                const std::vector<int64_t>& class_counts,
                                int micro_batches = 1);

// One micro-batch of one rank's share: its slots [begin, begin + size) of
// the rank's slots of the update, and their weights.
struct MicroBatchShare {
  int64_t begin = 0;
  std::vector<Slot> slots;
  std::vector<double> weights;
};

// What the weighting needs besides the plan.
struct WeightingInputs {
  const LossWeighting* weighting = nullptr;
  const std::vector<int>* labels = nullptr;           // by dataset index
  const std::vector<int64_t>* class_counts = nullptr;  // per class
  int micro_batches = 1;
};

// Rank `rank`'s share of update `update`: `inputs.micro_batches`
// micro-batches, in order, each possibly empty (an epoch's last update).
// REQUIRES: 0 <= rank < plan.world_size(), 0 <= update < plan.num_updates(),
// every pointer of `inputs` set.
std::vector<MicroBatchShare> RankShare(const EpochPlan& plan, int64_t update, int rank,
                                       const WeightingInputs& inputs);

// Every rank's share (RankShare of each rank, the composition made once).
std::vector<std::vector<MicroBatchShare>> UpdateShares(const EpochPlan& plan, int64_t update,
                                                       const WeightingInputs& inputs);

// One chunk of the ordered mode: positions [row * C, row * C + size) of the
// update's global order, the rank that holds them, their slots and weights.
struct ChunkShare {
  int64_t row = 0;
  int rank = 0;
  std::vector<int64_t> positions;
  std::vector<Slot> slots;
  std::vector<double> weights;
};

// The update's chunks of `chunk_slots` slots, in row order; rows beyond
// the update's last position (an epoch's short last update) have none.
// Each rank's share of the global batch is whole chunks (the config loader
// refuses other splits); a chunk never crosses a rank's share.
// REQUIRES: as RankShare, chunk_slots >= 1.
std::vector<ChunkShare> OrderedChunks(const EpochPlan& plan, int64_t update, int chunk_slots,
                                      const WeightingInputs& inputs);

// The number of rows the ordered mode's chunk matrix has: ceil(global batch
// / chunk_slots), whatever the update holds.
int64_t ChunkRows(const EpochPlan& plan, int chunk_slots);

// Which rows of that matrix each rank computes: rank r the rows
// [bounds[r], bounds[r + 1]), its share of the global batch in chunks
// (world size + 1 bounds from 0 to ChunkRows; the rows past the global
// batch's last chunk are the last rank's). REQUIRES: every rank's first
// slot is a multiple of chunk_slots (the config loader's rule).
std::vector<int64_t> ChunkRowBounds(const EpochPlan& plan, int chunk_slots);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_WEIGHTING_UPDATE_SHARES_H_
