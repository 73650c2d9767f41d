// global_batches: the slots of every update are the same at world sizes
// 1, 2, 3 and 4, even or uneven, with micro-batches, and in the audit;
// DistributedSampler's order (masked_tail) is not.
#include "samplers/global_batches.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include "samplers/audit.h"
#include "samplers/distributed_order.h"
#include "samplers/permutation.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// Each update's slots over all ranks, sorted: (dataset index, valid).
using UpdateSlots = std::vector<std::vector<std::pair<int64_t, bool>>>;

UpdateSlots SlotsByUpdate(const SamplerPolicy& policy, int64_t n, int64_t epoch,
                          const std::vector<int>& local_batch) {
  OrderRequest request;
  request.num_examples = n;
  request.world_size = static_cast<int>(local_batch.size());
  request.seed = 3;
  request.epoch = epoch;
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(policy, request, local_batch);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  UpdateSlots out(plan->num_updates());
  for (int64_t u = 0; u < plan->num_updates(); ++u) {
    for (int r = 0; r < plan->world_size(); ++r) {
      for (const Slot& slot : plan->UpdateSlots(r, u)) {
        out[u].emplace_back(slot.dataset_index, slot.valid);
      }
    }
    std::sort(out[u].begin(), out[u].end());
  }
  return out;
}

// Local batches of 8 slots on 1, 2, 3 and 4 ranks, even and uneven.
const std::vector<std::vector<int>>& EightSlotDeals() {
  static const auto* deals = new std::vector<std::vector<int>>{
      {8}, {4, 4}, {5, 3}, {7, 1}, {3, 3, 2}, {2, 2, 2, 2}, {1, 3, 2, 2}};
  return *deals;
}

TEST(GlobalBatchesTest, EveryUpdateHoldsTheSameSlotsAtWorldSizes1To4) {
  const GlobalBatchesPolicy policy(/*shuffle=*/true);
  for (int64_t epoch : {0, 1}) {
    const UpdateSlots one_worker = SlotsByUpdate(policy, 47, epoch, {8});
    ASSERT_EQ(one_worker.size(), 6u);
    for (const std::vector<int>& deal : EightSlotDeals()) {
      SCOPED_TRACE(::testing::PrintToString(deal));
      EXPECT_EQ(SlotsByUpdate(policy, 47, epoch, deal), one_worker);
    }
  }
}

TEST(GlobalBatchesTest, UpdateUTrainsTheBlockUOfThePermutationAndTheTailIsMasked) {
  const GlobalBatchesPolicy policy(/*shuffle=*/true);
  absl::StatusOr<std::vector<int64_t>> permutation = EpochPermutation(47, 3, 1, true);
  ASSERT_TRUE(permutation.ok());
  const UpdateSlots updates = SlotsByUpdate(policy, 47, 1, {3, 3, 2});
  ASSERT_EQ(updates.size(), 6u);
  std::vector<int64_t> trained;
  for (size_t u = 0; u < updates.size(); ++u) {
    EXPECT_EQ(updates[u].size(), 8u) << "update " << u;
    std::vector<int64_t> valid;
    for (const auto& [index, is_valid] : updates[u]) {
      if (is_valid) valid.push_back(index);
    }
    std::vector<int64_t> block(permutation->begin() + 8 * u,
                               permutation->begin() + std::min<size_t>(8 * u + 8, 47));
    std::sort(block.begin(), block.end());
    EXPECT_EQ(valid, block) << "update " << u;
    trained.insert(trained.end(), valid.begin(), valid.end());
  }
  // The last update: 7 receipts and one masked slot; nothing dropped,
  // nothing trained twice.
  EXPECT_EQ(std::count_if(updates[5].begin(), updates[5].end(),
                          [](const auto& s) { return !s.second; }),
            1);
  std::sort(trained.begin(), trained.end());
  EXPECT_EQ(std::unique(trained.begin(), trained.end()), trained.end());
  EXPECT_EQ(trained.size(), 47u);
}

TEST(GlobalBatchesTest, DistributedSamplersLastUpdateDependsOnTheWorldSize) {
  // 45 receipts, 8 per update: DistributedSampler's order pads to a
  // multiple of the world size (46 slots on 2 ranks, 48 on 4), so its last
  // update differs; global_batches fills it to 8 at both.
  const DistributedSamplerPolicy masked_tail(true, TailHandling::kMaskedTail);
  const UpdateSlots two = SlotsByUpdate(masked_tail, 45, 0, {4, 4});
  const UpdateSlots four = SlotsByUpdate(masked_tail, 45, 0, {2, 2, 2, 2});
  ASSERT_EQ(two.size(), 6u);
  ASSERT_EQ(four.size(), 6u);
  EXPECT_EQ(two[5].size(), 6u);
  EXPECT_EQ(four[5].size(), 8u);
  const GlobalBatchesPolicy policy(true);
  EXPECT_EQ(SlotsByUpdate(policy, 45, 0, {4, 4}), SlotsByUpdate(policy, 45, 0, {2, 2, 2, 2}));
  EXPECT_EQ(SlotsByUpdate(policy, 45, 0, {4, 4})[5].size(), 8u);
  EXPECT_TRUE(policy.world_size_independent());
  EXPECT_FALSE(masked_tail.world_size_independent());
}

