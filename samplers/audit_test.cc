#include "samplers/audit.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "samplers/drop_tail.h"
#include "samplers/duplicate_pad.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

constexpr uint64_t kSeed = 1234;

template <typename FactoryT>
std::unique_ptr<SamplerPolicy> Policy() {
  FactoryT factory;
  return std::move(*factory.Create(*factory.CreateEmptyOptions()));
}

SamplerAudit Audit(const SamplerPolicy& policy, const std::string& name,
                   int num_ids = 47, int world_size = 3,
                   std::vector<int> local_batch = {1, 1, 1}) {
  absl::StatusOr<SamplerAudit> audit =
      AuditSampler(policy, name, IndexReceiptIds(num_ids), world_size, kSeed,
                   /*epochs=*/2, local_batch);
  EXPECT_TRUE(audit.ok()) << audit.status();
  return audit.ok() ? *audit : SamplerAudit();
}

std::string SlotText(const SlotRef& ref) {
  return absl::StrCat(ref.rank(), ":", ref.slot());
}

TEST(AuditTest, DuplicatePadRepeatsExactlyOneIdPerEpoch) {
  SamplerAudit audit = Audit(*Policy<DuplicatePadFactory>(), "duplicate_pad");
  EXPECT_EQ(audit.num_ids(), 47);
  EXPECT_EQ(audit.policy(), "duplicate_pad");
  ASSERT_EQ(audit.epochs_size(), 2);
  for (const EpochAudit& epoch : audit.epochs()) {
    EXPECT_EQ(epoch.num_slots(), 48);
    EXPECT_EQ(epoch.valid_slots(), 48);
    ASSERT_EQ(epoch.duplicated_ids_size(), 1);
    const DuplicatedId& duplicate = epoch.duplicated_ids(0);
    // Position 47 repeats position 0: rank 0 slot 0 and rank 2 slot 15.
    EXPECT_EQ(duplicate.receipt_id(), epoch.ranks(0).receipt_ids(0));
    EXPECT_EQ(duplicate.count(), 2);
    std::vector<std::string> slots;
    for (const SlotRef& ref : duplicate.slots()) slots.push_back(SlotText(ref));
    EXPECT_THAT(slots, ElementsAre("0:0", "2:15"));
    EXPECT_THAT(epoch.masked_slots(), IsEmpty());
    EXPECT_EQ(epoch.unique_ids(), 47);
    EXPECT_THAT(epoch.never_seen(), IsEmpty());
    EXPECT_TRUE(epoch.ranks_agree());
  }
  EXPECT_THAT(AuditSummary(audit),
              HasSubstr("epoch 0: 48 slots for 47 ids: id " +
                        audit.epochs(0).ranks(0).receipt_ids(0) +
                        " twice (rank 0 slot 0, rank 2 slot 15)\n"));
}

TEST(AuditTest, CountsReceiptsAndTrainingViewsApart) {
  // 6 views of 3 receipts (two views each), as views_per_identity: 2 gives.
  const std::vector<std::string> views = {"a", "a", "b", "b", "c", "c"};
  absl::StatusOr<SamplerAudit> audit = AuditSampler(
      *Policy<MaskedTailFactory>(), "masked_tail", views, 2, kSeed, 1, {1, 1});
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_EQ(audit->num_ids(), 6);
  EXPECT_EQ(audit->num_training_views(), 6);
  EXPECT_EQ(audit->num_receipts(), 3);
  EXPECT_THAT(audit->id_meaning(), HasSubstr("training view"));
  // No view is dealt twice, though every receipt is seen twice.
  EXPECT_THAT(audit->epochs(0).duplicated_ids(), IsEmpty());
}

