#include "collectives/sum_across_ranks.h"

#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/time/time.h"
#include "collectives/local_process_group.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

TEST(SumAcrossRanksTest, EveryRankHoldsTheSumInDouble) {
  std::vector<at::Tensor> held(3);
  absl::Status status = RunOnLocalGroup(3, [&](int rank, c10d::ProcessGroup& group) {
    held[rank] = at::tensor({0.1 * (rank + 1), 1.0}, at::kDouble);
    return RankSumOver(&group, "the loss")(held[rank]);
  });
  ASSERT_TRUE(status.ok()) << status;
  for (const at::Tensor& t : held) {
    EXPECT_DOUBLE_EQ(t[0].item<double>(), 0.1 + 0.2 + 0.30000000000000004);
    EXPECT_EQ(t[1].item<double>(), 3.0);
    EXPECT_TRUE(t.equal(held[0]));  // the same bits on every rank
  }
}

TEST(SumAcrossRanksTest, AStartedSumHoldsTheSumOnceWaitedFor) {
  std::vector<at::Tensor> held(2);
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    held[rank] = at::full({3}, rank + 1.0, at::kDouble);
    absl::StatusOr<RankSumInFlight> sum = StartSumAcrossRanks(group, held[rank], "a report");
    if (!sum.ok()) return sum.status();
    if (absl::Status s = sum->Wait(); !s.ok()) return s;
    return sum->Wait();  // a second wait does nothing
  });
  ASSERT_TRUE(status.ok()) << status;
  for (const at::Tensor& t : held) EXPECT_TRUE(t.equal(at::full({3}, 3.0, at::kDouble)));
}

TEST(SumAcrossRanksTest, AStartedSumWhosePeerNeverComesFailsNamingWhat) {
  absl::Status status = RunOnLocalGroup(
      2,
      [&](int rank, c10d::ProcessGroup& group) -> absl::Status {
        if (rank == 1) return absl::OkStatus();
        at::Tensor t = at::ones({1}, at::kDouble);
        absl::StatusOr<RankSumInFlight> sum = StartSumAcrossRanks(group, t, "the checks");
        if (!sum.ok()) return sum.status();
        return sum->Wait();
      },
      absl::Seconds(2));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("the checks"));
}

TEST(SumAcrossRanksTest, WithoutAGroupNothingChanges) {
  at::Tensor t = at::tensor({2.5}, at::kDouble);
  ASSERT_TRUE(RankSumOver(nullptr, "x")(t).ok());
  EXPECT_EQ(t.item<double>(), 2.5);
}

TEST(SumAcrossRanksTest, APeerThatNeverComesIsATimeoutNamingWhat) {
  absl::Status status = RunOnLocalGroup(
      2,
      [&](int rank, c10d::ProcessGroup& group) -> absl::Status {
        if (rank == 1) return absl::OkStatus();
        at::Tensor t = at::ones({1}, at::kDouble);
        return SumAcrossRanks(group, t, "the batch norm's statistics");
      },
      absl::Seconds(2));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("the batch norm's statistics"));
}

}  // namespace
}  // namespace receipt_parity
