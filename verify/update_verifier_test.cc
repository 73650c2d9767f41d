#include "verify/update_verifier.h"

#include <functional>
#include <mutex>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "collectives/local_process_group.h"
#include "collectives/sum_across_ranks.h"
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

// 11 receipts on two ranks of 2 slots each, masked_tail: 3 updates, the
// last one 2 + 1 valid.
struct TwoRanks : ElevenReceipts {
  TwoRanks() {
    OrderRequest request;
    request.num_examples = kCount;
    request.world_size = 2;
    request.seed = kSeed;
    plan = *BuildEpochPlan(masked, request, {2, 2});
  }
  UpdateVerifierOptions Options(int rank, c10d::ProcessGroup* group,
                                const LossWeighting& weighting) const {
    UpdateVerifierOptions o;
    o.rank = rank;
    o.world_size = 2;
    o.group = group;
    o.one_worker = OneWorker(masked, weighting);
    o.receipt_ids = &ids;
    o.reduction_terms = 2;
    o.gradient_elements = 100;
    o.seed = 9;
    return o;
  }
  DistributedSamplerPolicy masked{true, TailHandling::kMaskedTail};
  EpochPlan plan;
};

// What a test changes on one rank before the exchange.
struct Mistakes {
  int rank = -1;
  bool corrupt_reduced = false;
  bool other_replica = false;
};

// Update `update` measured on `rank`, as a rank's step would: its slots,
// weights and keys, its contribution, the reduced gradient (the two
// contributions' sum over `divisor`).
absl::Status MeasureUpdate(UpdateVerifier& verifier, const TwoRanks& setup,
                           const LossWeighting& weighting, int rank, int64_t update,
                           const Mistakes& mistakes, int divisor = 1) {
  if (absl::Status s = verifier.BeginUpdate(setup.plan, update, update); !s.ok()) return s;
  UpdateComposition composition;
  composition.class_counts = setup.class_counts;
  for (int r = 0; r < 2; ++r) {
    composition.by_rank.emplace_back();
    for (const Slot& slot : setup.plan.UpdateSlots(r, update)) {
      composition.by_rank.back().push_back({setup.labels[slot.dataset_index], slot.valid, 0});
    }
  }
  const std::vector<Slot> slots = setup.plan.UpdateSlots(rank, update).ToVector();
  const std::vector<double> weights = weighting.Weights(composition, rank);
  const at::Tensor keys =
      UpdateKeys(at::tensor(*setup.examples.SelectKeys(slots), at::kLong), update);
  verifier.AddSlots(0, slots, weights, keys, 0);
  // Each rank's contribution, and their sum, the same bits on both.
  const at::Tensor c0 = at::arange(100, at::kFloat).sin();
  const at::Tensor c1 = at::arange(100, at::kFloat).cos() * 0.5;
  if (absl::Status s = verifier.AddContribution(rank == 0 ? c0 : c1, 0); !s.ok()) return s;
  at::Tensor reduced = (c0 + c1) / divisor;
  if (rank == mistakes.rank && mistakes.corrupt_reduced) reduced[17] = -reduced[17];
  return verifier.SetReduced({reduced});
}

std::vector<ReplicaTensor> Replica(int rank, const Mistakes& mistakes) {
  at::Tensor a = at::ones({3});
  at::Tensor b = at::ones({4});
  if (rank == mistakes.rank && mistakes.other_replica) b[2] = 1.0f + 1e-7f;
  return {{"a", a}, {"b", b}};
}

// Update `update` on two rank threads whose weights come from `weighting`
// at the plan's world size; each rank's verdict.
std::vector<UpdateVerdict> RunUpdate(const TwoRanks& setup, const LossWeighting& weighting,
                                     int64_t update, const Mistakes& mistakes = {}) {
  std::vector<UpdateVerdict> verdicts(2);
  const absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    UpdateVerifier verifier(setup.Options(rank, &group, weighting));
    if (absl::Status s = verifier.BeginEpoch(setup.plan); !s.ok()) return s;
    if (absl::Status s = MeasureUpdate(verifier, setup, weighting, rank, update, mistakes);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<UpdateVerdict> verdict = verifier.Exchange(Replica(rank, mistakes), true);
    if (!verdict.ok()) return verdict.status();
    verdicts[rank] = *verdict;
    return absl::OkStatus();
  });
  EXPECT_TRUE(status.ok()) << status;
  return verdicts;
}

// How the reduction that carries update 0's reports in its rider treats
// them.
enum class RiderReduction { kSum, kDeclaredMean, kScaled };

