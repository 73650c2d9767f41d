#include "samplers/epoch_plan.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Positions 0..size-1 of a global order, position p holding index 100 + p.
GlobalOrder Positions(int64_t size) {
  GlobalOrder order;
  for (int64_t p = 0; p < size; ++p) order.slots.push_back({100 + p, true});
  return order;
}

std::vector<int64_t> Indices(const DealtSlots& slots) {
  std::vector<int64_t> indices;
  for (const Slot& slot : slots) indices.push_back(slot.dataset_index);
  return indices;
}

TEST(DealEpochPlanTest, EqualLocalBatchesGiveTheDistributedSamplerStride) {
  const int64_t total = 48;
  for (int batch : {1, 2, 4}) {
    EpochPlan plan = DealEpochPlan(0, Positions(total), {batch, batch, batch});
    ASSERT_EQ(plan.world_size(), 3);
    for (int r = 0; r < 3; ++r) {
      const DealtSlots slots = plan.rank_slots(r);
      ASSERT_EQ(slots.size(), 16u) << "batch " << batch;
      for (size_t k = 0; k < slots.size(); ++k) {
        // DistributedSampler: indices[rank:total:num_replicas].
        EXPECT_EQ(slots[k].dataset_index, 100 + r + 3 * int64_t(k))
            << "batch " << batch << " rank " << r << " slot " << k;
      }
    }
    EXPECT_EQ(plan.num_updates(), 16 / batch);
    EXPECT_EQ(plan.global_batch(), 3 * batch);
    EXPECT_EQ(plan.UpdateSlots(1, 0).size(), static_cast<size_t>(batch));
  }
}

TEST(DealEpochPlanTest, UnevenLocalBatchesDealBlocksRoundRobinOverRoom) {
  // Blocks of 4: rank 1 has room for one slot, so it takes the second
  // position and rank 0 the other three.
  EpochPlan plan = DealEpochPlan(3, Positions(10), {3, 1});
  EXPECT_EQ(plan.epoch(), 3);
  EXPECT_EQ(plan.num_updates(), 3);
  EXPECT_THAT(Indices(plan.UpdateSlots(0, 0)), ElementsAre(100, 102, 103));
  EXPECT_THAT(Indices(plan.UpdateSlots(1, 0)), ElementsAre(101));
  EXPECT_THAT(Indices(plan.UpdateSlots(0, 1)), ElementsAre(104, 106, 107));
  EXPECT_THAT(Indices(plan.UpdateSlots(1, 1)), ElementsAre(105));
  // Last, partial update: positions 8 and 9.
  EXPECT_THAT(Indices(plan.UpdateSlots(0, 2)), ElementsAre(108));
  EXPECT_THAT(Indices(plan.UpdateSlots(1, 2)), ElementsAre(109));
  EXPECT_EQ(plan.GlobalAcceptedCount(0), 4);
  EXPECT_EQ(plan.GlobalAcceptedCount(2), 2);
}

TEST(DealEpochPlanTest, ARankMayHoldNoSlotInTheLastUpdate) {
  EpochPlan plan = DealEpochPlan(0, Positions(9), {3, 1});
  EXPECT_EQ(plan.num_updates(), 3);
  EXPECT_THAT(Indices(plan.UpdateSlots(0, 2)), ElementsAre(108));
  EXPECT_THAT(plan.UpdateSlots(1, 2), IsEmpty());
  EXPECT_EQ(plan.rank_slots(0).size(), 7u);
  EXPECT_EQ(plan.rank_slots(1).size(), 2u);
  EXPECT_EQ(plan.GlobalAcceptedCount(2), 1);
}

TEST(DealEpochPlanTest, ARankWithLocalBatchZeroGetsNothing) {
  EpochPlan plan = DealEpochPlan(0, Positions(5), {2, 0});
  EXPECT_EQ(plan.num_updates(), 3);
  EXPECT_THAT(Indices(plan.rank_slots(0)),
              ElementsAre(100, 101, 102, 103, 104));
  EXPECT_THAT(plan.rank_slots(1), IsEmpty());
  EXPECT_THAT(plan.UpdateSlots(1, 2), IsEmpty());
}

