#include "samplers/epoch_plan.h"

#include <vector>

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

std::vector<int64_t> Indices(absl::Span<const Slot> slots) {
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
      const std::vector<Slot>& slots = plan.rank_slots(r);
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

}  // namespace
}  // namespace receipt_parity
