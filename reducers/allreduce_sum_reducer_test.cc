#include "reducers/allreduce_sum_reducer.h"

#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reducers/gradient_buckets.h"
#include "collectives/local_process_group.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// Three "parameters": 24, 20 and 64 bytes of float.
std::vector<at::Tensor> RankGradients(int rank) {
  const float scale = static_cast<float>(rank + 1);
  return {at::arange(6, at::kFloat).reshape({2, 3}) * scale,
          at::arange(5, at::kFloat) * scale + 100,
          at::arange(16, at::kFloat).reshape({4, 4}) * -scale};
}

// sum over ranks of RankGradients(r), computed without any collective.
std::vector<at::Tensor> ExpectedSum(int world) {
  std::vector<at::Tensor> sum = RankGradients(0);
  for (int r = 1; r < world; ++r) {
    std::vector<at::Tensor> g = RankGradients(r);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = sum[i] + g[i];
  }
  return sum;
}

AllreduceSumReducer MakeReducer(int64_t cap) {
  absl::StatusOr<AllreduceSumReducer> reducer =
      AllreduceSumReducer::Create(cap);
  EXPECT_TRUE(reducer.ok()) << reducer.status();
  return *reducer;
}

// Runs one Reduce per rank of a local Gloo group; returns each rank's
// reduced gradients and stats.
struct RankResult {
  std::vector<at::Tensor> grads;
  ReduceStats stats;
};

std::vector<RankResult> ReduceOnLocalGroup(
    int world, int64_t cap, std::function<std::vector<at::Tensor>(int)> make) {
  std::vector<RankResult> results(world);
  std::vector<AllreduceSumReducer> reducers(world, MakeReducer(cap));
  for (int r = 0; r < world; ++r) results[r].grads = make(r);
  absl::Status status = RunOnLocalGroup(
      world, [&](int rank, c10d::ProcessGroup& group) {
        absl::Status s = ReduceInBuckets(reducers[rank], results[rank].grads, group);
        results[rank].stats = reducers[rank].stats();
        return s;
      });
  EXPECT_TRUE(status.ok()) << status;
  return results;
}

TEST(AllreduceSumReducerTest, SumsOverTwoAndThreeRanks) {
  for (int world : {2, 3}) {
    const std::vector<at::Tensor> expected = ExpectedSum(world);
    for (const RankResult& result :
         ReduceOnLocalGroup(world, 0, RankGradients)) {
      ASSERT_EQ(result.grads.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(at::equal(result.grads[i], expected[i]))
            << "world " << world << " gradient " << i;
        EXPECT_EQ(result.grads[i].sizes(), expected[i].sizes());
      }
    }
  }
}

TEST(AllreduceSumReducerTest, OneCollectivePerBucket) {
  // cap -> expected buckets of the 24 + 20 + 64 bytes.
  const std::vector<std::pair<int64_t, int>> cases = {
      {1, 3}, {44, 2}, {64, 2}, {108, 1}, {0, 1}};
  const std::vector<at::Tensor> expected = ExpectedSum(3);
  for (const auto& [cap, buckets] : cases) {
    EXPECT_EQ(PlanBuckets(RankGradients(0), cap == 0 ? 1 << 20 : cap).size(),
              buckets);
    for (const RankResult& result : ReduceOnLocalGroup(3, cap, RankGradients)) {
      EXPECT_EQ(result.stats.collectives, buckets) << "cap " << cap;
      EXPECT_EQ(result.stats.bytes, 108) << "cap " << cap;
      // Real collectives over Gloo take measurable time.
      EXPECT_GT(result.stats.seconds, 0) << "cap " << cap;
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(at::equal(result.grads[i], expected[i])) << "cap " << cap;
      }
    }
  }
}

TEST(AllreduceSumReducerTest, BucketsSplitAtDtypeChanges) {
  std::vector<at::Tensor> grads = {at::zeros({2}, at::kFloat),
                                   at::zeros({2}, at::kDouble),
                                   at::zeros({2}, at::kDouble)};
  std::vector<GradientBucket> buckets = PlanBuckets(grads, 1 << 20);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].end, 1);
  EXPECT_EQ(buckets[1].begin, 1);
  EXPECT_EQ(buckets[1].end, 3);
  EXPECT_EQ(buckets[1].bytes, 32);
}

TEST(AllreduceSumReducerTest, RankWithZeroGradientsTakesPart) {
  auto make = [](int rank) {
    std::vector<at::Tensor> g = RankGradients(0);
    if (rank == 1) {
      for (at::Tensor& t : g) t.zero_();
    }
    return g;
  };
  const std::vector<at::Tensor> expected = RankGradients(0);
  for (const RankResult& result : ReduceOnLocalGroup(2, 0, make)) {
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(at::equal(result.grads[i], expected[i]));
    }
  }
}

TEST(AllreduceSumReducerTest, EmptyListRunsNoCollective) {
  for (const RankResult& result : ReduceOnLocalGroup(
           2, 0, [](int) { return std::vector<at::Tensor>{}; })) {
    EXPECT_EQ(result.stats.collectives, 0);
    EXPECT_EQ(result.stats.bytes, 0);
    EXPECT_EQ(result.stats.seconds, 0);
  }
}

TEST(AllreduceSumReducerTest, RejectsBadInput) {
  EXPECT_THAT(AllreduceSumReducer::Create(-1).status().message(),
              HasSubstr("bucket_cap_bytes"));
  AllreduceSumReducer reducer = MakeReducer(0);
  absl::Status status = RunOnLocalGroup(1, [&](int, c10d::ProcessGroup& group) {
    std::vector<at::Tensor> grads = {at::ones({2}), at::Tensor()};
    return ReduceInBuckets(reducer, grads, group);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("gradient 1 is undefined"));
}

TEST(AllreduceSumReducerTest, MissingPeerBecomesDeadlineExceeded) {
  AllreduceSumReducer reducer = MakeReducer(0);
  absl::Status status = RunOnLocalGroup(
      2,
      [&](int rank, c10d::ProcessGroup& group) -> absl::Status {
        if (rank == 1) return absl::OkStatus();  // never joins the collective
        std::vector<at::Tensor> grads = RankGradients(0);
        return ReduceInBuckets(reducer, grads, group);
      },
      absl::Milliseconds(500));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("allreduce_sum: bucket"));
}

}  // namespace
}  // namespace receipt_parity