TEST(DealEpochPlanTest, GlobalAcceptedCountSkipsMaskedSlots) {
  GlobalOrder order = Positions(8);
  order.slots[6].valid = false;
  order.slots[7].valid = false;
  EpochPlan plan = DealEpochPlan(0, order, {2, 2});
  EXPECT_EQ(plan.num_updates(), 2);
  EXPECT_EQ(plan.GlobalAcceptedCount(0), 4);
  EXPECT_EQ(plan.GlobalAcceptedCount(1), 2);
}

TEST(DealEpochPlanTest, EmptyOrderHasNoUpdates) {
  EpochPlan plan = DealEpochPlan(0, GlobalOrder(), {1, 1, 1});
  EXPECT_EQ(plan.num_updates(), 0);
  for (int r = 0; r < 3; ++r) EXPECT_THAT(plan.rank_slots(r), IsEmpty());
}

TEST(DealEpochPlanTest, KeepsTheDroppedIndices) {
  GlobalOrder order = Positions(4);
  order.dropped = {7, 3};
  EXPECT_THAT(DealEpochPlan(0, order, {1, 1}).dropped(), ElementsAre(7, 3));
}

// The deal of the file comment written out plainly: every rank's slots
// copied out of the order block by block.
std::vector<std::vector<Slot>> ReferenceDeal(const GlobalOrder& order,
                                             const std::vector<int>& local_batch) {
  std::vector<std::vector<Slot>> by_rank(local_batch.size());
  int64_t block = 0;
  for (int batch : local_batch) block += batch;
  const int64_t total = static_cast<int64_t>(order.slots.size());
  for (int64_t start = 0; start < total; start += block) {
    const int64_t end = std::min(total, start + block);
    const std::vector<int> ranks = BlockDeal(local_batch, end - start);
    for (int64_t p = start; p < end; ++p) by_rank[ranks[p - start]].push_back(order.slots[p]);
  }
  return by_rank;
}

TEST(DealEpochPlanTest, RankAndUpdateSlotsAreTheReferenceDeal) {
  const std::vector<std::vector<int>> batches = {
      {1}, {2, 2}, {3, 1}, {3, 1, 2}, {2, 0, 3}, {0, 4}, {5, 5, 5, 5, 5, 5, 5, 5}};
  for (const std::vector<int>& local_batch : batches) {
    for (int64_t total = 0; total <= 45; ++total) {
      GlobalOrder order = Positions(total);
      for (int64_t p = 0; p < total; p += 7) order.slots[p].valid = false;
      const std::vector<std::vector<Slot>> reference = ReferenceDeal(order, local_batch);
      const EpochPlan plan = DealEpochPlan(1, order, local_batch);
      int64_t updates = 0;
      for (size_t r = 0; r < local_batch.size(); ++r) {
        const int64_t size = static_cast<int64_t>(reference[r].size());
        if (local_batch[r] > 0) {
          updates = std::max<int64_t>(updates, (size + local_batch[r] - 1) / local_batch[r]);
        }
      }
      ASSERT_EQ(plan.num_updates(), updates) << "total " << total;
      for (int r = 0; r < plan.world_size(); ++r) {
        const std::string where = absl::StrCat("total ", total, " rank ", r);
        ASSERT_EQ(plan.NumRankSlots(r), static_cast<int64_t>(reference[r].size())) << where;
        EXPECT_EQ(plan.rank_slots(r).ToVector(), reference[r]) << where;
        for (int64_t u = 0; u < plan.num_updates(); ++u) {
          const int64_t begin = std::min<int64_t>(u * local_batch[r], reference[r].size());
          const int64_t end = std::min<int64_t>((u + 1) * local_batch[r], reference[r].size());
          // Walked (ToVector) and indexed: both the reference's.
          EXPECT_EQ(plan.UpdateSlots(r, u).ToVector(),
                    std::vector<Slot>(reference[r].begin() + begin, reference[r].begin() + end))
              << where << " update " << u;
          const DealtSlots update = plan.UpdateSlots(r, u);
          for (size_t i = 0; i < update.size(); ++i) {
            EXPECT_EQ(update[i], reference[r][begin + i]) << where << " update " << u;
          }
        }
      }
      for (int64_t u = 0; u < plan.num_updates(); ++u) {
        int64_t accepted = 0;
        for (int r = 0; r < plan.world_size(); ++r) {
          for (const Slot& slot : plan.UpdateSlots(r, u)) accepted += slot.valid;
        }
        EXPECT_EQ(plan.GlobalAcceptedCount(u), accepted) << "total " << total << " update " << u;
      }
    }
  }
}

