#include "weighting/update_shares.h"

#include <algorithm>

#include "samplers/micro_batches.h"

namespace receipt_parity {
namespace {

UpdateComposition CompositionOf(const EpochPlan& plan, int64_t update,
                                const WeightingInputs& inputs) {
  return ComposeUpdate(plan, update, *inputs.labels, *inputs.class_counts,
                       inputs.micro_batches);
}

std::vector<MicroBatchShare> ShareOf(const EpochPlan& plan, int64_t update, int rank,
                                     const std::vector<double>& weights, int micro_batches) {
  const std::vector<Slot> slots = plan.UpdateSlots(rank, update).ToVector();
  const int local_batch = plan.local_batch()[rank];
  std::vector<MicroBatchShare> share(micro_batches);
  for (int m = 0; m < micro_batches; ++m) {
    const auto [begin, end] =
        MicroBatchRange(m, static_cast<int64_t>(slots.size()), local_batch, micro_batches);
    share[m].begin = begin;
    share[m].slots.assign(slots.begin() + begin, slots.begin() + end);
    share[m].weights.assign(weights.begin() + begin, weights.begin() + end);
  }
  return share;
}

}  // namespace

UpdateComposition ComposeUpdate(const EpochPlan& plan, int64_t update,
                                const std::vector<int>& labels,
                                const std::vector<int64_t>& class_counts,
                                int micro_batches) {
  UpdateComposition composition;
  composition.class_counts = class_counts;
  composition.micro_batches = micro_batches;
  composition.by_rank.resize(plan.world_size());
  for (int r = 0; r < plan.world_size(); ++r) {
    const DealtSlots slots = plan.UpdateSlots(r, update);
    for (size_t i = 0; i < slots.size(); ++i) {
      composition.by_rank[r].push_back(
          WeightedSlot{labels[slots[i].dataset_index], slots[i].valid,
                       MicroBatchOf(static_cast<int64_t>(i), plan.local_batch()[r],
                                    micro_batches)});
    }
  }
  return composition;
}

std::vector<MicroBatchShare> RankShare(const EpochPlan& plan, int64_t update, int rank,
                                       const WeightingInputs& inputs) {
  const std::vector<double> weights =
      inputs.weighting->Weights(CompositionOf(plan, update, inputs), rank);
  return ShareOf(plan, update, rank, weights, inputs.micro_batches);
}

std::vector<std::vector<MicroBatchShare>> UpdateShares(const EpochPlan& plan, int64_t update,
                                                       const WeightingInputs& inputs) {
  const UpdateComposition composition = CompositionOf(plan, update, inputs);
  std::vector<std::vector<MicroBatchShare>> shares;
  for (int r = 0; r < plan.world_size(); ++r) {
    shares.push_back(ShareOf(plan, update, r, inputs.weighting->Weights(composition, r),
                             inputs.micro_batches));
  }
  return shares;
}

int64_t ChunkRows(const EpochPlan& plan, int chunk_slots) {
  return (plan.global_batch() + chunk_slots - 1) / chunk_slots;
}

std::vector<int64_t> ChunkRowBounds(const EpochPlan& plan, int chunk_slots) {
  std::vector<int64_t> bounds = {0};
  int64_t first = 0;
  for (int r = 0; r + 1 < plan.world_size(); ++r) {
    first += plan.local_batch()[r];
    bounds.push_back(first / chunk_slots);
  }
  bounds.push_back(ChunkRows(plan, chunk_slots));
  return bounds;
}

std::vector<ChunkShare> OrderedChunks(const EpochPlan& plan, int64_t update, int chunk_slots,
                                      const WeightingInputs& inputs) {
  const UpdateComposition composition = CompositionOf(plan, update, inputs);
  std::vector<std::vector<double>> weights_by_rank;
  for (int r = 0; r < plan.world_size(); ++r) {
    weights_by_rank.push_back(inputs.weighting->Weights(composition, r));
  }
  const std::vector<DealtPosition> order = plan.UpdateOrder(update);
  const int64_t positions = static_cast<int64_t>(order.size());
  std::vector<ChunkShare> chunks;
  int64_t first = 0;
  for (int r = 0; r < plan.world_size(); ++r) {
    const int64_t last = first + plan.local_batch()[r];
    for (int64_t begin = first; begin < std::min(last, positions); begin += chunk_slots) {
      const int64_t end = std::min({begin + chunk_slots, last, positions});
      ChunkShare chunk;
      chunk.row = begin / chunk_slots;
      chunk.rank = r;
      for (int64_t p = begin; p < end; ++p) {
        const DealtPosition& at = order[p];
        chunk.positions.push_back(p);
        chunk.slots.push_back(plan.UpdateSlots(at.rank, update)[at.index]);
        chunk.weights.push_back(weights_by_rank[at.rank][at.index]);
      }
      chunks.push_back(std::move(chunk));
    }
    first = last;
  }
  return chunks;
}

}  // namespace receipt_parity
