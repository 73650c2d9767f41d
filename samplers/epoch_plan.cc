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

}  // namespace

EpochPlan::EpochPlan(int64_t epoch, std::vector<int> local_batch,
                     std::vector<std::vector<Slot>> slots_by_rank,
                     std::vector<int64_t> dropped)
    : epoch_(epoch),
      local_batch_(std::move(local_batch)),
      slots_by_rank_(std::move(slots_by_rank)),
      dropped_(std::move(dropped)) {
  CHECK_EQ(local_batch_.size(), slots_by_rank_.size())
      << "one slot list per rank";
  // Dealt plans hold local_batch[r] slots per update on rank r, except in
  // the last update; the epoch has as many updates as its longest rank.
  for (size_t r = 0; r < slots_by_rank_.size(); ++r) {
    const int64_t size = static_cast<int64_t>(slots_by_rank_[r].size());
    const int batch = local_batch_[r];
    CHECK(batch > 0 || size == 0) << "rank " << r << " has slots but "
                                  << "local batch 0";
    if (batch > 0) {
      num_updates_ = std::max(num_updates_, (size + batch - 1) / batch);
    }
  }
  update_start_.resize(slots_by_rank_.size());
  for (size_t r = 0; r < slots_by_rank_.size(); ++r) {
    const int64_t size = static_cast<int64_t>(slots_by_rank_[r].size());
    for (int64_t u = 0; u <= num_updates_; ++u) {
      update_start_[r].push_back(std::min<int64_t>(u * local_batch_[r], size));
    }
  }
}

uint64_t EpochPlan::DealtOrderFingerprint() const {
  Fnv1a fnv;
  for (const std::vector<Slot>& slots : slots_by_rank_) {
    fnv.Add(slots.size());
    for (const Slot& slot : slots) fnv.Add(static_cast<uint64_t>(slot.dataset_index));
  }
  return fnv.hash();
}

int EpochPlan::global_batch() const {
  return std::accumulate(local_batch_.begin(), local_batch_.end(), 0);
}

absl::Span<const Slot> EpochPlan::UpdateSlots(int rank, int64_t update) const {
  CHECK(rank >= 0 && rank < world_size()) << "rank " << rank;
  CHECK(update >= 0 && update < num_updates_) << "update " << update;
  const int64_t begin = update_start_[rank][update];
  const int64_t end = update_start_[rank][update + 1];
  return absl::MakeConstSpan(slots_by_rank_[rank]).subspan(begin, end - begin);
}

int64_t EpochPlan::GlobalAcceptedCount(int64_t update) const {
  int64_t accepted = 0;
  for (int r = 0; r < world_size(); ++r) {
    for (const Slot& slot : UpdateSlots(r, update)) accepted += slot.valid;
  }
  return accepted;
}

uint64_t EpochPlan::Fingerprint() const {
  Fnv1a fnv;
  fnv.Add(static_cast<uint64_t>(epoch_));
  fnv.Add(local_batch_.size());
  for (int batch : local_batch_) fnv.Add(static_cast<uint64_t>(batch));
  for (const std::vector<Slot>& slots : slots_by_rank_) {
    fnv.Add(slots.size());
    for (const Slot& slot : slots) {
      fnv.Add(static_cast<uint64_t>(slot.dataset_index));
      fnv.Add(slot.valid ? 1 : 0);
    }
  }
  fnv.Add(dropped_.size());
  for (int64_t index : dropped_) fnv.Add(static_cast<uint64_t>(index));
  return fnv.hash();
}

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

std::vector<DealtPosition> EpochPlan::UpdateOrder(int64_t update) const {
  int64_t positions = 0;
  for (int r = 0; r < world_size(); ++r) {
    positions += static_cast<int64_t>(UpdateSlots(r, update).size());
  }
  std::vector<int> taken(world_size(), 0);
  std::vector<DealtPosition> order;
  order.reserve(static_cast<size_t>(positions));
  for (int rank : BlockDeal(local_batch_, positions)) order.push_back({rank, taken[rank]++});
  return order;
}

EpochPlan DealEpochPlan(int64_t epoch, const GlobalOrder& order,
                        const std::vector<int>& local_batch) {
  CHECK(!local_batch.empty()) << "no ranks";
  const int world_size = static_cast<int>(local_batch.size());
  for (int batch : local_batch) CHECK_GE(batch, 0) << "negative local batch";
  const int64_t block =
      std::accumulate(local_batch.begin(), local_batch.end(), int64_t{0});
  CHECK_GT(block, 0) << "global batch must be positive";

  std::vector<std::vector<Slot>> slots_by_rank(world_size);
  const int64_t total = static_cast<int64_t>(order.slots.size());
  for (int64_t block_start = 0; block_start < total; block_start += block) {
    const int64_t block_end = std::min(total, block_start + block);
    const std::vector<int> ranks = BlockDeal(local_batch, block_end - block_start);
    for (int64_t p = block_start; p < block_end; ++p) {
      slots_by_rank[ranks[p - block_start]].push_back(order.slots[p]);
    }
  }
  return EpochPlan(epoch, local_batch, std::move(slots_by_rank), order.dropped);
}

}  // namespace receipt_parity
