#include "artifacts/epoch_accounting.h"

#include "gtest/gtest.h"
#include "samplers/duplicate_pad.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {
namespace {

EpochPlan Plan(const SamplerPolicy& policy, int n, int world) {
  OrderRequest request;
  request.num_examples = n;
  request.world_size = world;
  request.seed = 3;
  return *BuildEpochPlan(policy, request, std::vector<int>(world, 4));
}

TEST(EpochAccountingTest, MaskedTailAcceptsEveryExampleExactlyOnce) {
  auto policy = MaskedTailFactory().Create(MaskedTailOptions());
  ASSERT_TRUE(policy.ok());
  EpochPlan plan = Plan(**policy, 47, 3);
  int64_t accepted = 0, masked = 0, duplicates = 0, slots = 0;
  for (const EpochRankRecord& r : AccountEpoch(plan, 0, plan.num_updates())) {
    accepted += r.accepted_examples();
    masked += r.masked_slots();
    duplicates += r.duplicate_slots();
    slots += r.slots();
  }
  EXPECT_EQ(slots, 48);
  EXPECT_EQ(accepted, 47);
  EXPECT_EQ(masked, 1);
  EXPECT_EQ(duplicates, 0);
}

TEST(EpochAccountingTest, DuplicatePadCountsTheRepeatedExample) {
  auto policy = DuplicatePadFactory().Create(DuplicatePadOptions());
  ASSERT_TRUE(policy.ok());
  EpochPlan plan = Plan(**policy, 47, 3);
  int64_t accepted = 0, duplicates = 0;
  for (const EpochRankRecord& r : AccountEpoch(plan, 0, plan.num_updates())) {
    accepted += r.accepted_examples();
    duplicates += r.duplicate_slots();
  }
  EXPECT_EQ(accepted, 48);
  EXPECT_EQ(duplicates, 1);
}

}  // namespace
}  // namespace receipt_parity