TEST(GlobalBatchesTest, FewerReceiptsThanOneUpdateGiveOneMaskedUpdate) {
  const GlobalBatchesPolicy policy(false);
  const UpdateSlots updates = SlotsByUpdate(policy, 3, 0, {4, 4});
  ASSERT_EQ(updates.size(), 1u);
  ASSERT_EQ(updates[0].size(), 8u);
  EXPECT_EQ(std::count_if(updates[0].begin(), updates[0].end(),
                          [](const auto& s) { return s.second; }),
            3);
  EXPECT_TRUE(SlotsByUpdate(policy, 0, 0, {4, 4}).empty());
}

TEST(GlobalBatchesTest, OrderWithoutAGlobalBatchIsRefused) {
  OrderRequest request;
  request.num_examples = 10;
  absl::StatusOr<GlobalOrder> order = GlobalBatchesPolicy(true).Order(request);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("global batch is 0; it must be >= 1"));
  request.global_batch = 4;
  request.epoch = -1;
  EXPECT_EQ(GlobalBatchesPolicy(true).Order(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  // The kind's contract (samplers/sampler_policy.h), although the order
  // does not depend on the world size.
  request.epoch = 0;
  request.world_size = 0;
  order = GlobalBatchesPolicy(true).Order(request);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("world size is 0"));
}

// The ids of every update as the audit writes them.
std::vector<std::vector<std::string>> AuditedUpdates(const SamplerAudit& audit) {
  std::vector<std::vector<std::string>> out;
  for (const EpochAudit& epoch : audit.epochs()) {
    for (const UpdateAudit& update : epoch.updates()) {
      out.emplace_back(update.receipt_ids().begin(), update.receipt_ids().end());
      out.back().push_back(absl::StrCat("masked=", update.masked_slots()));
    }
  }
  return out;
}

TEST(GlobalBatchesTest, TheAuditShowsTheSameUpdatesAtWorldSizes1To4WithMicroBatches) {
  const GlobalBatchesPolicy policy(true);
  const std::vector<std::string> ids = IndexReceiptIds(47);
  absl::StatusOr<SamplerAudit> reference =
      AuditSampler(policy, "global_batches", ids, 1, 3, 2, {8});
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_TRUE(reference->world_size_independent());
  ASSERT_EQ(AuditedUpdates(*reference).size(), 12u);
  struct Deal {
    std::vector<int> local;
    int micro_batches;
  };
  for (const Deal& deal : {Deal{{4, 4}, 1}, Deal{{4, 4}, 2}, Deal{{6, 2}, 2},
                           Deal{{3, 3, 2}, 1}, Deal{{2, 2, 2, 2}, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(deal.local));
    absl::StatusOr<SamplerAudit> audit =
        AuditSampler(policy, "global_batches", ids, static_cast<int>(deal.local.size()), 3, 2,
                     deal.local, deal.micro_batches);
    ASSERT_TRUE(audit.ok()) << audit.status();
    EXPECT_EQ(AuditedUpdates(*audit), AuditedUpdates(*reference));
    for (const EpochAudit& epoch : audit->epochs()) {
      EXPECT_TRUE(epoch.duplicated_ids().empty());
      EXPECT_TRUE(epoch.never_seen().empty());
      EXPECT_EQ(epoch.valid_slots(), 47);
    }
  }
  // masked_tail's audit of 45 ids at 2 and 4 ranks: its last update has 1
  // and 3 masked slots.
  const DistributedSamplerPolicy masked_tail(true, TailHandling::kMaskedTail);
  const std::vector<std::string> ids45 = IndexReceiptIds(45);
  absl::StatusOr<SamplerAudit> two = AuditSampler(masked_tail, "masked_tail", ids45, 2, 3, 1, {4, 4});
  absl::StatusOr<SamplerAudit> four =
      AuditSampler(masked_tail, "masked_tail", ids45, 4, 3, 1, {2, 2, 2, 2});
  ASSERT_TRUE(two.ok() && four.ok());
  EXPECT_FALSE(two->world_size_independent());
  EXPECT_NE(AuditedUpdates(*two), AuditedUpdates(*four));
}

}  // namespace
}  // namespace receipt_parity