// With accumulation every slot says its micro-batch: 47 ids on 3 ranks of
// local batch 4 in 2 micro-batches (of 2 slots), the epoch's last update
// short; without, no micro-batch is recorded.
TEST(AuditTest, EverySlotSaysItsMicroBatch) {
  absl::StatusOr<SamplerAudit> audit =
      AuditSampler(*Policy<MaskedTailFactory>(), "masked_tail", IndexReceiptIds(47), 3, kSeed,
                   1, {4, 4, 4}, /*micro_batches=*/2);
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_EQ(audit->micro_batches(), 2);
  for (const RankAudit& rank : audit->epochs(0).ranks()) {
    ASSERT_EQ(rank.micro_batch_size(), rank.num_slots());
    for (int j = 0; j < rank.num_slots(); ++j) {
      EXPECT_EQ(rank.micro_batch(j), (j % 4) / 2) << "rank " << rank.rank() << " slot " << j;
    }
  }
  EXPECT_EQ(Audit(*Policy<MaskedTailFactory>(), "masked_tail").epochs(0).ranks(0)
                .micro_batch_size(),
            0);
  EXPECT_EQ(AuditSampler(*Policy<MaskedTailFactory>(), "masked_tail", IndexReceiptIds(47), 3,
                         kSeed, 1, {4, 4, 4}, /*micro_batches=*/3)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AuditTest, MaskedTailHas47ValidSlotsOneMaskedNoDuplicate) {
  SamplerAudit audit = Audit(*Policy<MaskedTailFactory>(), "masked_tail");
  for (const EpochAudit& epoch : audit.epochs()) {
    EXPECT_EQ(epoch.num_slots(), 48);
    EXPECT_EQ(epoch.valid_slots(), 47);
    ASSERT_EQ(epoch.masked_slots_size(), 1);
    EXPECT_EQ(SlotText(epoch.masked_slots(0)), "2:15");
    EXPECT_FALSE(epoch.ranks(2).valid(15));
    EXPECT_THAT(epoch.duplicated_ids(), IsEmpty());
    EXPECT_EQ(epoch.unique_ids(), 47);
    EXPECT_THAT(epoch.never_seen(), IsEmpty());
    // Same slot count on every rank.
    for (const RankAudit& rank : epoch.ranks()) EXPECT_EQ(rank.num_slots(), 16);
  }
  EXPECT_THAT(AuditSummary(audit),
              HasSubstr("epoch 1: 48 slots for 47 ids: 1 masked slot "
                        "(rank 2 slot 15), no id twice\n"));
}

TEST(AuditTest, DropTailUses45AndNamesTheTwoDropped) {
  SamplerAudit audit = Audit(*Policy<DropTailFactory>(), "drop_tail");
  for (const EpochAudit& epoch : audit.epochs()) {
    EXPECT_EQ(epoch.num_slots(), 45);
    EXPECT_EQ(epoch.unique_ids(), 45);
    ASSERT_EQ(epoch.dropped_ids_size(), 2);
    EXPECT_THAT(epoch.never_seen(),
                UnorderedElementsAreArray(epoch.dropped_ids()));
    std::set<std::string> seen;
    for (const RankAudit& rank : epoch.ranks()) {
      seen.insert(rank.receipt_ids().begin(), rank.receipt_ids().end());
    }
    for (const std::string& id : epoch.dropped_ids()) {
      EXPECT_EQ(seen.count(id), 0u) << id;
    }
  }
  const EpochAudit& epoch0 = audit.epochs(0);
  EXPECT_THAT(
      AuditSummary(audit),
      HasSubstr("epoch 0: 45 slots for 47 ids: ids " + epoch0.dropped_ids(0) +
                " and " + epoch0.dropped_ids(1) + " dropped\n"));
}

TEST(AuditTest, EpochsDifferAndRanksAgree) {
  SamplerAudit audit = Audit(*Policy<DuplicatePadFactory>(), "duplicate_pad");
  EXPECT_TRUE(audit.epoch_orders_differ());
  EXPECT_NE(std::vector<int32_t>(audit.epochs(0).ranks(0).indices().begin(),
                                 audit.epochs(0).ranks(0).indices().end()),
            std::vector<int32_t>(audit.epochs(1).ranks(0).indices().begin(),
                                 audit.epochs(1).ranks(0).indices().end()));
  for (const EpochAudit& epoch : audit.epochs()) {
    EXPECT_TRUE(epoch.ranks_agree());
    for (const RankAudit& rank : epoch.ranks()) {
      EXPECT_EQ(rank.plan_fingerprint(), epoch.ranks(0).plan_fingerprint());
    }
  }
  EXPECT_THAT(AuditSummary(audit),
              HasSubstr("ranks agree on every plan: yes; epoch orders "
                        "differ: yes"));
}

// Without shuffle every epoch has the same order: the check must see it.
TEST(AuditTest, UnshuffledEpochOrdersDoNotDiffer) {
  DuplicatePadFactory factory;
  DuplicatePadOptions options;
  options.set_disable_shuffle(true);
  std::unique_ptr<SamplerPolicy> policy = std::move(*factory.Create(options));
  EXPECT_FALSE(Audit(*policy, "duplicate_pad").epoch_orders_differ());
}

// A policy whose order changes from call to call, as a rank-dependent or
// unseeded policy would: the ranks must be seen to disagree.
class DriftingPolicy : public SamplerPolicy {
 public:
  absl::StatusOr<GlobalOrder> Order(
      const OrderRequest& request) const override {
    GlobalOrder order;
    for (int64_t i = 0; i < request.num_examples; ++i) {
      order.slots.push_back({(i + calls_) % request.num_examples, true});
    }
    ++calls_;
    return order;
  }

 private:
  mutable int64_t calls_ = 0;
};

TEST(AuditTest, RanksThatComputeDifferentPlansDoNotAgree) {
  DriftingPolicy policy;
  SamplerAudit audit = Audit(policy, "drifting", 6, 2, {1, 1});
  EXPECT_FALSE(audit.epochs(0).ranks_agree());
  EXPECT_NE(audit.epochs(0).ranks(0).plan_fingerprint(),
            audit.epochs(0).ranks(1).plan_fingerprint());
  EXPECT_THAT(AuditSummary(audit), HasSubstr("ranks agree on every plan: NO"));
}

TEST(AuditTest, UnevenLocalBatchesCountAcceptedSlotsPerUpdate) {
  SamplerAudit audit =
      Audit(*Policy<MaskedTailFactory>(), "masked_tail", 47, 2, {3, 1});
  const EpochAudit& epoch = audit.epochs(0);
  EXPECT_THAT(audit.local_batch_sizes(), ElementsAre(3, 1));
  // 48 slots (47 + 1 masked pad) in blocks of 4: 12 updates of 4, the last
  // with one masked slot, which the dealing gives to rank 0.
  EXPECT_EQ(epoch.num_updates(), 12);
  EXPECT_EQ(epoch.ranks(0).num_slots(), 36);
  EXPECT_EQ(epoch.ranks(1).num_slots(), 12);
  ASSERT_EQ(epoch.global_accepted_per_update_size(), 12);
  EXPECT_EQ(epoch.global_accepted_per_update(0), 4);
  EXPECT_EQ(epoch.global_accepted_per_update(11), 3);
  EXPECT_EQ(SlotText(epoch.masked_slots(0)), "0:35");
}

TEST(AuditTest, ReceiptIdsComeFromTheCaller) {
  std::unique_ptr<SamplerPolicy> policy = Policy<MaskedTailFactory>();
  absl::StatusOr<SamplerAudit> audit = AuditSampler(
      *policy, "masked_tail", {"r-a", "r-b", "r-c"}, 2, kSeed, 1, {1, 1});
  ASSERT_TRUE(audit.ok()) << audit.status();
  for (const RankAudit& rank : audit->epochs(0).ranks()) {
    for (int s = 0; s < rank.num_slots(); ++s) {
      EXPECT_EQ(rank.receipt_ids(s),
                std::string("r-") + char('a' + rank.indices(s)));
    }
  }
}

TEST(AuditTest, RejectsBadArguments) {
  std::unique_ptr<SamplerPolicy> policy = Policy<DropTailFactory>();
  auto audit = [&](int world_size, int epochs, std::vector<int> batch) {
    return AuditSampler(*policy, "drop_tail", IndexReceiptIds(5), world_size,
                        kSeed, epochs, batch)
        .status();
  };
  EXPECT_THAT(audit(0, 1, {}).message(), HasSubstr("world_size is 0"));
  EXPECT_THAT(audit(2, 0, {1, 1}).message(), HasSubstr("epochs is 0"));
  absl::Status mismatch = audit(2, 1, {1});
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.message(), HasSubstr("epoch 0: local batch sizes [1]"));
}

TEST(AuditTest, EmptyDatasetAuditsCleanly) {
  SamplerAudit audit =
      Audit(*Policy<DuplicatePadFactory>(), "duplicate_pad", 0, 3, {1, 1, 1});
  EXPECT_EQ(audit.epochs(0).num_slots(), 0);
  EXPECT_EQ(audit.epochs(0).num_updates(), 0);
  EXPECT_THAT(AuditSummary(audit),
              HasSubstr("epoch 0: 0 slots for 0 ids: every id once"));
}

}  // namespace
}  // namespace receipt_parity