TEST(DealEpochPlanTest, EveryRankReadsTheOneGlobalOrderAndCopiesNothing) {
  GlobalOrder order = Positions(1000);
  const Slot* held = order.slots.data();
  const EpochPlan plan = DealEpochPlan(0, std::move(order), std::vector<int>(8, 4));
  // The plan kept the order it was given (moved, not copied) and every
  // rank's slots are that order's, read by position.
  EXPECT_EQ(plan.global_order().slots.data(), held);
  EXPECT_EQ(plan.global_order().slots.size(), 1000u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(plan.NumRankSlots(r), 125);
    EXPECT_EQ(plan.RankSlot(r, 124).dataset_index, 100 + r + 8 * 124);
  }
}

TEST(EpochPlanFingerprintTest, EqualPlansHashEqualAndEveryPartMatters) {
  GlobalOrder order = Positions(10);
  order.dropped = {11};
  const uint64_t base = DealEpochPlan(2, order, {1, 1}).Fingerprint();
  EXPECT_EQ(DealEpochPlan(2, order, {1, 1}).Fingerprint(), base);

  EXPECT_NE(DealEpochPlan(3, order, {1, 1}).Fingerprint(), base);
  EXPECT_NE(DealEpochPlan(2, order, {2, 2}).Fingerprint(), base);

  GlobalOrder masked = order;
  masked.slots[9].valid = false;
  EXPECT_NE(DealEpochPlan(2, masked, {1, 1}).Fingerprint(), base);

  GlobalOrder swapped = order;
  std::swap(swapped.slots[0], swapped.slots[1]);
  EXPECT_NE(DealEpochPlan(2, swapped, {1, 1}).Fingerprint(), base);

  GlobalOrder other_drop = order;
  other_drop.dropped = {12};
  EXPECT_NE(DealEpochPlan(2, other_drop, {1, 1}).Fingerprint(), base);
}

TEST(EpochPlanFingerprintTest, TheDealtOrderIsWhichIndicesEachRankHoldsAndNothingElse) {
  GlobalOrder order = Positions(10);
  const uint64_t base = DealEpochPlan(2, order, {1, 1}).DealtOrderFingerprint();
  // Another epoch, masked slots, other dropped indices: the same order.
  GlobalOrder masked = order;
  masked.slots[9].valid = false;
  masked.dropped = {12};
  EXPECT_EQ(DealEpochPlan(3, masked, {1, 1}).DealtOrderFingerprint(), base);
  // Other indices, or the same ones dealt otherwise: another order.
  GlobalOrder swapped = order;
  std::swap(swapped.slots[0], swapped.slots[1]);
  EXPECT_NE(DealEpochPlan(2, swapped, {1, 1}).DealtOrderFingerprint(), base);
  EXPECT_NE(DealEpochPlan(2, order, {3, 1}).DealtOrderFingerprint(), base);
}

// An uneven deal with a partial last block, masked slots and dropped
// indices: its hashes are pinned to the values the plan gave when it held
// every rank's slots as copies, so holding the global order once changed
// no run's fingerprint.
GlobalOrder PinnedOrder() {
  GlobalOrder order = Positions(23);
  order.slots[4].valid = false;
  order.slots[21].valid = false;
  order.dropped = {5, 9};
  return order;
}

TEST(EpochPlanFingerprintTest, TheHashOfAPlanIsPinned) {
  const EpochPlan plan = DealEpochPlan(4, PinnedOrder(), {3, 1, 2});
  EXPECT_EQ(plan.Fingerprint(), 9432105912719753425u);
  EXPECT_EQ(plan.DealtOrderFingerprint(), 12169862133064657497u);
}

}  // namespace
}  // namespace receipt_parity