// Updates 0 and 1 on two ranks, update 0's reports riding in update 1's
// reduction (a rider all-reduced as a bucket's values would be, then
// divided or scaled); each rank's verdicts of both.
std::vector<std::vector<UpdateVerdict>> RunTwoUpdatesWithARider(RiderReduction reduction) {
  const TwoRanks setup;
  // A mean over the ranks is the right rule with each rank's own mean
  // (every update here splits 2 + 2).
  const GlobalCountWeighting global_count;
  const RankMeanWeighting rank_mean;
  const int divisor = reduction == RiderReduction::kDeclaredMean ? 2 : 1;
  const LossWeighting& weighting =
      divisor > 1 ? static_cast<const LossWeighting&>(rank_mean) : global_count;
  std::vector<std::vector<UpdateVerdict>> verdicts(2);
  const absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    UpdateVerifierOptions options = setup.Options(rank, &group, weighting);
    options.reduced_divisor = divisor;
    UpdateVerifier verifier(options);
    if (absl::Status s = verifier.BeginEpoch(setup.plan); !s.ok()) return s;
    if (absl::Status s = MeasureUpdate(verifier, setup, weighting, rank, 0, {}, divisor);
        !s.ok()) {
      return s;
    }
    at::Tensor rider = at::zeros({verifier.RiderElements(at::kFloat)});
    if (rider.numel() != 2 * 17 * 4) return absl::InternalError("rider size");
    if (absl::Status s = verifier.Launch(Replica(rank, {}), true, rider); !s.ok()) return s;
    if (absl::Status s = MeasureUpdate(verifier, setup, weighting, rank, 1, {}, divisor);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = SumAcrossRanks(group, rider, "the rider"); !s.ok()) return s;
    if (reduction == RiderReduction::kDeclaredMean) rider.div_(2);
    if (reduction == RiderReduction::kScaled) rider.mul_(1.01);
    absl::StatusOr<std::optional<UpdateVerdict>> first = verifier.Settle(/*rider_reduced=*/true);
    if (!first.ok()) return first.status();
    if (absl::Status s = verifier.Launch(Replica(rank, {}), true); !s.ok()) return s;
    absl::StatusOr<std::optional<UpdateVerdict>> second = verifier.Settle();
    if (!second.ok()) return second.status();
    verdicts[rank] = {**first, **second};
    return absl::OkStatus();
  });
  EXPECT_TRUE(status.ok()) << status;
  return verdicts;
}

TEST(UpdateVerifierTest, TwoRanksThatDoWhatOneWorkerDoesAreVerified) {
  const TwoRanks setup;
  const GlobalCountWeighting global_count;
  for (int64_t u = 0; u < 3; ++u) {
    for (const UpdateVerdict& v : RunUpdate(setup, global_count, u)) {
      EXPECT_TRUE(v.verified) << "update " << u << ": " << v.failure->what();
    }
  }
}

TEST(UpdateVerifierTest, RankMeanFailsTheTailUpdateNamingTheRowAndItsWeight) {
  const TwoRanks setup;
  const RankMeanWeighting rank_mean;
  // Rank 0's two receipts weigh 1/2 each, rank 1's one 1: no divisor, so
  // already update 0 (1/2 against 1/4) fails; with DDP's averaging (the
  // divisor 2 of rank_average) only the tail would.
  const std::vector<UpdateVerdict> verdicts = RunUpdate(setup, rank_mean, 2);
  for (const UpdateVerdict& v : verdicts) {
    ASSERT_FALSE(v.verified);
    EXPECT_EQ(v.failure->check(), "accounting");
    EXPECT_EQ(v.failure->update(), 2);
    EXPECT_EQ(v.failure->rank(), 0);
    EXPECT_THAT(v.failure->what(), HasSubstr("weighs 0.5 where one worker's weighs "
                                             "0.33333333333333331"));
    EXPECT_THAT(v.failure->what(), HasSubstr("its slot at position 0 of the update (receipt r-"));
  }
}

// A mistake on rank 1, seen by every rank: a flipped reduced element fails
// the reduction there; a replica that differs names its first tensor.
TEST(UpdateVerifierTest, AMistakeOnOneRankFailsItsCheckOnEveryRankNamingIt) {
  const TwoRanks setup;
  const GlobalCountWeighting global_count;
  struct Case {
    Mistakes mistakes;
    int64_t update;
    const char* check;
    std::vector<std::string> said;
  };
  std::vector<Case> cases(2);
  cases[0].mistakes.corrupt_reduced = true;
  cases[0].update = 0;
  cases[0].check = "reduction";
  cases[0].said = {"is beyond the bound"};
  cases[1].mistakes.other_replica = true;
  cases[1].update = 1;
  cases[1].check = "replicas";
  cases[1].said = {"rank 1's parameters after update 1 differ from rank 0's", "first in b"};
  for (Case& c : cases) {
    c.mistakes.rank = 1;
    for (const UpdateVerdict& v : RunUpdate(setup, global_count, c.update, c.mistakes)) {
      ASSERT_FALSE(v.verified) << c.check;
      EXPECT_EQ(v.failure->check(), c.check);
      EXPECT_EQ(v.failure->rank(), 1);
      for (const std::string& said : c.said) EXPECT_THAT(v.failure->what(), HasSubstr(said));
    }
  }
}

