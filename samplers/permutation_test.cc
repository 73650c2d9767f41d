#include "samplers/permutation.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int64_t> Permutation(int64_t n, uint64_t seed, int64_t epoch,
                                 bool shuffle = true) {
  absl::StatusOr<std::vector<int64_t>> order =
      EpochPermutation(n, seed, epoch, shuffle);
  EXPECT_TRUE(order.ok()) << order.status();
  return order.ok() ? *order : std::vector<int64_t>();
}

TEST(EpochPermutationTest, WithoutShuffleIsTheRange) {
  EXPECT_THAT(Permutation(5, 9, 3, /*shuffle=*/false),
              ElementsAre(0, 1, 2, 3, 4));
}

TEST(EpochPermutationTest, ShuffleIsADeterministicPermutation) {
  std::vector<int64_t> order = Permutation(47, 0, 0);
  std::vector<int64_t> range(47);
  std::iota(range.begin(), range.end(), 0);
  EXPECT_NE(order, range);
  EXPECT_EQ(Permutation(47, 0, 0), order);
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, range);
}

TEST(EpochPermutationTest, TheGeneratorIsSeededSeedPlusEpoch) {
  EXPECT_EQ(Permutation(47, 5, 2), Permutation(47, 7, 0));
  EXPECT_EQ(Permutation(47, 5, 2), Permutation(47, 4, 3));
  EXPECT_NE(Permutation(47, 5, 2), Permutation(47, 5, 3));
  EXPECT_NE(Permutation(47, 5, 2), Permutation(47, 6, 2));
}

TEST(EpochPermutationTest, EmptyDataset) {
  EXPECT_THAT(Permutation(0, 1, 0), IsEmpty());
  EXPECT_THAT(Permutation(0, 1, 0, /*shuffle=*/false), IsEmpty());
}

TEST(EpochPermutationTest, RejectsNegativeSizesAndEpochs) {
  absl::StatusOr<std::vector<int64_t>> order = EpochPermutation(-2, 0, 0, true);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("num_examples is -2"));
  order = EpochPermutation(3, 0, -1, true);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("epoch is -1"));
}

}  // namespace
}  // namespace receipt_parity
