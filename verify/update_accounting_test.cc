#include "verify/update_accounting.h"

#include <numeric>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/keyed_dropout.h"
#include "samplers/distributed_order.h"
#include "verify/eleven_receipts_test_support.h"
#include "weighting/global_count_weighting.h"
#include "weighting/rank_mean_weighting.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

using Data = ElevenReceipts;

OneWorkerInputs Inputs(const SamplerPolicy& policy, const LossWeighting& weighting,
                       const Data& data) {
  return data.OneWorker(policy, weighting);
}

EpochPlan Plan(const SamplerPolicy& policy, int world, std::vector<int> local_batch) {
  OrderRequest request;
  request.num_examples = 11;
  request.world_size = world;
  request.seed = 5;
  request.epoch = 1;
  return *BuildEpochPlan(policy, request, local_batch);
}

// Every rank's rows of `update`, as a rank's forward passes would give
// them, with `weighting` at the plan's world size.
std::vector<AccountingRow> RunRows(const EpochPlan& plan, int64_t update, int64_t total,
                                   const LossWeighting& weighting, const Data& data) {
  UpdateComposition composition;
  composition.class_counts = data.class_counts;
  for (int r = 0; r < plan.world_size(); ++r) {
    composition.by_rank.emplace_back();
    for (const Slot& slot : plan.UpdateSlots(r, update)) {
      composition.by_rank.back().push_back({data.labels[slot.dataset_index], slot.valid, 0});
    }
  }
  std::vector<AccountingRow> rows;
  for (int r = 0; r < plan.world_size(); ++r) {
    const std::vector<double> weights = weighting.Weights(composition, r);
    const std::vector<Slot> slots = plan.UpdateSlots(r, update).ToVector();
    const std::vector<int64_t> keys = *data.examples.SelectKeys(slots);
    const std::vector<int64_t> update_keys =
        KeysOf(UpdateKeys(at::tensor(keys, at::kLong), total), static_cast<int64_t>(keys.size()));
    for (size_t i = 0; i < slots.size(); ++i) {
      AccountingRow row;
      row.position = plan.BlockPosition(r, update, static_cast<int>(i));
      row.dataset_index = slots[i].dataset_index;
      row.valid = slots[i].valid;
      row.weight = weights[i];
      row.key = update_keys[i];
      rows.push_back(row);
    }
  }
  return rows;
}

TEST(UpdateAccountingTest, AMaskedTailOnTwoWorkersAccountsAsOneWorker) {
  const Data data;
  const DistributedSamplerPolicy masked(true, TailHandling::kMaskedTail);
  const GlobalCountWeighting global_count;
  OneWorkerAccounting one_worker(Inputs(masked, global_count, data));
  const EpochPlan plan = Plan(masked, 2, {2, 2});  // 12 slots, the last masked
  ASSERT_TRUE(one_worker.BeginEpoch(plan).ok());
  EXPECT_THAT(one_worker.order_note(), HasSubstr("1 masked pad slot(s)"));
  for (int64_t u = 0; u < plan.num_updates(); ++u) {
    absl::StatusOr<std::vector<AccountingRow>> expected = one_worker.Rows(u, 10 + u);
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_EQ(FoldAccounting(10 + u, RunRows(plan, u, 10 + u, global_count, data)),
              FoldAccounting(10 + u, *expected))
        << "update " << u;
  }
  // The last update: 3 receipts, each weighing 1/3 on one worker, and the
  // masked pad, which weighs nothing and does not count.
  const std::vector<AccountingRow> tail = *one_worker.Rows(2, 12);
  ASSERT_EQ(tail.size(), 4u);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(tail[p].weight, 1.0 / 3);
  EXPECT_FALSE(Counts(tail[3]));
}

TEST(UpdateAccountingTest, RankMeanDiffersOnlyWhereTheTailSplitsUnevenly) {
  const Data data;
  const DistributedSamplerPolicy masked(true, TailHandling::kMaskedTail);
  const RankMeanWeighting rank_mean;
  OneWorkerAccounting one_worker(Inputs(masked, rank_mean, data));
  const EpochPlan plan = Plan(masked, 2, {2, 2});
  ASSERT_TRUE(one_worker.BeginEpoch(plan).ok());
  // DDP's averaging: each rank's mean over the world size.
  const auto averaged = [&](int64_t u) {
    std::vector<AccountingRow> rows = RunRows(plan, u, u, rank_mean, data);
    for (AccountingRow& row : rows) row.weight /= 2;
    return FoldAccounting(u, rows);
  };
  EXPECT_EQ(averaged(0), FoldAccounting(0, *one_worker.Rows(0, 0)));
  EXPECT_EQ(averaged(1), FoldAccounting(1, *one_worker.Rows(1, 1)));
  // 2 + 1 accepted: 1/4 and 1/2 where one worker weighs 1/3.
  EXPECT_NE(averaged(2), FoldAccounting(2, *one_worker.Rows(2, 2)));
}

