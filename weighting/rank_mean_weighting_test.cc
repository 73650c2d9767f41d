#include "weighting/rank_mean_weighting.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

std::vector<WeightedSlot> Valid(int n) {
  return std::vector<WeightedSlot>(n, WeightedSlot{0, true});
}

TEST(RankMeanWeightingTest, EachRankWeighsByItsOwnCount) {
  RankMeanWeighting weighting;
  UpdateComposition update{{Valid(3), Valid(1)}, {}};
  const double third = 1.0 / 3.0;
  EXPECT_THAT(weighting.Weights(update, 0),
              ElementsAre(DoubleEq(third), DoubleEq(third), DoubleEq(third)));
  // The lone example of rank 1 weighs as much as rank 0's three together:
  // the error plain DDP averaging makes with unequal local batches.
  EXPECT_THAT(weighting.Weights(update, 1), ElementsAre(DoubleEq(1.0)));
}

TEST(RankMeanWeightingTest, MaskedSlotsWeighZeroAndDoNotCount) {
  RankMeanWeighting weighting;
  UpdateComposition update{{{{0, true}, {0, false}, {1, true}}}, {}};
  EXPECT_THAT(weighting.Weights(update, 0),
              ElementsAre(DoubleEq(0.5), DoubleEq(0), DoubleEq(0.5)));
}

TEST(RankMeanWeightingTest, RankWithoutValidSlotsGetsZeros) {
  RankMeanWeighting weighting;
  UpdateComposition update{{Valid(4), {{0, false}, {1, false}}, {}}, {}};
  EXPECT_THAT(weighting.Weights(update, 1), ElementsAre(0.0, 0.0));
  EXPECT_TRUE(weighting.Weights(update, 2).empty());
}

}  // namespace
}  // namespace receipt_parity