TEST(UpdateVerifierTest, ReportsRideInAReducedBucketSummedOrDividedAsDeclared) {
  for (RiderReduction reduction : {RiderReduction::kSum, RiderReduction::kDeclaredMean}) {
    for (const std::vector<UpdateVerdict>& rank : RunTwoUpdatesWithARider(reduction)) {
      ASSERT_EQ(rank.size(), 2u);
      EXPECT_EQ(rank[0].update, 0);
      EXPECT_EQ(rank[1].update, 1);
      for (const UpdateVerdict& v : rank) EXPECT_TRUE(v.verified) << v.failure->what();
    }
  }
}

// A reduction that returns the rider scaled (as it would the gradients):
// the update it carried is judged by its reports gathered on their own,
// and the update whose reduction carried them fails its reduction check.
TEST(UpdateVerifierTest, ARiderComingBackAlteredFailsTheUpdateThatCarriedIt) {
  for (const std::vector<UpdateVerdict>& rank :
       RunTwoUpdatesWithARider(RiderReduction::kScaled)) {
    ASSERT_EQ(rank.size(), 2u);
    EXPECT_TRUE(rank[0].verified) << rank[0].failure->what();
    ASSERT_FALSE(rank[1].verified);
    EXPECT_EQ(rank[1].failure->update(), 1);
    EXPECT_EQ(rank[1].failure->check(), "reduction");
    EXPECT_THAT(rank[1].failure->what(),
                HasSubstr("the last gradient bucket of update 1 came back otherwise than the "
                          "ranks' values summed"));
  }
}

TEST(UpdateVerifierTest, TheRecordCountsAndRestoresAcrossAttempts) {
  const TwoRanks setup;
  const GlobalCountWeighting global_count;
  UpdateVerifier verifier(setup.Options(0, nullptr, global_count));
  EveryUpdateVerdict earlier;
  earlier.set_updates(10);
  earlier.set_verified(9);
  earlier.add_failed_updates(7);
  earlier.set_failed_updates_total(1);
  earlier.mutable_first_failure()->set_update(7);
  verifier.Restore(earlier, 5);  // the attempt resumes before the failure
  EXPECT_EQ(verifier.record().updates(), 5);
  EXPECT_EQ(verifier.record().verified(), 5);
  EXPECT_FALSE(verifier.record().has_first_failure());
  EXPECT_TRUE(verifier.record().pass());
  verifier.Restore(earlier, 8);
  EXPECT_EQ(verifier.record().verified(), 7);
  EXPECT_EQ(verifier.record().first_failure().update(), 7);
  EXPECT_FALSE(verifier.record().pass());
  EveryUpdateVerdict older;  // an attempt that recorded nothing
  verifier.Restore(older, 4);
  EXPECT_EQ(verifier.record().updates(), 4);
  EXPECT_EQ(verifier.record().verified(), 0);
  EXPECT_THAT(verifier.record().not_verified(), HasSubstr("updates 0 to 3"));
  EXPECT_FALSE(verifier.record().pass());
}

// Issue 50: the survivors of a lost rank take up their record; the update
// whose reports rode the abandoned reduction is said as lost, not passed
// as verified, and a later resume before it redoes it.
TEST(UpdateVerifierTest, AnUpdateWhoseReportsWereLostWithARankIsSaidNotVerified) {
  const TwoRanks setup;
  const GlobalCountWeighting global_count;
  UpdateVerifier verifier(setup.Options(0, nullptr, global_count));
  EveryUpdateVerdict survivors;
  survivors.set_updates(12);  // 0..11 settled; 12 stepped, its reports in flight
  survivors.set_verified(12);
  verifier.RestoreAfterLoss(survivors, 13, "lost with rank 2");
  EXPECT_EQ(verifier.record().updates(), 13);
  EXPECT_EQ(verifier.record().verified(), 12);
  ASSERT_EQ(verifier.record().lost_with_rank_size(), 1);
  EXPECT_EQ(verifier.record().lost_with_rank(0), 12);
  EXPECT_EQ(verifier.record().lost_with_rank_why(0), "lost with rank 2");
  EXPECT_TRUE(verifier.record().not_verified().empty());
  EXPECT_TRUE(verifier.record().pass());
  // Nothing in flight (the loss came at a save, after the settlement).
  UpdateVerifier settled(setup.Options(0, nullptr, global_count));
  survivors.set_updates(13);
  survivors.set_verified(13);
  settled.RestoreAfterLoss(survivors, 13, "x");
  EXPECT_EQ(settled.record().lost_with_rank_size(), 0);
  EXPECT_TRUE(settled.record().pass());
  // A later attempt resumed from update 10 redoes update 12: no longer lost.
  const EveryUpdateVerdict with_loss = verifier.record();
  verifier.Restore(with_loss, 10);
  EXPECT_EQ(verifier.record().lost_with_rank_size(), 0);
  EXPECT_EQ(verifier.record().verified(), 10);
  EXPECT_TRUE(verifier.record().pass());
  // A failed update still fails the record, a lost one beside it or not.
  EveryUpdateVerdict failed = with_loss;
  failed.set_verified(11);
  failed.add_failed_updates(3);
  failed.set_failed_updates_total(1);
  verifier.Restore(failed, 13);
  EXPECT_FALSE(verifier.record().pass());
}

}  // namespace
}  // namespace receipt_parity