TEST(UpdateAccountingTest, AKeyThatDependsOnTheRankChangesTheFold) {
  const Data data;
  const DistributedSamplerPolicy masked(true, TailHandling::kMaskedTail);
  const GlobalCountWeighting global_count;
  OneWorkerAccounting one_worker(Inputs(masked, global_count, data));
  const EpochPlan plan = Plan(masked, 2, {2, 2});
  ASSERT_TRUE(one_worker.BeginEpoch(plan).ok());
  std::vector<AccountingRow> rows = RunRows(plan, 0, 0, global_count, data);
  rows[1].key ^= 1;
  EXPECT_NE(FoldAccounting(0, rows), FoldAccounting(0, *one_worker.Rows(0, 0)));
}

TEST(UpdateAccountingTest, ThePoliciesDeclaredPaddingAndDroppingAreAccepted) {
  const Data data;
  const GlobalCountWeighting global_count;
  const DistributedSamplerPolicy padded(true, TailHandling::kDuplicatePad);
  OneWorkerAccounting pad(Inputs(padded, global_count, data));
  const EpochPlan pad_plan = Plan(padded, 3, {1, 1, 1});  // 12 slots: one repeated
  ASSERT_TRUE(pad.BeginEpoch(pad_plan).ok());
  EXPECT_THAT(pad.order_note(), HasSubstr("1 repeated receipt(s)"));
  const int64_t last = pad_plan.num_updates() - 1;
  EXPECT_EQ(FoldAccounting(0, RunRows(pad_plan, last, 0, global_count, data)),
            FoldAccounting(0, *pad.Rows(last, 0)));

  const DistributedSamplerPolicy dropped(true, TailHandling::kDropTail);
  OneWorkerAccounting drop(Inputs(dropped, global_count, data));
  const EpochPlan drop_plan = Plan(dropped, 2, {2, 2});  // 10 slots: one dropped
  ASSERT_TRUE(drop.BeginEpoch(drop_plan).ok());
  EXPECT_THAT(drop.order_note(), HasSubstr("1 receipt(s) dropped"));
}

// A policy that repeats one receipt on more than one worker, which its
// coverage (exactly once) does not allow.
class RepeatsOnManyWorkers : public SamplerPolicy {
 public:
  absl::StatusOr<GlobalOrder> Order(const OrderRequest& request) const override {
    GlobalOrder order;
    for (int64_t i = 0; i < request.num_examples; ++i) order.slots.push_back({i, true});
    if (request.world_size > 1) order.slots[3].dataset_index = 2;
    return order;
  }
};

TEST(UpdateAccountingTest, AnOrderBeyondTheDeclarationIsComparedWithOneWorkersOwn) {
  const Data data;
  const GlobalCountWeighting global_count;
  const RepeatsOnManyWorkers policy;
  OneWorkerAccounting one_worker(Inputs(policy, global_count, data));
  const EpochPlan plan = Plan(policy, 2, {2, 2});
  ASSERT_TRUE(one_worker.BeginEpoch(plan).ok());
  EXPECT_THAT(one_worker.order_note(),
              HasSubstr("position 3 of the epoch's order holds dataset index 2 on 2 workers and "
                        "dataset index 3 on one"));
  EXPECT_EQ(FoldAccounting(1, RunRows(plan, 1, 1, global_count, data)),
            FoldAccounting(1, *one_worker.Rows(1, 1)));
  EXPECT_NE(FoldAccounting(0, RunRows(plan, 0, 0, global_count, data)),
            FoldAccounting(0, *one_worker.Rows(0, 0)));
}

TEST(UpdateAccountingTest, MaskedRowsThatWeighNothingDoNotCount) {
  AccountingRow pad;
  pad.valid = false;
  pad.weight = 0;
  EXPECT_FALSE(Counts(pad));
  EXPECT_EQ(FoldAccounting(3, {pad}), 0u);
  pad.weight = 0.25;  // a masked slot that weighs something does
  EXPECT_TRUE(Counts(pad));
  EXPECT_NE(FoldAccounting(3, {pad}), 0u);
}

TEST(UpdateAccountingTest, TheFoldIsTheSameInAnyOrderOfRowsButNotOfPositions) {
  AccountingRow a, b;
  a.position = 0;
  a.dataset_index = 4;
  a.weight = 0.5;
  b.position = 1;
  b.dataset_index = 9;
  b.weight = 0.5;
  const uint64_t fold = FoldAccounting(0, {a, b});
  EXPECT_EQ(fold, FoldAccounting(0, {b, a}));
  std::swap(a.position, b.position);  // the same receipts at each other's place
  EXPECT_NE(FoldAccounting(0, {a, b}), fold);
  AccountingRow c = a;
  c.micro_batch = 3;  // recorded, not compared
  EXPECT_EQ(AccountingRowHash(0, a), AccountingRowHash(0, c));
  EXPECT_NE(AccountingRowHash(0, a), AccountingRowHash(1, a));
}

}  // namespace
}  // namespace receipt_parity
