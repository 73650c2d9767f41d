#include "artifacts/world_size_change.h"

#include "gtest/gtest.h"
#include "samplers/duplicate_pad.h"
#include "samplers/global_batches.h"
#include "samplers/masked_tail.h"
#include "samplers/sampler_options.pb.h"

namespace receipt_parity {
namespace {

std::vector<std::string> Ids(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back("r" + std::to_string(i));
  return ids;
}

WorldSizeChange FortySevenFromTwoToThree(const SamplerPolicy& policy,
                                         const std::string& name) {
  WorldSizeChange change;
  change.policy = &policy;
  change.policy_name = name;
  change.receipt_ids = Ids(47);
  change.seed = 4;
  change.epoch = 1;
  change.updates_done = 3;  // 18 of 48 slots done
  change.old_local_batch = {3, 3};
  change.new_local_batch = {2, 2, 2};
  return change;
}

TEST(WorldSizeChangeTest, FortySevenIdsFromTwoToThreeRanksMaskedTail) {
  auto policy = MaskedTailFactory().Create(MaskedTailOptions());
  ASSERT_TRUE(policy.ok());
  auto report = CompareDataOrder(FortySevenFromTwoToThree(**policy, "masked_tail"));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->old_world_size(), 2);
  EXPECT_EQ(report->new_world_size(), 3);
  EXPECT_EQ(report->seen_before(), 18);
  ASSERT_EQ(report->old_remaining_size(), 2);
  ASSERT_EQ(report->new_remaining_size(), 3);
  // 30 slots remain either way; only who holds them changes.
  EXPECT_EQ(report->old_remaining(0).receipt_ids_size(), 15);
  EXPECT_EQ(report->new_remaining(0).receipt_ids_size(), 10);
  EXPECT_NE(report->old_remaining(0).receipt_ids(1), report->new_remaining(0).receipt_ids(1));
  // 47 and 48 both pad to 48 slots: one masked slot, nothing lost or doubled.
  EXPECT_EQ(report->old_masked_slots(), 1);
  EXPECT_EQ(report->new_masked_slots(), 1);
  EXPECT_EQ(report->skipped_ids_size(), 0);
  EXPECT_EQ(report->repeated_ids_size(), 0);
  EXPECT_NE(report->summary().find("2 -> 3 ranks"), std::string::npos);
}

TEST(WorldSizeChangeTest, DuplicatePadRepeatsTheHeadOfThePermutation) {
  auto policy = DuplicatePadFactory().Create(DuplicatePadOptions());
  ASSERT_TRUE(policy.ok());
  auto report = CompareDataOrder(FortySevenFromTwoToThree(**policy, "duplicate_pad"));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->new_masked_slots(), 0);
  EXPECT_EQ(report->new_duplicate_slots(), 1);
  EXPECT_EQ(report->repeated_ids_size(), 1);
}

TEST(WorldSizeChangeTest, PaddingThatChangesShowsSkippedOrRepeatedIds) {
  // 46 ids: no padding on 2 ranks, two pad slots on 3 ranks.
  auto policy = DuplicatePadFactory().Create(DuplicatePadOptions());
  WorldSizeChange change = FortySevenFromTwoToThree(**policy, "duplicate_pad");
  change.receipt_ids = Ids(46);
  auto report = CompareDataOrder(change);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->old_duplicate_slots(), 0);
  EXPECT_EQ(report->new_duplicate_slots(), 2);
  EXPECT_EQ(report->repeated_ids_size(), 2);
}

TEST(WorldSizeChangeTest, GlobalBatchesTrainsTheSameUpdatesAfterTheChange) {
  auto policy = GlobalBatchesFactory().Create(GlobalBatchesOptions());
  ASSERT_TRUE(policy.ok()) << policy.status();
  WorldSizeChange change = FortySevenFromTwoToThree(**policy, "global_batches");
  change.old_local_batch = {5, 1};  // uneven before, even after
  auto report = CompareDataOrder(change);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->same_updates());
  EXPECT_EQ(report->skipped_ids_size(), 0);
  EXPECT_EQ(report->repeated_ids_size(), 0);
  EXPECT_NE(report->summary().find("every update trains the receipts it would have"),
            std::string::npos);
  // duplicate_pad pads by the world size: 46 ids need no pad on 2 ranks
  // and two on 3, so the updates change.
  auto padded = DuplicatePadFactory().Create(DuplicatePadOptions());
  WorldSizeChange dependent = FortySevenFromTwoToThree(**padded, "duplicate_pad");
  dependent.receipt_ids = Ids(46);
  auto changed = CompareDataOrder(dependent);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(changed->same_updates());
  EXPECT_GT(changed->changed_updates(), 0);
  EXPECT_LE(changed->changed_updates(), changed->remaining_updates());
  EXPECT_NE(changed->summary().find("remaining update(s) train other receipts"),
            std::string::npos);
}

TEST(WorldSizeChangeTest, AnotherGlobalBatchIsRefused) {
  auto policy = MaskedTailFactory().Create(MaskedTailOptions());
  WorldSizeChange change = FortySevenFromTwoToThree(**policy, "masked_tail");
  change.new_local_batch = {3, 3, 3};
  EXPECT_EQ(CompareDataOrder(change).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace receipt_parity
