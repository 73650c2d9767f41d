#include "collectives/local_process_group.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

absl::Status AllreduceSum(at::Tensor& tensor, c10d::ProcessGroup& group) {
  std::vector<at::Tensor> tensors = {tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  group.allreduce(tensors, options)->wait();
  return absl::OkStatus();
}

TEST(LocalProcessGroupTest, RanksSeeTheirRankAndSizeAndCanAllreduce) {
  for (int world : {1, 2, 3}) {
    std::vector<at::Tensor> results(world);
    std::atomic<int> ranks_seen{0};
    absl::Status status = RunOnLocalGroup(
        world, [&](int rank, c10d::ProcessGroup& group) -> absl::Status {
          if (group.getRank() != rank || group.getSize() != world) {
            return absl::InternalError("wrong rank or size");
          }
          ++ranks_seen;
          results[rank] = at::full({4}, static_cast<float>(rank + 1));
          return AllreduceSum(results[rank], group);
        });
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(ranks_seen.load(), world);
    const float expected = world * (world + 1) / 2.0f;
    for (int r = 0; r < world; ++r) {
      EXPECT_TRUE(at::equal(results[r], at::full({4}, expected)))
          << "world " << world << " rank " << r;
    }
  }
}

TEST(LocalProcessGroupTest, EveryRankSeesTheOneSharedStore) {
  constexpr int kWorld = 3;
  std::vector<std::string> seen_by_last(kWorld);
  absl::Status status = RunOnLocalGroupWithStore(
      kWorld, [&](int rank, c10d::Store& store, c10d::ProcessGroup& group) {
        const std::string mine = absl::StrCat("from ", rank);
        store.set(absl::StrCat("test/", rank),
                  std::vector<uint8_t>(mine.begin(), mine.end()));
        if (rank != kWorld - 1) return absl::OkStatus();
        for (int r = 0; r < kWorld; ++r) {
          const std::vector<uint8_t> value = store.get(absl::StrCat("test/", r));
          seen_by_last[r] = std::string(value.begin(), value.end());
        }
        return group.getSize() == kWorld ? absl::OkStatus()
                                         : absl::InternalError("wrong size");
      });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen_by_last, ::testing::ElementsAre("from 0", "from 1", "from 2"));
}

TEST(LocalProcessGroupTest, ReturnsTheLowestFailingRanksStatus) {
  absl::Status status =
      RunOnLocalGroup(3, [](int rank, c10d::ProcessGroup&) -> absl::Status {
        if (rank == 0) return absl::OkStatus();
        return absl::FailedPreconditionError(absl::StrCat("bad ", rank));
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("rank 1 of 3: bad 1"));
  EXPECT_THAT(status.message(), HasSubstr("2 ranks failed"));
}

TEST(LocalProcessGroupTest, ExceptionsBecomeStatuses) {
  absl::Status status =
      RunOnLocalGroup(2, [](int rank, c10d::ProcessGroup&) -> absl::Status {
        if (rank == 1) throw std::runtime_error("boom");
        return absl::OkStatus();
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("rank 1 of 2: rank body: boom"));
}

TEST(LocalProcessGroupTest, RankSkippingACollectiveTimesOutInsteadOfHanging) {
  absl::Status status = RunOnLocalGroup(
      2,
      [](int rank, c10d::ProcessGroup& group) -> absl::Status {
        if (rank == 1) return absl::OkStatus();
        at::Tensor t = at::ones({2});
        return AllreduceSum(t, group);
      },
      absl::Milliseconds(500));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("rank 0 of 2"));
}

TEST(LocalProcessGroupTest, RejectsBadArguments) {
  auto body = [](int, c10d::ProcessGroup&) { return absl::OkStatus(); };
  EXPECT_EQ(RunOnLocalGroup(0, body).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunOnLocalGroup(2, body, absl::ZeroDuration()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace receipt_parity
