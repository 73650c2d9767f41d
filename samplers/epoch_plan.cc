#include "samplers/epoch_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "logging/glog.h"

namespace receipt_parity {
namespace {

// FNV-1a, 64 bit, fed integers byte by byte in little-endian order so the
// hash does not depend on the host's byte order or struct layout.
class Fnv1a {
 public:
  void Add(uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash_ ^= (value >> (8 * byte)) & 0xffu;
      hash_ *= 0x100000001b3ull;
    }
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

// The positions of a block of `positions` dealt by BlockDeal, by rank.
std::vector<std::vector<int>> PositionsByRank(const std::vector<int>& local_batch,
                                              int64_t positions) {
  std::vector<std::vector<int>> by_rank(local_batch.size());
  const std::vector<int> ranks = BlockDeal(local_batch, positions);
  for (size_t p = 0; p < ranks.size(); ++p) {
    by_rank[ranks[p]].push_back(static_cast<int>(p));
  }
  return by_rank;
}

}  // namespace

std::vector<int> BlockDeal(const std::vector<int>& local_batch, int64_t positions) {
  const int world_size = static_cast<int>(local_batch.size());
  std::vector<int> ranks;
  ranks.reserve(static_cast<size_t>(positions));
  std::vector<int> room = local_batch;
  int next_rank = 0;
  for (int64_t p = 0; p < positions; ++p) {
    // The positions of a block never exceed its room, so a rank with room
    // is always found within one turn.
    while (room[next_rank] == 0) next_rank = (next_rank + 1) % world_size;
    ranks.push_back(next_rank);
    --room[next_rank];
    next_rank = (next_rank + 1) % world_size;
  }
  return ranks;
}

Slot DealtSlots::operator[](size_t k) const {
  return plan_->RankSlot(rank_, begin_ + static_cast<int64_t>(k));
}

std::vector<Slot> DealtSlots::ToVector() const {
  std::vector<Slot> slots;
  slots.reserve(size());
  for (const Slot& slot : *this) slots.push_back(slot);
  return slots;
}

EpochPlan::EpochPlan(int64_t epoch, GlobalOrder order, std::vector<int> local_batch)
    : epoch_(epoch), local_batch_(std::move(local_batch)), order_(std::move(order)) {
  CHECK(!local_batch_.empty()) << "no ranks";
  for (int batch : local_batch_) CHECK_GE(batch, 0) << "negative local batch";
  global_batch_ =
      std::accumulate(local_batch_.begin(), local_batch_.end(), int64_t{0});
  CHECK_GT(global_batch_, 0) << "global batch must be positive";
  const int64_t total = static_cast<int64_t>(order_.slots.size());
  num_full_blocks_ = total / global_batch_;
  num_updates_ = (total + global_batch_ - 1) / global_batch_;
  full_block_ = PositionsByRank(local_batch_, global_batch_);
  last_block_ = PositionsByRank(local_batch_, total % global_batch_);
}

int EpochPlan::global_batch() const { return static_cast<int>(global_batch_); }

int64_t EpochPlan::NumRankSlots(int rank) const {
  CHECK(rank >= 0 && rank < world_size()) << "rank " << rank;
  return num_full_blocks_ * local_batch_[rank] +
         static_cast<int64_t>(last_block_[rank].size());
}

Slot EpochPlan::RankSlot(int rank, int64_t k) const {
  const int batch = local_batch_[rank];
  return RankSlotOfBlock(rank, k / batch, static_cast<int>(k % batch));
}

DealtSlots EpochPlan::rank_slots(int rank) const {
  return DealtSlots(this, rank, 0, NumRankSlots(rank));
}

DealtSlots EpochPlan::UpdateSlots(int rank, int64_t update) const {
  CHECK(update >= 0 && update < num_updates_) << "update " << update;
  const int64_t size = NumRankSlots(rank);
  const int64_t batch = local_batch_[rank];
  return DealtSlots(this, rank, std::min(size, update * batch),
                    std::min(size, (update + 1) * batch));
}

int64_t EpochPlan::GlobalAcceptedCount(int64_t update) const {
  CHECK(update >= 0 && update < num_updates_) << "update " << update;
  // Every position of the update's block is dealt to one rank.
  const int64_t total = static_cast<int64_t>(order_.slots.size());
  int64_t accepted = 0;
  for (int64_t p = update * global_batch_;
       p < std::min(total, (update + 1) * global_batch_); ++p) {
    accepted += order_.slots[p].valid;
  }
  return accepted;
}

uint64_t EpochPlan::DealtOrderFingerprint() const {
  Fnv1a fnv;
  for (int r = 0; r < world_size(); ++r) {
    fnv.Add(static_cast<uint64_t>(NumRankSlots(r)));
    for (const Slot& slot : rank_slots(r)) {
      fnv.Add(static_cast<uint64_t>(slot.dataset_index));
    }
  }
  return fnv.hash();
}

uint64_t EpochPlan::Fingerprint() const {
  Fnv1a fnv;
  fnv.Add(static_cast<uint64_t>(epoch_));
  fnv.Add(local_batch_.size());
  for (int batch : local_batch_) fnv.Add(static_cast<uint64_t>(batch));
  for (int r = 0; r < world_size(); ++r) {
    fnv.Add(static_cast<uint64_t>(NumRankSlots(r)));
    for (const Slot& slot : rank_slots(r)) {
      fnv.Add(static_cast<uint64_t>(slot.dataset_index));
      fnv.Add(slot.valid ? 1 : 0);
    }
  }
  fnv.Add(order_.dropped.size());
  for (int64_t index : order_.dropped) fnv.Add(static_cast<uint64_t>(index));
  return fnv.hash();
}

std::vector<DealtPosition> EpochPlan::UpdateOrder(int64_t update) const {
  CHECK(update >= 0 && update < num_updates_) << "update " << update;
  const int64_t total = static_cast<int64_t>(order_.slots.size());
  const int64_t positions =
      std::min(total, (update + 1) * global_batch_) - update * global_batch_;
  std::vector<int> taken(world_size(), 0);
  std::vector<DealtPosition> order;
  order.reserve(static_cast<size_t>(positions));
  for (int rank : BlockDeal(local_batch_, positions)) order.push_back({rank, taken[rank]++});
  return order;
}

EpochPlan DealEpochPlan(int64_t epoch, GlobalOrder order,
                        const std::vector<int>& local_batch) {
  return EpochPlan(epoch, std::move(order), local_batch);
}

}  // namespace receipt_parity
