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
//
// The plan holds the global order once and the deal of one full block (and
// of the last, partial one); a rank's slots are read from the order by
// position arithmetic (DealtSlots), so no rank materialises every rank's
// slots: the plan's memory is the order's, whatever the world size.
#ifndef RECEIPT_PARITY_SAMPLERS_EPOCH_PLAN_H_
#define RECEIPT_PARITY_SAMPLERS_EPOCH_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "data/slot.h"

namespace receipt_parity {

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

class EpochPlan;

// Consecutive slots of one rank, [begin, end) of its slots in epoch order,
// read from the plan's global order on access (nothing is copied). A view:
// valid while the plan it came from lives and is not moved.
class DealtSlots {
 public:
  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Slot;
    using difference_type = std::ptrdiff_t;
    using pointer = const Slot*;
    using reference = Slot;

    // The k-th slot of `slots`; walking on from it needs no division.
    inline const_iterator(const DealtSlots* slots, int64_t k);
    inline Slot operator*() const;
    inline const_iterator& operator++();
    bool operator==(const const_iterator& other) const { return k_ == other.k_; }
    bool operator!=(const const_iterator& other) const { return k_ != other.k_; }

   private:
    const EpochPlan* plan_;
    int rank_;
    int64_t k_;
    int batch_;        // the rank's slots per block
    int64_t block_;    // the block of the rank's slot begin + k_
    int in_block_;     // its place among the rank's slots of that block
  };
  using iterator = const_iterator;
  using value_type = Slot;

  DealtSlots(const EpochPlan* plan, int rank, int64_t begin, int64_t end)
      : plan_(plan), rank_(rank), begin_(begin), end_(end) {}

  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  bool empty() const { return end_ == begin_; }
  // The k-th slot of the view. REQUIRES: k < size().
  Slot operator[](size_t k) const;
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, end_ - begin_); }
  // A copy, for a caller that keeps the slots past the plan's life.
  std::vector<Slot> ToVector() const;

 private:
  const EpochPlan* plan_;
  int rank_;
  int64_t begin_;
  int64_t end_;
};

class EpochPlan {
 public:
  EpochPlan() = default;
  // Deals `order` (see the file comment). REQUIRES: local_batch non-empty,
  // every entry >= 0, their sum > 0.
  EpochPlan(int64_t epoch, GlobalOrder order, std::vector<int> local_batch);

  int64_t epoch() const { return epoch_; }
  int world_size() const { return static_cast<int>(local_batch_.size()); }
  const std::vector<int>& local_batch() const { return local_batch_; }
  int global_batch() const;

  // Updates in the epoch; the same on every rank.
  int64_t num_updates() const { return num_updates_; }

  // How many slots `rank` holds in the epoch. REQUIRES: 0 <= rank <
  // world_size().
  int64_t NumRankSlots(int rank) const;
  // All slots of `rank` in epoch order. REQUIRES: as NumRankSlots.
  DealtSlots rank_slots(int rank) const;
  // The slots of `rank` in `update` (possibly empty in the last update).
  // REQUIRES: 0 <= rank < world_size(), 0 <= update < num_updates().
  DealtSlots UpdateSlots(int rank, int64_t update) const;
  // The k-th slot of `rank` in epoch order, read from the global order.
  // REQUIRES: 0 <= k < NumRankSlots(rank).
  Slot RankSlot(int rank, int64_t k) const;
  // The same by block: slot `in_block` of `rank`'s slots of block `block`
  // (k = block * local_batch()[rank] + in_block).
  Slot RankSlotOfBlock(int rank, int64_t block, int in_block) const {
    const RankPositions& deal = block < num_full_blocks_ ? full_block_ : last_block_;
    return order_.slots[block * global_batch_ + deal[rank][in_block]];
  }

  // The update's block in the global order: position p of the block is
  // UpdateSlots(order[p].rank, update)[order[p].index] (the deal inverted;
  // the ordered reduction mode computes the block's chunks by position,
  // reducers/ordered_sum_reducer.h). REQUIRES: as UpdateSlots.
  std::vector<DealtPosition> UpdateOrder(int64_t update) const;

  // Where UpdateSlots(rank, update)[index] sits in the update's block of
  // the global order (UpdateOrder inverted for one slot).
  // REQUIRES: as UpdateSlots, 0 <= index < UpdateSlots(rank, update).size().
  int BlockPosition(int rank, int64_t update, int index) const {
    return (update < num_full_blocks_ ? full_block_ : last_block_)[rank][index];
  }

  // Valid slots of `update` over all ranks: the effective-batch denominator.
  int64_t GlobalAcceptedCount(int64_t update) const;

  const std::vector<int64_t>& dropped() const { return order_.dropped; }
  // The global order the plan deals, held once: every DealtSlots reads it.
  const GlobalOrder& global_order() const { return order_; }

  // A stable 64-bit hash of the whole plan (ranks compare it to prove they
  // agree).
  uint64_t Fingerprint() const;

  // A stable 64-bit hash of which dataset indices each rank holds, in
  // order, and nothing else (not the epoch, valid flags or dropped
  // indices): two epochs deal the same indices to every rank when it is
  // equal (the audit's epoch_orders_differ).
  uint64_t DealtOrderFingerprint() const;

 private:
  // positions[r][i]: the position inside a block of rank r's i-th slot of
  // that block (BlockDeal inverted).
  using RankPositions = std::vector<std::vector<int>>;

  int64_t epoch_ = 0;
  std::vector<int> local_batch_;
  GlobalOrder order_;
  int64_t global_batch_ = 0;
  // Blocks of global_batch_ positions; a last, partial block follows them
  // when the order's size is not a multiple of it.
  int64_t num_full_blocks_ = 0;
  int64_t num_updates_ = 0;
  RankPositions full_block_;
  RankPositions last_block_;
};

// Deals `order` to ranks and updates: EpochPlan's constructor, taking the
// order by value so a caller that moves it in copies nothing.
// REQUIRES: as EpochPlan's constructor.
EpochPlan DealEpochPlan(int64_t epoch, GlobalOrder order,
                        const std::vector<int>& local_batch);

DealtSlots::const_iterator::const_iterator(const DealtSlots* slots, int64_t k)
    : plan_(slots->plan_), rank_(slots->rank_), k_(k),
      batch_(slots->plan_->local_batch()[slots->rank_]), block_(0), in_block_(0) {
  if (batch_ > 0) {
    block_ = (slots->begin_ + k) / batch_;
    in_block_ = static_cast<int>((slots->begin_ + k) % batch_);
  }
}

Slot DealtSlots::const_iterator::operator*() const {
  return plan_->RankSlotOfBlock(rank_, block_, in_block_);
}

DealtSlots::const_iterator& DealtSlots::const_iterator::operator++() {
  ++k_;
  if (++in_block_ == batch_) {
    in_block_ = 0;
    ++block_;
  }
  return *this;
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_EPOCH_PLAN_H_
