#include "reducers/rank_average_reducer.h"

#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reducers/gradient_buckets.h"
#include "collectives/local_process_group.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

std::vector<at::Tensor> RankGradients(int rank) {
  return {at::arange(6, at::kFloat).reshape({3, 2}) * (rank + 1),
          at::full({4}, 3.0f * rank)};
}

TEST(RankAverageReducerTest, DividesTheSumByTheWorldSize) {
  for (int world : {2, 3}) {
    std::vector<at::Tensor> expected = RankGradients(0);
    for (int r = 1; r < world; ++r) {
      for (size_t i = 0; i < expected.size(); ++i) {
        expected[i] = expected[i] + RankGradients(r)[i];
      }
    }
    for (at::Tensor& t : expected) t = t / world;

    std::vector<std::vector<at::Tensor>> grads(world);
    std::vector<RankAverageReducer> reducers;
    for (int r = 0; r < world; ++r) {
      grads[r] = RankGradients(r);
      absl::StatusOr<RankAverageReducer> reducer =
          RankAverageReducer::Create(/*bucket_cap_bytes=*/1);
      ASSERT_TRUE(reducer.ok()) << reducer.status();
      reducers.push_back(*std::move(reducer));
    }
    absl::Status status =
        RunOnLocalGroup(world, [&](int rank, c10d::ProcessGroup& group) {
          return ReduceInBuckets(reducers[rank], grads[rank], group);
        });
    ASSERT_TRUE(status.ok()) << status;
    for (int r = 0; r < world; ++r) {
      // Cap 1 byte: one collective per gradient.
      EXPECT_EQ(reducers[r].stats().collectives, 2);
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(at::allclose(grads[r][i], expected[i], 1e-6, 1e-7))
            << "world " << world << " rank " << r << " gradient " << i;
      }
    }
  }
}

TEST(RankAverageReducerTest, RankWithZeroGradientsHalvesTheOther) {
  std::vector<std::vector<at::Tensor>> grads = {RankGradients(2),
                                                RankGradients(2)};
  for (at::Tensor& t : grads[1]) t.zero_();
  std::vector<RankAverageReducer> reducers;
  for (int r = 0; r < 2; ++r) {
    reducers.push_back(*RankAverageReducer::Create(0));
  }
  ASSERT_TRUE(RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
                return ReduceInBuckets(reducers[rank], grads[rank], group);
              }).ok());
  const std::vector<at::Tensor> original = RankGradients(2);
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < original.size(); ++i) {
      EXPECT_TRUE(at::equal(grads[r][i], original[i] / 2));
    }
  }
}

TEST(RankAverageReducerTest, RejectsNegativeBucketCap) {
  EXPECT_THAT(RankAverageReducer::Create(-5).status().message(),
              HasSubstr("bucket_cap_bytes"));
}

}  // namespace
}  // namespace receipt_parity
