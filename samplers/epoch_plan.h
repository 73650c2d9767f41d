// The epoch plan: every rank's ordered slots for every update of an epoch.
//
// A sampler policy (samplers/sampler_policy.h) decides the GLOBAL order of
// one epoch: which dataset indices, in which order, which padded slots are
// masked, which indices are dropped. DealEpochPlan() then deals that order
// to ranks and updates the same way for every policy:
//
//   position p of the global order goes to block u = p / B (B = global
//   batch); inside a block, slots are dealt round-robin over the ranks that
//   still have room in that update (rank r has room for local_batch[r]).
//
// With equal local batches this gives rank r the positions r, r+W, r+2W,
// ... (torch.utils.data.DistributedSampler's stride) and update boundaries
// every B/W slots. Every rank has the same number of updates by
// construction; in the last update a rank may hold fewer slots, or none.
//
// A plan is a pure function of (policy, num_examples, world size, seed,
// epoch, local batches): every rank computes the same plan without
// communicating, so each knows the global accepted count of every update.
#ifndef RECEIPT_PARITY_SAMPLERS_EPOCH_PLAN_H_
#define RECEIPT_PARITY_SAMPLERS_EPOCH_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace receipt_parity {

struct Slot {
  int64_t dataset_index = 0;
  // false for a masked pad slot: it is computed but weighs zero.
  bool valid = true;

  bool operator==(const Slot& other) const {
    return dataset_index == other.dataset_index && valid == other.valid;
  }
};

// What a policy returns: the epoch's global order before dealing.
struct GlobalOrder {
  std::vector<Slot> slots;
  // Dataset indices left out of this epoch (drop_tail), in permutation order.
  std::vector<int64_t> dropped;
};

// Where one position of an update's block of the global order was dealt:
// UpdateSlots(rank, update)[index].
struct DealtPosition {
  int rank = 0;
  int index = 0;
};

// The rank each of a block's first `positions` positions is dealt to (the
// deal of the file comment: round robin over the ranks with room left).
// REQUIRES: positions <= the sum of local_batch.
std::vector<int> BlockDeal(const std::vector<int>& local_batch, int64_t positions);

class EpochPlan {
 public:
  EpochPlan() = default;
  EpochPlan(int64_t epoch, std::vector<int> local_batch,
            std::vector<std::vector<Slot>> slots_by_rank,
            std::vector<int64_t> dropped);

  int64_t epoch() const { return epoch_; }
  int world_size() const { return static_cast<int>(local_batch_.size()); }
  const std::vector<int>& local_batch() const { return local_batch_; }
  int global_batch() const;

  // Updates in the epoch; the same on every rank.
  int64_t num_updates() const { return num_updates_; }

  // All slots of `rank` in epoch order.
  const std::vector<Slot>& rank_slots(int rank) const {
    return slots_by_rank_[rank];
  }
  // The slots of `rank` in `update` (possibly empty in the last update).
  // REQUIRES: 0 <= rank < world_size(), 0 <= update < num_updates().
  absl::Span<const Slot> UpdateSlots(int rank, int64_t update) const;

  // The update's block in the global order: position p of the block is
  // UpdateSlots(order[p].rank, update)[order[p].index] (the deal inverted;
  // the ordered reduction mode computes the block's chunks by position,
  // reducers/ordered_sum_reducer.h). REQUIRES: as UpdateSlots.
  std::vector<DealtPosition> UpdateOrder(int64_t update) const;

  // Valid slots of `update` over all ranks: the effective-batch denominator.
  int64_t GlobalAcceptedCount(int64_t update) const;

  const std::vector<int64_t>& dropped() const { return dropped_; }

  // A stable 64-bit hash of the whole plan (ranks compare it to prove they
  // agree).
  uint64_t Fingerprint() const;

  // A stable 64-bit hash of which dataset indices each rank holds, in
  // order, and nothing else (not the epoch, valid flags or dropped
  // indices): two epochs deal the same indices to every rank when it is
  // equal (the audit's epoch_orders_differ).
  uint64_t DealtOrderFingerprint() const;

 private:
  int64_t epoch_ = 0;
  std::vector<int> local_batch_;
  std::vector<std::vector<Slot>> slots_by_rank_;
  // update_start_[r][u]: index into slots_by_rank_[r] where update u starts;
  // one extra entry at the end.
  std::vector<std::vector<int64_t>> update_start_;
  std::vector<int64_t> dropped_;
  int64_t num_updates_ = 0;
};

// Deals `order` to ranks and updates (see the file comment).
// REQUIRES: local_batch non-empty, every entry >= 0, their sum > 0.
EpochPlan DealEpochPlan(int64_t epoch, const GlobalOrder& order,
                        const std::vector<int>& local_batch);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_EPOCH_PLAN_H_
